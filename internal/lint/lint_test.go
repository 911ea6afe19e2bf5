package lint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Messages of the API server's and the webhooks' refusals the cases below expect.
const (
	dns1123Subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " +
		"and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
		`'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	dns1035Label = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic " +
		"character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is " +
		"'[a-z]([-a-z0-9]*[a-z0-9])?'); the name is also the name of the Service and a label value of the pods, so it must be a DNS-1035 label"
	portRange  = "Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)"
	badEmail   = `Invalid value: "ada-at-example.com": must be a bare email address such as user@example.com (rule welcome.email.format)`
	noWebhooks = "the API server does not call webhook-operator's webhooks for objects in namespace "
)

const (
	welcome      = "apiVersion: auth.seedlabs.dev/v1\nkind: Welcome\n"
	deployObject = "apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\n"
	nginx        = "spec: {image: 'docker.io/library/nginx:1.27', ports: [{port: 80}]}\n"
)

// maxReplicasPolicy is a policy that raises the replica cap to maxReplicas.
func maxReplicasPolicy(t *testing.T, maxReplicas int32) *webhooks.Policy {
	t.Helper()
	p, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
		Spec:       policyv1.AdmissionPolicySpec{MaxReplicas: &maxReplicas},
	}, webhooks.ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

// pastCap150 is the violation of 151 replicas under a cap of 150.
const pastCap150 = "Invalid value: 151: must be at most 150; lower it, or ask a cluster admin to raise the cap: " +
	"the AdmissionPolicy's maxReplicas raises it, and setting this rule to Warn lifts it (rule welcome.replicas.max)"

// emailPolicy audits welcome.email.format, but enforces it in the namespace named prod.
func emailPolicy(t *testing.T) *webhooks.Policy {
	t.Helper()
	p, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
		Spec: policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{
			ID: string(webhooks.WelcomeEmail), Action: policyv1.Audit,
			Namespaces: []policyv1.NamespaceAction{{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "prod"}},
				Action:   policyv1.Enforce,
			}},
		}}},
	}, webhooks.ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

// nestedLists is a YAML document of object, in flow style, as the one item of a v1 List, itself
// the one item of a v1 List, depth lists deep.
func nestedLists(depth int, object string) string {
	return strings.Repeat("{apiVersion: v1, kind: List, items: [", depth) + object + strings.Repeat("]}", depth) + "\n"
}

func TestLint(t *testing.T) {
	const welcomeGV, deployObjectGV = "auth.seedlabs.dev/v1", "app.seedlabs.dev/v1"
	longPrefix := strings.Repeat("a", 60) + "-"
	bottom := "{apiVersion: " + welcomeGV + ", kind: Welcome, metadata: {name: bottom}, spec: {name: Ada}}"
	for _, tc := range []struct {
		name     string
		linter   Linter
		manifest string
		want     []Result
	}{{
		name: "every item of a WelcomeList, an item with neither apiVersion nor kind taking the list's",
		manifest: "apiVersion: " + welcomeGV + "\nkind: WelcomeList\nitems:\n" +
			"- metadata: {name: good}\n  spec: {name: Ada}\n" +
			"- {apiVersion: " + welcomeGV + ", kind: Welcome, metadata: {name: bad, namespace: dev}, spec: {name: Ada, port: 0}}\n",
		want: []Result{
			{Source: "-", Document: 1, Item: "items[0]", APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "good", Verdict: Valid},
			{Source: "-", Document: 1, Item: "items[1]", APIVersion: welcomeGV, Kind: "Welcome", Namespace: "dev", Name: "bad", Verdict: Invalid,
				Message:    `Welcome.auth.seedlabs.dev "bad" is invalid: spec.port: ` + portRange,
				Violations: []Violation{{Field: "spec.port", Type: "FieldValueInvalid", Message: portRange}}},
		},
	}, {
		name: "a List in a List in a List: every object at its place, in the order written, each list's items taking its apiVersion and kind",
		manifest: "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: " + welcomeGV + ", kind: Welcome, metadata: {name: first}, spec: {name: Ada}}\n" +
			"- apiVersion: v1\n  kind: List\n  items:\n" +
			"  - {apiVersion: " + deployObjectGV + ", kind: DeployObject, metadata: {name: web}, " + strings.TrimSuffix(nginx, "\n") + "}\n" +
			"  - apiVersion: " + welcomeGV + "\n    kind: WelcomeList\n    items:\n" +
			"    - {metadata: {name: deep}, spec: {name: Ada, port: 0}}\n" +
			"  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}\n" +
			"- apiVersion: v1\n  kind: List\n  items: []\n" +
			"- {apiVersion: " + welcomeGV + ", kind: Welcome, metadata: {name: last}, spec: {name: Ada}}\n",
		want: []Result{
			{Source: "-", Document: 1, Item: "items[0]", APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "first", Verdict: Valid},
			{Source: "-", Document: 1, Item: "items[1].items[0]", APIVersion: deployObjectGV, Kind: "DeployObject", Namespace: "default", Name: "web", Verdict: Valid},
			{Source: "-", Document: 1, Item: "items[1].items[1].items[0]", APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "deep", Verdict: Invalid,
				Message:    `Welcome.auth.seedlabs.dev "deep" is invalid: spec.port: ` + portRange,
				Violations: []Violation{{Field: "spec.port", Type: "FieldValueInvalid", Message: portRange}}},
			{Source: "-", Document: 1, Item: "items[1].items[2]", APIVersion: "v1", Kind: "ConfigMap", Name: "settings", Verdict: Skipped},
			{Source: "-", Document: 1, Item: "items[3]", APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "last", Verdict: Valid},
		},
	}, {
		name:     "lists nested as deep as lint reads, and a document after",
		manifest: nestedLists(maxListDepth, bottom) + "---\n" + welcome + "metadata: {name: next}\nspec: {name: Ada}\n",
		want: []Result{
			{Source: "-", Document: 1, Item: strings.Repeat("items[0].", maxListDepth-1) + "items[0]", APIVersion: welcomeGV, Kind: "Welcome",
				Namespace: "default", Name: "bottom", Verdict: Valid},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "next", Verdict: Valid},
		},
	}, {
		name:     "lists nested deeper than lint reads: their document is invalid, the next one judged",
		manifest: nestedLists(maxListDepth+1, bottom) + "---\n" + welcome + "metadata: {name: next}\nspec: {name: Ada}\n",
		want: []Result{
			{Source: "-", Document: 1, Verdict: Invalid, Message: "error parsing document 1: " + strings.Repeat("items[0].", maxListDepth-1) + "items[0]: " +
				"a List nested 11 lists deep, counting the document's, deeper than the 10 lint reads: move its items into a list higher up"},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "next", Verdict: Valid},
		},
	}, {
		name:     "a list in a list whose item is not an object",
		manifest: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: [{apiVersion: v1, kind: ConfigMap}, [3]]}\n",
		want: []Result{{Source: "-", Document: 1, Verdict: Invalid,
			Message: "error parsing document 1: items[0].items[1]: not a Kubernetes object"}},
	}, {
		name:     "a list in a list whose items are not a list",
		manifest: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: 3}\n",
		want: []Result{{Source: "-", Document: 1, Verdict: Invalid,
			Message: "error parsing document 1: items[0].items: json: cannot unmarshal number into Go value of type []json.RawMessage"}},
	}, {
		name:     "a list of no items",
		manifest: "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: app.seedlabs.dev/v1\nkind: DeployObjectList\nitems: null\n",
	}, {
		name:     "a list whose item is not an object",
		manifest: "apiVersion: v1\nkind: List\nitems: [3]\n",
		want: []Result{{Source: "-", Document: 1, Verdict: Invalid,
			Message: "error parsing document 1: items[0]: not a Kubernetes object"}},
	}, {
		name:     "a generateName: judged under the name the API server generates",
		manifest: welcome + "metadata: {generateName: hello-}\nspec: {name: Ada}\n---\n" + deployObject + "metadata: {generateName: " + longPrefix + "}\n" + nginx,
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "hello-xxxxx", GenerateName: "hello-", Verdict: Valid},
			{Source: "-", Document: 2, APIVersion: deployObjectGV, Kind: "DeployObject", Namespace: "default",
				Name: strings.Repeat("a", 58) + "xxxxx", GenerateName: longPrefix, Verdict: Valid},
		},
	}, {
		name:     "a generateName that makes a name the webhook refuses",
		manifest: deployObject + "metadata: {generateName: v1.web-}\n" + nginx,
		want: []Result{{Source: "-", Document: 1, APIVersion: deployObjectGV, Kind: "DeployObject", Namespace: "default",
			Name: "v1.web-xxxxx", GenerateName: "v1.web-", Verdict: Invalid,
			Message: `DeployObject.app.seedlabs.dev "v1.web-xxxxx" is invalid: metadata.name: Invalid value: "v1.web-xxxxx": ` +
				dns1035Label + " (rule deployobject.metadata-name.dns-label)",
			Violations: []Violation{{Field: "metadata.name", Type: "FieldValueInvalid",
				Message: `Invalid value: "v1.web-xxxxx": ` + dns1035Label + " (rule deployobject.metadata-name.dns-label)"}},
		}},
	}, {
		name:     "a generateName the API server refuses itself, in a namespace the webhooks skip too",
		manifest: deployObject + "metadata: {generateName: Web_, namespace: kube-system}\n" + nginx,
		want: []Result{{Source: "-", Document: 1, APIVersion: deployObjectGV, Kind: "DeployObject", Namespace: "kube-system",
			Name: "Web_xxxxx", GenerateName: "Web_", Verdict: Invalid,
			Message: `DeployObject.app.seedlabs.dev "Web_xxxxx" is invalid: [metadata.generateName: Invalid value: "Web_": ` + dns1123Subdomain +
				`, metadata.name: Invalid value: "Web_xxxxx": ` + dns1123Subdomain + "]",
			Violations: []Violation{
				{Field: "metadata.generateName", Type: "FieldValueInvalid", Message: `Invalid value: "Web_": ` + dns1123Subdomain},
				{Field: "metadata.name", Type: "FieldValueInvalid", Message: `Invalid value: "Web_xxxxx": ` + dns1123Subdomain},
			},
		}},
	}, {
		name:     "neither a name nor a generateName",
		manifest: deployObject + "metadata: {namespace: team}\n" + nginx,
		want: []Result{{Source: "-", Document: 1, APIVersion: deployObjectGV, Kind: "DeployObject", Namespace: "team", Verdict: Invalid,
			Message:    `DeployObject.app.seedlabs.dev "" is invalid: metadata.name: Required value: name or generateName is required`,
			Violations: []Violation{{Field: "metadata.name", Type: "FieldValueRequired", Message: "Required value: name or generateName is required"}},
		}},
	}, {
		name:     "an override keyed on kubernetes.io/metadata.name, which the namespace of the object has",
		linter:   Linter{Policy: emailPolicy(t), Namespace: "prod", NamespaceLabels: labels.Set{"env": "prod"}},
		manifest: welcome + "metadata: {name: in-prod}\nspec: {name: Ada, email: ada-at-example.com}\n---\n" + welcome + "metadata: {name: in-dev, namespace: dev}\nspec: {name: Ada, email: ada-at-example.com}\n",
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "prod", Name: "in-prod", Verdict: Invalid,
				Message:    `Welcome.auth.seedlabs.dev "in-prod" is invalid: spec.email: ` + badEmail,
				Violations: []Violation{{Field: "spec.email", Type: "FieldValueInvalid", Message: badEmail}}},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "dev", Name: "in-dev", Verdict: Valid,
				Audited: []string{string(webhooks.WelcomeEmail)}},
		},
	}, {
		name:     "the policy's maxReplicas, which raises the replica cap",
		linter:   Linter{Policy: maxReplicasPolicy(t, 150)},
		manifest: welcome + "metadata: {name: at-cap}\nspec: {name: Ada, replicas: 150}\n---\n" + welcome + "metadata: {name: past-cap}\nspec: {name: Ada, replicas: 151}\n",
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "at-cap", Verdict: Valid},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "default", Name: "past-cap", Verdict: Invalid,
				Message:    `Welcome.auth.seedlabs.dev "past-cap" is invalid: spec.replicas: ` + pastCap150,
				Violations: []Violation{{Field: "spec.replicas", Type: "FieldValueInvalid", Message: pastCap150}}},
		},
	}, {
		name:     "kubectl's --namespace, which an object may not contradict",
		linter:   Linter{Namespace: "prod", EnforceNamespace: true},
		manifest: welcome + "metadata: {name: here}\nspec: {name: Ada}\n---\n" + welcome + "metadata: {name: elsewhere, namespace: dev}\nspec: {name: Ada}\n",
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "prod", Name: "here", Verdict: Valid},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "dev", Name: "elsewhere", Verdict: Invalid,
				Message: `the namespace from the provided object "dev" does not match the namespace "prod". You must pass '--namespace=dev' to perform this operation.`},
		},
	}, {
		name: "objects in kube-system and the operator's namespace, which the webhooks are not called for",
		manifest: welcome + "metadata: {name: bad, namespace: kube-system}\nspec: {name: Ada, port: 0}\n---\n" +
			welcome + "metadata: {name: bad, namespace: webhook-operator-system}\nspec: {name: Ada, port: 0}\n",
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "kube-system", Name: "bad", Verdict: Unchecked,
				Message: noWebhooks + "kube-system"},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "webhook-operator-system", Name: "bad", Verdict: Unchecked,
				Message: noWebhooks + "webhook-operator-system"},
		},
	}, {
		name:   "objects of an operator installed in another namespace",
		linter: Linter{Namespace: "ops", OperatorNamespace: "ops"},
		manifest: welcome + "metadata: {name: bad}\nspec: {name: Ada, port: 0}\n---\n" +
			welcome + "metadata: {name: bad, namespace: webhook-operator-system}\nspec: {name: Ada, port: 0}\n",
		want: []Result{
			{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "ops", Name: "bad", Verdict: Unchecked,
				Message: noWebhooks + "ops"},
			{Source: "-", Document: 2, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "webhook-operator-system", Name: "bad", Verdict: Invalid,
				Message:    `Welcome.auth.seedlabs.dev "bad" is invalid: spec.port: ` + portRange,
				Violations: []Violation{{Field: "spec.port", Type: "FieldValueInvalid", Message: portRange}}},
		},
	}, {
		name:     "an object in kube-system the API server cannot decode",
		manifest: welcome + "metadata: {name: typo, namespace: kube-system}\nspec: {name: Ada, prot: 80}\n",
		want: []Result{{Source: "-", Document: 1, APIVersion: welcomeGV, Kind: "Welcome", Namespace: "kube-system", Name: "typo", Verdict: Invalid,
			Message: `strict decoding error: unknown field "spec.prot"`}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.linter.Lint("-", strings.NewReader(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGeneratedName(t *testing.T) {
	for _, tc := range []struct{ generateName, want string }{
		{"web-", "web-xxxxx"},
		{"web", "webxxxxx"},
		{strings.Repeat("b", 58), strings.Repeat("b", 58) + "xxxxx"},
		{strings.Repeat("b", 59), strings.Repeat("b", 58) + "xxxxx"},
	} {
		if got := GeneratedName(tc.generateName); got != tc.want {
			t.Errorf("GeneratedName(%q) = %q, want %q", tc.generateName, got, tc.want)
		}
	}
}

// TestExcludedNamespacesAreTheWebhooksNamespaceSelector holds ExcludedNamespaces to the
// namespaceSelector config/webhook gives every webhook, where "system" is the operator's namespace,
// and DefaultOperatorNamespace to the namespace config/default renames it to.
func TestExcludedNamespacesAreTheWebhooksNamespaceSelector(t *testing.T) {
	data, err := os.ReadFile("../../config/webhook/namespace_selector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var selector struct {
		NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	}
	if err := yaml.Unmarshal(data, &selector); err != nil {
		t.Fatal(err)
	}
	want := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: ExcludedNamespaces("system"),
	}}}
	if diff := cmp.Diff(want, selector.NamespaceSelector); diff != "" {
		t.Errorf("config/webhook/namespace_selector.yaml is not what ExcludedNamespaces says (-want +got):\n%s", diff)
	}

	data, err = os.ReadFile("../../config/default/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kustomization struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		t.Fatal(err)
	}
	if kustomization.Namespace != DefaultOperatorNamespace || fixtures.Namespace != DefaultOperatorNamespace {
		t.Errorf("config/default installs the operator in %q (fixtures.Namespace %q), DefaultOperatorNamespace is %q",
			kustomization.Namespace, fixtures.Namespace, DefaultOperatorNamespace)
	}
}

func TestSummarize(t *testing.T) {
	got := Summarize([]Result{{Verdict: Valid}, {Verdict: Invalid}, {Verdict: Unchecked}, {Verdict: Unchecked}, {Verdict: Skipped}})
	if want := (Summary{Valid: 1, Invalid: 1, Skipped: 1, Unchecked: 2}); got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
}

// TestDeprecationsAreTheCRDs holds deprecations to the CRDs' deprecated versions and their
// deprecationWarning, generated from the markers of the types, which say the warnings again.
func TestDeprecationsAreTheCRDs(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	found := map[schema.GroupVersionKind]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Deprecated {
				found[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = ptr.Deref(v.DeprecationWarning, "")
			}
		}
	}
	if diff := cmp.Diff(found, deprecations); diff != "" {
		t.Errorf("the CRDs' deprecated versions and warnings (-CRDs +deprecations):\n%s", diff)
	}
}

// TestLintWarnsOfADeprecatedVersionItSkips: kubectl prints the API server's warning for an
// AdmissionPolicy at v1alpha1, which lint does not judge.
func TestLintWarnsOfADeprecatedVersionItSkips(t *testing.T) {
	results, err := Linter{}.Lint("policy.yaml", strings.NewReader("apiVersion: policy.seedlabs.dev/v1alpha1\nkind: AdmissionPolicy\nmetadata: {name: cluster}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Verdict != Skipped || !slices.Equal(results[0].Warnings, []string{policyv1alpha1.DeprecationWarning}) {
		t.Errorf("results %+v, want one Skipped with the deprecation warning", results)
	}
}
