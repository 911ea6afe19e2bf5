package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestDowngradeThatDropsWebhookEntries: the configurations of an earlier release lack webhook
// entries of this one (v0.1.0 lacks mwelcome-v1 and vwelcome-v1), applied server-side, as
// `kubectl apply --server-side` of an install.yaml or Helm 4 applies them. In cert-manager mode,
// the CA injector server-side applies each entry's caBundle and so owns the entry too: a
// server-side apply of the earlier configurations removes only the fields the applier owns, each
// such entry would keep a caBundle and nothing else, and the API server refuses the configuration;
// the procedure docs/upgrade.md gives (delete the entries by name, then apply again) goes through.
// In self-signed mode, the manager's update of the caBundle owns no entry, and the apply goes
// through. Every entry keeps its caBundle. Against kube-apiserver, with kubectl.
func TestDowngradeThatDropsWebhookEntries(t *testing.T) {
	kubeconfigPath, c := startAPIServer(t)
	kubectl := func(stdin []byte, args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"),
			append([]string{"--kubeconfig", kubeconfigPath}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	manifests, err := os.ReadFile(filepath.Join(moduleRoot(t), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mutating, validating := webhookConfigurations(t, manifests)
	names := configurationNames{mutating: mutating.Name, validating: validating.Name}
	caBundle := []byte("-----BEGIN CERTIFICATE-----\nthe injected CA\n-----END CERTIFICATE-----\n")

	// The earlier release's: without the v1 entries.
	earlierMutating, earlierValidating := mutating.DeepCopy(), validating.DeepCopy()
	var dropped []string
	earlierMutating.Webhooks = slices.DeleteFunc(earlierMutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return strings.Contains(w.Name, "-v1.") && appendName(&dropped, "mutatingwebhookconfiguration/"+mutating.Name, w.Name)
	})
	earlierValidating.Webhooks = slices.DeleteFunc(earlierValidating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return strings.Contains(w.Name, "-v1.") && appendName(&dropped, "validatingwebhookconfiguration/"+validating.Name, w.Name)
	})
	if len(dropped) != 2 {
		t.Fatalf("this release adds 2 webhook entries v0.1.0 lacks; found %q", dropped)
	}
	earlier := marshalDocuments(t, earlierMutating, earlierValidating)
	var want []string
	for _, w := range earlierMutating.Webhooks {
		want = append(want, w.Name)
	}
	for _, w := range earlierValidating.Webhooks {
		want = append(want, w.Name)
	}
	slices.Sort(want)

	for _, mode := range []string{"cert-manager", "self-signed"} {
		t.Run(mode, func(t *testing.T) {
			// This release's configurations, applied as make deploy applies them; then the CA.
			if out, err := kubectl(nil, "delete", "--ignore-not-found", "mutatingwebhookconfiguration/"+mutating.Name,
				"validatingwebhookconfiguration/"+validating.Name); err != nil {
				t.Fatalf("deleting the configurations: %v\n%s", err, out)
			}
			if out, err := kubectl(manifests, "apply", "--server-side", "-f", "-"); err != nil {
				t.Fatalf("applying this release's configurations: %v\n%s", err, out)
			}
			if mode == "cert-manager" {
				inject(t, c, mutating, validating, caBundle)
			} else { // the manager's cert-controller: an update
				edit(t, c, names, func(_ string, cc *admissionregistrationv1.WebhookClientConfig) bool {
					cc.CABundle = caBundle
					return true
				})
			}

			out, err := kubectl(earlier, "apply", "--server-side", "-f", "-")
			if mode == "cert-manager" {
				if err == nil || !strings.Contains(out, "sideEffects: Required value") || !strings.Contains(out, "clientConfig: Required value") {
					t.Fatalf("a server-side apply of the earlier configurations: want the API server's refusal of an entry left "+
						"with its caBundle alone, got %v:\n%s", err, out)
				}
				if got := entryNames(t, c, names); len(got) != len(want)+len(dropped) {
					t.Fatalf("the refused apply changed the configurations: %q", got)
				}
				// docs/upgrade.md: delete the entries the earlier release lacks, then apply it again.
				for _, d := range dropped {
					object, name, _ := strings.Cut(d, " ")
					patch := fmt.Sprintf(`{"webhooks":[{"name":%q,"$patch":"delete"}]}`, name)
					if out, err := kubectl(nil, "patch", object, "--type=strategic", "-p", patch); err != nil {
						t.Fatalf("deleting %s: %v\n%s", d, err, out)
					}
				}
				out, err = kubectl(earlier, "apply", "--server-side", "-f", "-")
			}
			if err != nil {
				t.Fatalf("applying the earlier configurations: %v\n%s", err, out)
			}
			if got := entryNames(t, c, names); !slices.Equal(got, want) {
				t.Errorf("the entries after the downgrade: %q, want the earlier release's %q", got, want)
			}
			entries(t, c, names, false, func(name string, cc *admissionregistrationv1.WebhookClientConfig) bool {
				if !bytes.Equal(cc.CABundle, caBundle) {
					t.Errorf("%s after the downgrade: caBundle %q, want the injected one", name, cc.CABundle)
				}
				return true
			})
		})
	}
}

// inject server-side applies caBundle to every entry of the two configurations, forcing ownership,
// as cert-manager's CA injector does (its reconciler's Apply, field manager
// cert-manager-cainjector): it owns each entry, by name, beside whoever applied it.
func inject(t *testing.T, c client.Client, mutating *admissionregistrationv1.MutatingWebhookConfiguration,
	validating *admissionregistrationv1.ValidatingWebhookConfiguration, caBundle []byte,
) {
	t.Helper()
	apply := func(kind, name string, entryNames []string) {
		var webhooks []any
		for _, n := range entryNames {
			webhooks = append(webhooks, map[string]any{"name": n, "clientConfig": map[string]any{"caBundle": caBundle}})
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": admissionregistrationv1.SchemeGroupVersion.String(), "kind": kind,
			"metadata": map[string]any{"name": name}, "webhooks": webhooks,
		}}
		if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.ForceOwnership,
			client.FieldOwner("cert-manager-cainjector")); err != nil {
			t.Fatal(err)
		}
	}
	var ms, vs []string
	for _, w := range mutating.Webhooks {
		ms = append(ms, w.Name)
	}
	for _, w := range validating.Webhooks {
		vs = append(vs, w.Name)
	}
	apply("MutatingWebhookConfiguration", mutating.Name, ms)
	apply("ValidatingWebhookConfiguration", validating.Name, vs)
}

// appendName appends "object name" to names and returns true, for a DeleteFunc that records.
func appendName(names *[]string, object, name string) bool {
	*names = append(*names, object+" "+name)
	return true
}

// webhookConfigurations are the two configurations of manifests.
func webhookConfigurations(t *testing.T, manifests []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			break
		}
		data, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		switch doc["kind"] {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(data, mutating)
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(data, validating)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if mutating == nil || validating == nil {
		t.Fatal("the manifests hold no mutating or no validating webhook configuration")
	}
	return mutating, validating
}

// marshalDocuments writes objs as one YAML stream.
func marshalDocuments(t *testing.T, objs ...any) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes()
}

// entryNames are the names of the entries of the two configurations, sorted.
func entryNames(t *testing.T, c client.Client, names configurationNames) []string {
	t.Helper()
	var got []string
	entries(t, c, names, false, func(name string, _ *admissionregistrationv1.WebhookClientConfig) bool {
		got = append(got, name)
		return true
	})
	slices.Sort(got)
	return got
}
