package webhooks

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// maxAPIRequestBytes is kube-apiserver's limit on a request body (--max-request-bytes, 3 MiB by
// default): no object it sends a webhook is larger.
const maxAPIRequestBytes = 3 << 20

// worstItems, when set, is how many items the worst requests carry instead of as many as fit in
// maxAPIRequestBytes: the code before a bound needs hours for those.
var worstItems = flag.Int("worst-items", 0, "How many list items BenchmarkWorstRequests puts in each object; 0 fills kube-apiserver's request limit.")

// worstRequest is one of the costliest requests a tenant can send a webhook through the API server:
// an object of items list items, each as cheap to send and as costly to judge as the case can make it.
type worstRequest struct {
	name string
	kind testKind
	// path is the webhook's path.
	path string
	// op is the request's operation; an update sends object as the old object too.
	op admissionv1.Operation
	// object is the object with items list items, as JSON.
	object func(items int) string
	// atBound, when set, is how many items the object carries, its schema's bound: object then
	// fills kube-apiserver's request limit with the items' strings. Such an object is what
	// kube-apiserver may send the webhook; one past a bound, only someone calling it directly.
	atBound int
}

// padTo is s repeated to the length each of n items may take in kube-apiserver's request limit,
// less each item's overhead.
func padTo(s string, n, overhead int) string {
	return strings.Repeat(s, max((maxAPIRequestBytes-4096)/n-overhead, 1)/len(s))
}

// adminPolicyKind is the AdmissionPolicy as testKind knows a kind.
var admissionPolicyKind = testKind{kind: "AdmissionPolicy",
	resource: metav1.GroupVersionResource{Group: "policy.seedlabs.dev", Version: "v1alpha1", Resource: "admissionpolicies"},
	validate: admissionPolicyPath}

// repeated is n copies of item, joined by commas.
func repeated(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}

var worstRequests = []worstRequest{
	{name: "Welcome/validate/duplicate-groups-at-bound", kind: welcomeKind, path: welcomeKind.validate, op: admissionv1.Create,
		atBound: authv1alpha1.MaxGroupsItems, object: func(n int) string {
			g := `"` + padTo("a", n, 3) + `"`
			return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
				`"spec":{"name":"n","replicas":1,"port":8088,"serviceType":"NodePort","groups":[` + repeated(g, n) + `]}}`
		}},
	{name: "Welcome/validate/duplicate-groups-at-bound-update", kind: welcomeKind, path: welcomeKind.validate, op: admissionv1.Update,
		atBound: authv1alpha1.MaxGroupsItems / 2, object: func(n int) string {
			g := `"` + padTo("a", 2*n, 3) + `"`
			return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
				`"spec":{"name":"n","replicas":1,"port":8088,"serviceType":"NodePort","groups":[` + repeated(g, n) + `]}}`
		}},
	{name: "DeployObject/validate/env-named-equals-at-bound", kind: deployObjectKind, path: deployObjectKind.validate, op: admissionv1.Create,
		atBound: appv1.MaxEnvItems, object: func(n int) string {
			e := `{"name":"` + padTo("=", n, 12) + `"}`
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","replicas":1,"env":[` + repeated(e, n) + `]}}`
		}},
	{name: "DeployObject/mutate/env-and-ports-at-bound", kind: deployObjectKind, path: deployObjectKind.mutate, op: admissionv1.Create,
		atBound: appv1.MaxEnvItems, object: func(n int) string {
			ports := make([]string, appv1.MaxPortsItems)
			for i := range ports {
				ports[i] = fmt.Sprintf(`{"name":"p%d","port":%d}`, i, i+1)
			}
			e := `{"name":"V","value":"` + padTo("x", n, 30) + `"}`
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","ports":[` + strings.Join(ports, ",") + `],"env":[` + repeated(e, n) + `]}}`
		}},
	{name: "AdmissionPolicy/validate/selector-values-at-bounds", kind: admissionPolicyKind, path: admissionPolicyPath, op: admissionv1.Create,
		atBound: policyv1.MaxRulesItems, object: func(n int) string {
			override := `{"action":"Audit","selector":{"matchExpressions":[{"key":"k","operator":"In","values":[` + repeated(`"!"`, 256) + `]}]}}`
			overrides := min(policyv1.MaxNamespacesItems, (maxAPIRequestBytes-4096)/n/(len(override)+1))
			rule := `{"id":"welcome.name.length","action":"Warn","namespaces":[` + repeated(override, overrides) + `]}`
			return `{"apiVersion":"policy.seedlabs.dev/v1alpha1","kind":"AdmissionPolicy","metadata":{"name":"cluster"},` +
				`"spec":{"rules":[` + repeated(rule, n) + `]}}`
		}},
	{name: "Welcome/validate/duplicate-groups", kind: welcomeKind, path: welcomeKind.validate, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
				`"spec":{"name":"n","replicas":1,"port":8088,"serviceType":"NodePort","groups":[` + repeated(`"a"`, n) + `]}}`
		}},
	{name: "Welcome/validate/duplicate-groups-update", kind: welcomeKind, path: welcomeKind.validate, op: admissionv1.Update,
		object: func(n int) string {
			return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
				`"spec":{"name":"n","replicas":1,"port":8088,"serviceType":"NodePort","groups":[` + repeated(`"a"`, n) + `]}}`
		}},
	{name: "Welcome/mutate/groups", kind: welcomeKind, path: welcomeKind.mutate, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},` +
				`"spec":{"name":"n","groups":[` + repeated(`"a"`, n) + `]}}`
		}},
	{name: "DeployObject/validate/env-named-equals", kind: deployObjectKind, path: deployObjectKind.validate, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","replicas":1,"env":[` + repeated(`{"name":"="}`, n) + `]}}`
		}},
	{name: "DeployObject/validate/ports", kind: deployObjectKind, path: deployObjectKind.validate, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","replicas":1,"ports":[` + repeated(`{"port":0}`, n) + `]}}`
		}},
	{name: "DeployObject/mutate/ports-without-targetPort", kind: deployObjectKind, path: deployObjectKind.mutate, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","ports":[` + repeated(`{"port":1}`, n) + `]}}`
		}},
	{name: "DeployObject/mutate/resources", kind: deployObjectKind, path: deployObjectKind.mutate, op: admissionv1.Create,
		object: func(n int) string {
			limits := make([]string, n)
			for i := range limits {
				limits[i] = fmt.Sprintf(`"r%d":"1"`, i)
			}
			return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"d"},` +
				`"spec":{"image":"registry.local/app:v1","resources":{"limits":{` + strings.Join(limits, ",") + `}}}}`
		}},
	{name: "AdmissionPolicy/validate/rules", kind: admissionPolicyKind, path: admissionPolicyPath, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"policy.seedlabs.dev/v1alpha1","kind":"AdmissionPolicy","metadata":{"name":"cluster"},` +
				`"spec":{"rules":[` + repeated(`{"id":"x","action":"y"}`, n) + `]}}`
		}},
	{name: "AdmissionPolicy/validate/selector-values", kind: admissionPolicyKind, path: admissionPolicyPath, op: admissionv1.Create,
		object: func(n int) string {
			return `{"apiVersion":"policy.seedlabs.dev/v1alpha1","kind":"AdmissionPolicy","metadata":{"name":"cluster"},` +
				`"spec":{"rules":[{"id":"welcome.name.length","action":"Warn","namespaces":[{"action":"Audit","selector":` +
				`{"matchExpressions":[{"key":"k","operator":"In","values":[` + repeated(`"!"`, n) + `]}]}}]}]}}`
		}},
}

