package webhooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// TestObjectsPastTheirBoundsAreRefusedForTheBoundsAlone sends both webhooks of a kind an object
// one past a bound of its schema, and at it: past it, both refuse it with that bound alone, the
// mutating webhook with no patch; at it, the rules judge it as ever.
func TestObjectsPastTheirBoundsAreRefusedForTheBoundsAlone(t *testing.T) {
	handlers := fuzzHandlers(t)
	welcome := func(groups int) string {
		names := make([]string, groups)
		for i := range names {
			names[i] = fmt.Sprintf(`"g%d"`, i)
		}
		return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
			`"spec":{"name":"n","groups":[` + strings.Join(names, ",") + `]}}`
	}
	deployObject := func(field string, n int) string {
		items := map[string]string{"env": `{"name":"V%d"}`, "ports": `{"port":%d}`, "args": `"a%d"`, "imagePullSecrets": `{"name":"s%d"}`}[field]
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf(items, i+1)
		}
		return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
			`"spec":{"image":"registry.local:5000/app:1","` + field + `":[` + strings.Join(list, ",") + `]}}`
	}
	tests := []struct {
		name   string
		kind   testKind
		object string
		// bound is the one cause of the refusal past a bound, "" at it.
		bound *metav1.StatusCause
	}{
		{name: "a Welcome's groups at the bound", kind: welcomeKind, object: welcome(authv1alpha1.MaxGroupsItems)},
		{name: "a Welcome's groups past the bound", kind: welcomeKind, object: welcome(authv1alpha1.MaxGroupsItems + 1),
			bound: &metav1.StatusCause{Type: "FieldValueTooMany", Message: "Too many: 1025: must have at most 1024 items", Field: "spec.groups"}},
		{name: "a DeployObject's ports at the bound", kind: deployObjectKind, object: deployObject("ports", appv1.MaxPortsItems)},
		{name: "a DeployObject's ports past the bound", kind: deployObjectKind, object: deployObject("ports", appv1.MaxPortsItems+1),
			bound: &metav1.StatusCause{Type: "FieldValueTooMany", Message: "Too many: 101: must have at most 100 items", Field: "spec.ports"}},
		{name: "a DeployObject's env past the bound", kind: deployObjectKind, object: deployObject("env", appv1.MaxEnvItems+1),
			bound: &metav1.StatusCause{Type: "FieldValueTooMany", Message: "Too many: 1001: must have at most 1000 items", Field: "spec.env"}},
		{name: "a DeployObject's args past the bound", kind: deployObjectKind, object: deployObject("args", appv1.MaxCommandItems+1),
			bound: &metav1.StatusCause{Type: "FieldValueTooMany", Message: "Too many: 1001: must have at most 1000 items", Field: "spec.args"}},
		{name: "a DeployObject's imagePullSecrets past the bound", kind: deployObjectKind, object: deployObject("imagePullSecrets", appv1.MaxImagePullSecretsItems+1),
			bound: &metav1.StatusCause{Type: "FieldValueTooMany", Message: "Too many: 65: must have at most 64 items", Field: "spec.imagePullSecrets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{tc.kind.mutate, tc.kind.validate} {
				reply := review(t, handlers[path], tc.kind, fuzzStrict, admissionv1.Create, []byte(tc.object), nil)
				if tc.bound == nil {
					if reply.Result != nil && reply.Result.Details != nil {
						for _, c := range reply.Result.Details.Causes {
							if c.Type == "FieldValueTooMany" && !strings.Contains(c.Message, "(rule ") && !strings.Contains(c.Message, "more violations") {
								t.Errorf("%s refuses an object at its bounds for a bound: %+v", path, c)
							}
						}
					}
					continue
				}
				if reply.Allowed || len(reply.Patch) > 0 || reply.Result == nil || reply.Result.Details == nil {
					t.Fatalf("%s: allowed %v, patch of %d bytes; want a refusal without a patch", path, reply.Allowed, len(reply.Patch))
				}
				if diff := cmp.Diff([]metav1.StatusCause{*tc.bound}, reply.Result.Details.Causes); diff != "" {
					t.Errorf("%s: the causes (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

// TestPoliciesPastTheirBoundsCompileWithinThem compiles a policy past each of its bounds: each
// is named, and what lies past it is not compiled.
func TestPoliciesPastTheirBoundsCompileWithinThem(t *testing.T) {
	override := policyv1.NamespaceAction{Action: policyv1.Audit,
		Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn,
			Values: make([]string, maxSelectorTerms)}}}}
	p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}
	p.Spec.Rules = append(p.Spec.Rules, policyv1.RulePolicy{ID: string(WelcomeEmail), Action: policyv1.Warn,
		Namespaces: []policyv1.NamespaceAction{override}})
	for range policyv1.MaxRulesItems {
		p.Spec.Rules = append(p.Spec.Rules, policyv1.RulePolicy{ID: string(WelcomeName), Action: policyv1.Warn})
	}
	compiled, errs := NewPolicy(p, ImagePolicy{})
	var got []string
	for _, e := range errs {
		if e.Type == field.ErrorTypeTooMany {
			got = append(got, e.Error())
		}
	}
	want := []string{
		"spec.rules: Too many: 129: must have at most 128 items",
		"spec.rules[0].namespaces[0].selector: Too many: 4097: the policy's namespace selectors may hold at most 4096 labels and values in all, and hold more by this one",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the bounds named (-want +got):\n%s", diff)
	}
	if compiled.Action(WelcomeEmail, nil) != policyv1.Enforce {
		t.Error("a rule whose selector is past its bounds is applied")
	}
}

// TestWithinBoundsHoldsTheBounds evaluates the mutating webhooks' within-bounds matchCondition with
// kube-apiserver's matcher, and holds it to welcomeBounds and deployObjectBounds: kube-apiserver
// calls the webhook for an object within them (one lacking a default), and not for one past
// them, which the schema refuses next; an object of the wrong shape evaluates without an error.
func TestWithinBoundsHoldsTheBounds(t *testing.T) {
	welcomes := mutatingMatcher(t, "mwelcome.auth.seedlabs.dev", authv1alpha1.GroupVersion.WithKind("Welcome"), "welcomes")
	deployObjects := mutatingMatcher(t, "mdeployobject.app.seedlabs.dev", appv1.GroupVersion.WithKind("DeployObject"), "deployobjects")
	list := func(item string, n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(item, i+1)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	resourcesOf := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`"example.com/r%d":"1"`, i)
		}
		return "{" + strings.Join(items, ",") + "}"
	}
	tests := []struct {
		name    string
		matcher *webhookMatcher
		// spec is the object's spec as JSON; it lacks a default (replicas).
		spec string
	}{
		{"Welcome groups at the bound", welcomes, `{"name":"n","groups":` + list(`"g%d"`, authv1alpha1.MaxGroupsItems) + `}`},
		{"Welcome groups past the bound", welcomes, `{"name":"n","groups":` + list(`"g%d"`, authv1alpha1.MaxGroupsItems+1) + `}`},
		{"DeployObject env at the bound", deployObjects, `{"image":"a:1","env":` + list(`{"name":"V%d"}`, appv1.MaxEnvItems) + `}`},
		{"DeployObject env past the bound", deployObjects, `{"image":"a:1","env":` + list(`{"name":"V%d"}`, appv1.MaxEnvItems+1) + `}`},
		{"DeployObject ports at the bound", deployObjects, `{"image":"a:1","ports":` + list(`{"port":%d,"protocol":"TCP","targetPort":1}`, appv1.MaxPortsItems) + `}`},
		{"DeployObject ports past the bound", deployObjects, `{"image":"a:1","ports":` + list(`{"port":%d}`, appv1.MaxPortsItems+1) + `}`},
		{"DeployObject limits past the bound", deployObjects, `{"image":"a:1","resources":{"limits":` + resourcesOf(appv1.MaxResourcesProperties+1) + `}}`},
		{"DeployObject requests past the bound", deployObjects, `{"image":"a:1","resources":{"requests":` + resourcesOf(appv1.MaxResourcesProperties+1) + `}}`},
		{"DeployObject claims past the bound", deployObjects, `{"image":"a:1","resources":{"claims":` + list(`{"name":"c%d"}`, appv1.MaxClaimsItems+1) + `}}`},
		{"DeployObject command at the bound", deployObjects, `{"image":"a:1","command":` + list(`"c%d"`, appv1.MaxCommandItems) + `}`},
		{"DeployObject command past the bound", deployObjects, `{"image":"a:1","command":` + list(`"c%d"`, appv1.MaxCommandItems+1) + `}`},
		{"DeployObject args past the bound", deployObjects, `{"image":"a:1","args":` + list(`"a%d"`, appv1.MaxCommandItems+1) + `}`},
		{"DeployObject imagePullSecrets at the bound", deployObjects, `{"image":"a:1","imagePullSecrets":` + list(`{"name":"s%d"}`, appv1.MaxImagePullSecretsItems) + `}`},
		{"DeployObject imagePullSecrets past the bound", deployObjects, `{"image":"a:1","imagePullSecrets":` + list(`{"name":"s%d"}`, appv1.MaxImagePullSecretsItems+1) + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.matcher.gvk
			object := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"o"},"spec":%s}`, kind.GroupVersion().String(), kind.Kind, tc.spec)
			var bounds field.ErrorList
			switch kind.Kind {
			case "Welcome":
				w := &authv1.Welcome{}
				decodeInto(t, object, w)
				bounds = welcomeBounds(w)
			default:
				d := &appv1.DeployObject{}
				decodeInto(t, object, d)
				bounds = deployObjectBounds(d)
			}
			if called := tc.matcher.callsJSON(t, admission.Create, object); called != (len(bounds) == 0) {
				t.Errorf("called %v, with the bounds broken %v", called, bounds)
			}
		})
	}
	for _, spec := range []string{`"x"`, `{"groups":"x"}`, `{"env":"x","ports":{"a":1},"resources":"x"}`, `{"resources":{"limits":[],"claims":{}}}`} {
		for _, m := range []*webhookMatcher{welcomes, deployObjects} {
			object := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"o"},"spec":%s}`, m.gvk.GroupVersion().String(), m.gvk.Kind, spec)
			m.callsJSON(t, admission.Create, object)
		}
	}
}

// decodeInto decodes object, JSON, into obj, failing the test when it does not decode.
func decodeInto(t *testing.T, object string, obj any) {
	t.Helper()
	if err := json.Unmarshal([]byte(object), obj); err != nil {
		t.Fatal(err)
	}
}
