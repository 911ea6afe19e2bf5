package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// argoCDApplication is the part of an Argo CD Application's spec docs/install.md shows.
type argoCDApplication struct {
	IgnoreDifferences []struct {
		Group             string   `json:"group"`
		Kind              string   `json:"kind"`
		JQPathExpressions []string `json:"jqPathExpressions"`
	} `json:"ignoreDifferences"`
	SyncPolicy struct {
		SyncOptions []string `json:"syncOptions"`
	} `json:"syncPolicy"`
}

// TestArgoCDIgnoresTheInjectedCABundles holds the ignoreDifferences of docs/install.md to the
// chart's objects, in both certificate modes, as Argo CD applies them: each jqPathExpression as
// del(expression), with gojq, to the desired object and the live one. Every object the CA injector
// gives a caBundle must then diff as equal to what the chart renders, and nothing else of any
// object be ignored.
func TestArgoCDIgnoresTheInjectedCABundles(t *testing.T) {
	var app argoCDApplication
	if err := yaml.UnmarshalStrict(installPageBlock(t, "ignoreDifferences:"), &app); err != nil {
		t.Fatalf("the ignoreDifferences of docs/install.md: %v", err)
	}
	// Without it, a sync applies the chart's objects as rendered, and may take the caBundle away.
	if !slices.Contains(app.SyncPolicy.SyncOptions, "RespectIgnoreDifferences=true") {
		t.Errorf("docs/install.md's syncOptions %v lack RespectIgnoreDifferences=true", app.SyncPolicy.SyncOptions)
	}
	ignored := map[string][]*gojq.Code{}
	for _, entry := range app.IgnoreDifferences {
		for _, expression := range entry.JQPathExpressions {
			query, err := gojq.Parse("del(" + expression + ")")
			if err != nil {
				t.Fatalf("%s: %v", expression, err)
			}
			code, err := gojq.Compile(query)
			if err != nil {
				t.Fatalf("%s: %v", expression, err)
			}
			ignored[entry.Group+"/"+entry.Kind] = append(ignored[entry.Group+"/"+entry.Kind], code)
		}
	}
	normalize := func(t *testing.T, o *unstructured.Unstructured) map[string]any {
		t.Helper()
		v := any(o.DeepCopy().Object)
		for _, code := range ignored[o.GroupVersionKind().Group+"/"+o.GetKind()] {
			out, ok := code.Run(v).Next()
			if !ok {
				t.Fatalf("%s %s: a path expression yields nothing", o.GetKind(), o.GetName())
			}
			if err, isErr := out.(error); isErr {
				t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
			}
			v = out
		}
		return v.(map[string]any)
	}

	for _, mode := range []string{"cert-manager", "self-signed"} {
		t.Run(mode, func(t *testing.T) {
			injected := 0
			for _, o := range helmTemplate(t, fixtures.Namespace, "certificates.mode="+mode) {
				desired := o.Unstructured
				if got := normalize(t, desired); !equality.Semantic.DeepEqual(got, desired.Object) {
					t.Errorf("%s: the ignoreDifferences hide more than a caBundle of what the chart renders", o.key())
				}
				live, n := withCABundles(desired)
				if n == 0 {
					continue
				}
				injected += n
				if !equality.Semantic.DeepEqual(normalize(t, live), normalize(t, desired)) {
					t.Errorf("%s: with its %d caBundle(s) injected, Argo CD would show it OutOfSync", o.key(), n)
				}
			}
			// Two webhook configurations' entries and the Welcome CRD's conversion webhook.
			if injected < 3 {
				t.Errorf("%d caBundles injected into what the chart renders; want the webhook entries' and the Welcome CRD's", injected)
			}
		})
	}
}

// withCABundles is o as the CA injector leaves it: a caBundle in the clientConfig of every entry of
// a webhook configuration and of a CRD's conversion webhook; and how many it was given.
func withCABundles(o *unstructured.Unstructured) (*unstructured.Unstructured, int) {
	live, n := o.DeepCopy(), 0
	inject := func(clientConfig any) {
		if c, ok := clientConfig.(map[string]any); ok {
			c["caBundle"] = "LS0tLS1CRUdJTi4uLg=="
			n++
		}
	}
	switch o.GetKind() {
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		entries, _, _ := unstructured.NestedSlice(live.Object, "webhooks")
		for _, entry := range entries {
			inject(entry.(map[string]any)["clientConfig"])
		}
		_ = unstructured.SetNestedSlice(live.Object, entries, "webhooks")
	case "CustomResourceDefinition":
		clientConfig, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "conversion", "webhook", "clientConfig")
		inject(clientConfig)
	}
	return live, n
}

// installPageBlock is the ```yaml block of docs/install.md that holds marker.
func installPageBlock(t *testing.T, marker string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block *bytes.Buffer
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case block == nil && line == "```yaml":
			block = &bytes.Buffer{}
		case block != nil && strings.HasPrefix(line, "```"):
			if strings.Contains(block.String(), marker) {
				return block.Bytes()
			}
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	t.Fatalf("docs/install.md has no yaml block with %q", marker)
	return nil
}