// itemsWithin is the most items object can carry within maxAPIRequestBytes.
func itemsWithin(object func(int) string) int {
	one, two := len(object(1)), len(object(2))
	return (maxAPIRequestBytes - one) / (two - one)
}

// BenchmarkWorstRequests serves each of worstRequests, filled to kube-apiserver's request limit
// (past the schema's bounds, or to -worst-items: the requests only a direct caller can send), to
// its webhook as Setup builds it, and reports the handler's time per request and the size of its
// answer. Beside each, decode-only serves the same request to a controller-runtime webhook that
// decodes the object (and the old one) as the kind's handlers do and allows it: the cost of any
// webhook served by controller-runtime, the baseline to divide by. It is the table of
// docs/performance.md's worst requests; `-benchtime=1x` runs each once.
func BenchmarkWorstRequests(b *testing.B) {
	handlers := fuzzHandlers(b)
	decodeOnly := decodeOnlyWebhook(b)
	for _, w := range worstRequests {
		items := w.atBound
		if items == 0 {
			if items = *worstItems; items == 0 {
				items = itemsWithin(w.object)
			}
		}
		object := []byte(w.object(items))
		var old []byte
		if w.op == admissionv1.Update {
			old = object
		}
		body, err := json.Marshal(fuzzReview(w.kind, fuzzStrict, "", w.op, object, old))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/items=%d", w.name, items), func(b *testing.B) {
			b.ReportAllocs()
			var answer int
			for b.Loop() {
				reply, _ := postReview(b, handlers[w.path], body)
				data, err := json.Marshal(reply)
				if err != nil {
					b.Fatal(err)
				}
				answer = len(data)
			}
			b.ReportMetric(float64(len(object)), "object-bytes")
			b.ReportMetric(float64(answer), "answer-bytes")
		})
		b.Run(fmt.Sprintf("%s/items=%d/decode-only", w.name, items), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if reply, _ := postReview(b, decodeOnly, body); !reply.Response.Allowed {
					b.Fatalf("decode-only: %v", reply.Response.Result)
				}
			}
		})
	}
}

// decodeOnlyWebhook is a controller-runtime webhook that decodes a request's object, and its old
// object when there is one, into the kind's type, as the validators and defaulters do, and allows it.
func decodeOnlyWebhook(tb testing.TB) *admission.Webhook {
	tb.Helper()
	decoder := admission.NewDecoder(testScheme)
	decode := func(raw runtime.RawExtension, gvk metav1.GroupVersionKind) error {
		if len(raw.Raw) == 0 {
			return nil
		}
		obj, err := testScheme.New(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind})
		if err != nil {
			return err
		}
		return decoder.DecodeRaw(raw, obj)
	}
	return &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		if err := decode(req.Object, req.Kind); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := decode(req.OldObject, req.Kind); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		return admission.Allowed("")
	})}
}
