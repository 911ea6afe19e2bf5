package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	jsonpatch "github.com/evanphx/json-patch/v5"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// testScheme knows what the operator's scheme knows of admission: the three kinds and Scale.
var testScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(authv1alpha1.AddToScheme(scheme))
	utilruntime.Must(cachev1alpha1.AddToScheme(scheme))
	utilruntime.Must(appv1.AddToScheme(scheme))
	utilruntime.Must(policyv1alpha1.AddToScheme(scheme))
	return scheme
}()

// testDecoder decodes objects as controller-runtime's webhooks do.
var testDecoder = admission.NewDecoder(testScheme)

// testWebhooks are the webhooks as Setup registers them, under policy, with panics left to crash
// the test instead of turning into a 500 reply.
func testWebhooks(policy ImagePolicy) map[string]*admissionWebhook {
	webhooks := admissionWebhooks(testScheme, Options{ImagePolicy: policy})
	for _, h := range webhooks {
		h.leavePanics()
	}
	return webhooks
}

// The rules as controller-runtime serves them, for the tests of the status their violations make.

var welcomeValidator admission.Validator[*authv1alpha1.Welcome] = validatorFunc[authv1alpha1.Welcome, *authv1alpha1.Welcome]{
	gvk: kindOf[authv1alpha1.Welcome](testScheme),
	validate: func(_ *Policy, old, w *authv1alpha1.Welcome) (field.ErrorList, admission.Warnings) {
		return ValidateWelcome(old, w, ImagePolicy{})
	},
}

func memcachedValidator() admission.Validator[*cachev1alpha1.Memcached] {
	return validatorFunc[cachev1alpha1.Memcached, *cachev1alpha1.Memcached]{gvk: cachev1alpha1.GroupVersion.WithKind(memcachedGK.Kind),
		validate: func(_ *Policy, old, m *cachev1alpha1.Memcached) (field.ErrorList, admission.Warnings) {
			return ValidateMemcached(old, m)
		}}
}

func deployObjectValidator(policy ImagePolicy) admission.Validator[*appv1.DeployObject] {
	return validatorFunc[appv1.DeployObject, *appv1.DeployObject]{gvk: kindOf[appv1.DeployObject](testScheme),
		validate: func(_ *Policy, old, d *appv1.DeployObject) (field.ErrorList, admission.Warnings) {
			return ValidateDeployObject(old, d, policy)
		}}
}

// admit sends req to h over HTTP as kube-apiserver does, and requires controller-runtime's webhook
// of the same rules to answer it alike (see requireAlike). It returns h's answer and the
// operations of its patch.
func admit(t *testing.T, h *admissionWebhook, req admission.Request) (*admissionv1.AdmissionResponse, []gomodulesjsonpatch.Operation) {
	t.Helper()
	body := reviewBody(t, req.AdmissionRequest)
	lean := serveBody(t, h, "application/json", body)
	exact := serveBody(t, h.exact, "application/json", body)
	if lean.Response == nil || exact.Response == nil {
		t.Fatalf("no response: %+v, controller-runtime's %+v", lean, exact)
	}
	requireAlike(t, req.Kind, req.Object.Raw, lean.Response, exact.Response)
	var ops []gomodulesjsonpatch.Operation
	if len(lean.Response.Patch) > 0 {
		if err := json.Unmarshal(lean.Response.Patch, &ops); err != nil {
			t.Fatalf("the patch %s does not decode: %v", lean.Response.Patch, err)
		}
	}
	return lean.Response, ops
}

// requireAlike requires two answers to the same review to agree: the same uid, verdict, status
// and warnings, and patches that make the same object of kind out of object.
func requireAlike(t *testing.T, kind metav1.GroupVersionKind, object []byte, got, want *admissionv1.AdmissionResponse) {
	t.Helper()
	if got.UID != want.UID || got.Allowed != want.Allowed {
		t.Fatalf("uid %q, allowed %t; controller-runtime answers uid %q, allowed %t (%+v)",
			got.UID, got.Allowed, want.UID, want.Allowed, want.Result)
	}
	if diff := gocmp.Diff(want.Result, got.Result); diff != "" {
		t.Fatalf("status (-controller-runtime +got):\n%s", diff)
	}
	if diff := gocmp.Diff(want.Warnings, got.Warnings, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("warnings (-controller-runtime +got):\n%s", diff)
	}
	if len(got.Patch) > 0 && (got.PatchType == nil || *got.PatchType != admissionv1.PatchTypeJSONPatch) {
		t.Fatalf("the patch %s has the patch type %v", got.Patch, got.PatchType)
	}
	if len(got.Patch) == 0 && len(want.Patch) == 0 {
		return
	}
	if !got.Allowed {
		t.Fatalf("a refusal carries a patch: %s", got.Patch)
	}
	gotObject, wantObject := patchedObject(t, kind, object, got.Patch), patchedObject(t, kind, object, want.Patch)
	if !equality.Semantic.DeepEqual(wantObject, gotObject) {
		t.Fatalf("the patch %s makes %s of %s; controller-runtime's %s makes %s",
			got.Patch, asJSON(gotObject), object, want.Patch, asJSON(wantObject))
	}
}

// patchedObject is object with patch applied, decoded as controller-runtime decodes it.
func patchedObject(t *testing.T, kind metav1.GroupVersionKind, object, patch []byte) runtime.Object {
	t.Helper()
	if len(patch) > 0 {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("the patch %s does not decode: %v", patch, err)
		}
		if object, err = p.Apply(object); err != nil {
			t.Fatalf("the patch %s does not apply to %s: %v", patch, object, err)
		}
	}
	obj, err := testScheme.New(schema.GroupVersionKind(kind))
	if err != nil {
		t.Fatal(err)
	}
	if err := testDecoder.DecodeRaw(runtime.RawExtension{Raw: object}, obj); err != nil {
		t.Fatalf("the patched object %s does not decode: %v", object, err)
	}
	return obj
}

func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

func reviewBody(tb testing.TB, req admissionv1.AdmissionRequest) []byte {
	tb.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// serveBody posts body to h and returns the review it answers, which must decode.
func serveBody(tb testing.TB, h http.Handler, contentType string, body []byte) admissionv1.AdmissionReview {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var reply admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || reply.Response == nil {
		tb.Fatalf("HTTP %d, reply %q: %v", rec.Code, rec.Body, err)
	}
	return reply
}

// reviewOf is the body of an AdmissionReview of apiVersion admission.k8s.io/v1 carrying request,
// a JSON object written as text.
func reviewOf(request string) string {
	return `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":` + request + `}`
}

// welcomeReviewOf is the body of a review of a Welcome: op, the object and the old object as JSON
// text, empty when not sent.
func welcomeReviewOf(op, object, oldObject string) string {
	request := `{"uid":"0b9f0c8e-5d0e-4a59-9d3e-000000000001",` +
		`"kind":{"group":"auth.seedlabs.dev","version":"v1alpha1","kind":"Welcome"},` +
		`"resource":{"group":"auth.seedlabs.dev","version":"v1alpha1","resource":"welcomes"},` +
		`"name":"greeting","namespace":"default","operation":"` + op + `","userInfo":{"username":"ada"}`
	if object != "" {
		request += `,"object":` + object
	}
	if oldObject != "" {
		request += `,"oldObject":` + oldObject
	}
	return reviewOf(request + `}`)
}

const (
	validWelcome      = `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting"},"spec":{"name":"Ada"}}`
	defaultedWelcome  = `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting"},"spec":{"name":"Ada","replicas":1,"port":8088,"serviceType":"NodePort"}}`
	invalidWelcome    = `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting"},"spec":{"name":"","port":0,"password":"x"}}`
	welcomeWithoutTM  = `{"metadata":{"name":"greeting"},"spec":{"name":"Ada"}}`
	memcachedAsObject = `{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached","metadata":{"name":"greeting"},"spec":{}}`
)

// TestRequestsOfTheAPIServerAreAnsweredWithoutControllerRuntime sends the webhooks reviews as
// kube-apiserver sends them, and requires their own path to answer them all.
func TestRequestsOfTheAPIServerAreAnsweredWithoutControllerRuntime(t *testing.T) {
	webhooks := testWebhooks(ImagePolicy{})
	tests := []struct {
		name, path string
		body       string
	}{
		{"create to the mutating webhook", welcomeKind.mutate, welcomeReviewOf("CREATE", validWelcome, "")},
		{"update to the mutating webhook", welcomeKind.mutate, welcomeReviewOf("UPDATE", validWelcome, defaultedWelcome)},
		{"delete to the mutating webhook", welcomeKind.mutate, welcomeReviewOf("DELETE", "", defaultedWelcome)},
		{"defaulted create to the mutating webhook", welcomeKind.mutate, welcomeReviewOf("CREATE", defaultedWelcome, "")},
		{"create to the validating webhook", welcomeKind.validate, welcomeReviewOf("CREATE", defaultedWelcome, "")},
		{"invalid create to the validating webhook", welcomeKind.validate, welcomeReviewOf("CREATE", invalidWelcome, "")},
		{"update to the validating webhook", welcomeKind.validate, welcomeReviewOf("UPDATE", invalidWelcome, defaultedWelcome)},
		{"connect to the validating webhook", welcomeKind.validate, welcomeReviewOf("CONNECT", "", "")},
		{"v1beta1 review", welcomeKind.validate, strings.Replace(welcomeReviewOf("CREATE", defaultedWelcome, ""),
			"admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1)},
		{"scale", memcachedScalePath, reviewOf(`{"uid":"1","operation":"UPDATE","subResource":"scale",` +
			`"resource":{"group":"cache.seedlabs.dev","version":"v1alpha1","resource":"memcacheds"},` +
			`"object":` + scaleJSON(2) + `,"oldObject":` + scaleJSON(1) + `}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Without controller-runtime's webhook to leave a request to, leaving one panics.
			own := &admissionWebhook{review: webhooks[tc.path].review}
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("the request was left to controller-runtime: %v", r)
				}
			}()
			serveBody(t, own, "application/json", []byte(tc.body))
		})
	}
}

// TestRequestsGetControllerRuntimesAnswer requires the webhooks to answer every request, the
// requests they leave to controller-runtime's webhook included, in the same bytes as
// controller-runtime's webhook of the same rules, but for the order of a patch's operations.
func TestRequestsGetControllerRuntimesAnswer(t *testing.T) {
	webhooks := testWebhooks(ImagePolicy{})
	duplicateSpec := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting"},` +
		`"spec":{"name":"Ada","replicas":1,"port":8088,"serviceType":"NodePort"},"spec":{"name":"Ada"}}`
	tests := []struct {
		name, path, contentType, body string
	}{
		{name: "no body", path: welcomeKind.validate},
		{name: "another content type", path: welcomeKind.validate, contentType: "application/yaml",
			body: welcomeReviewOf("CREATE", defaultedWelcome, "")},
		{name: "not JSON", path: welcomeKind.mutate, body: "not a review"},
		{name: "truncated JSON", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", validWelcome, "")[:80]},
		{name: "YAML", path: welcomeKind.validate, body: "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\n" +
			"request:\n  uid: \"1\"\n  operation: CREATE\n  object: " + defaultedWelcome + "\n"},
		{name: "no request", path: welcomeKind.validate, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`},
		{name: "null request", path: welcomeKind.mutate, body: reviewOf("null")},
		{name: "review without apiVersion and kind", path: welcomeKind.validate, body: `{"request":{"uid":"1","operation":"CREATE","object":` + defaultedWelcome + `}}`},
		{name: "review of another kind", path: welcomeKind.validate, body: `{"apiVersion":"v1","kind":"Pod","request":{"uid":"1","operation":"CREATE","object":` + defaultedWelcome + `}}`},
		{name: "review with a case variant of kind", path: welcomeKind.validate, body: `{"KIND":"Other",` + welcomeReviewOf("CREATE", defaultedWelcome, "")[1:]},
		{name: "unknown review field", path: welcomeKind.validate, body: `{"future":1,` + welcomeReviewOf("CREATE", defaultedWelcome, "")[1:]},
		{name: "userInfo of the wrong type", path: welcomeKind.validate, body: strings.Replace(
			welcomeReviewOf("CREATE", defaultedWelcome, ""), `{"username":"ada"}`, `"ada"`, 1)},
		{name: "unknown operation", path: welcomeKind.validate, body: welcomeReviewOf("PATCH", defaultedWelcome, "")},
		{name: "no operation", path: welcomeKind.mutate, body: welcomeReviewOf("", defaultedWelcome, "")},
		{name: "create without object", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", "", "")},
		{name: "create without object, validated", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", "", "")},
		{name: "null object", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", "null", "")},
		{name: "list object", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", "[1]", "")},
		{name: "string object", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", `"Welcome"`, "")},
		{name: "object of another kind", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", memcachedAsObject, "")},
		{name: "object without apiVersion and kind", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", welcomeWithoutTM, "")},
		{name: "object without apiVersion and kind, validated", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", welcomeWithoutTM, "")},
		{name: "object with a case variant of kind", path: welcomeKind.validate,
			body: welcomeReviewOf("CREATE", `{"Kind":"Memcached",`+defaultedWelcome[1:], "")},
		{name: "object with a Kelvin sign variant of kind", path: welcomeKind.validate,
			body: welcomeReviewOf("CREATE", `{"\u212aind":"Memcached",`+defaultedWelcome[1:], "")},
		{name: "object with an escaped variant of apiVersion", path: welcomeKind.mutate,
			body: welcomeReviewOf("CREATE", `{"\u0041PIVersion":"v1",`+validWelcome[1:], "")},
		{name: "object with a repeated spec", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", duplicateSpec, "")},
		{name: "object with a repeated spec, validated", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", duplicateSpec, "")},
		{name: "object with a repeated kind, validated", path: welcomeKind.validate,
			body: welcomeReviewOf("CREATE", `{"kind":"Memcached",`+defaultedWelcome[1:], "")},
		{name: "object with a field of the wrong type", path: welcomeKind.validate,
			body: welcomeReviewOf("CREATE", strings.Replace(defaultedWelcome, `"replicas":1`, `"replicas":"one"`, 1), "")},
		{name: "object with a status of the wrong type", path: welcomeKind.mutate,
			body: welcomeReviewOf("CREATE", `{"status":5,`+validWelcome[1:], "")},
		{name: "object with an unknown field", path: welcomeKind.mutate,
			body: welcomeReviewOf("CREATE", `{"future":{"a":1},`+defaultedWelcome[1:], "")},
		{name: "old object of another kind", path: welcomeKind.validate, body: welcomeReviewOf("UPDATE", defaultedWelcome, memcachedAsObject)},
		{name: "update without old object", path: welcomeKind.validate, body: welcomeReviewOf("UPDATE", defaultedWelcome, "")},
		{name: "delete", path: welcomeKind.validate, body: welcomeReviewOf("DELETE", "", invalidWelcome)},
		{name: "delete without old object", path: welcomeKind.validate, body: welcomeReviewOf("DELETE", "", "")},
		{name: "fully specified create", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", defaultedWelcome, "")},
		{name: "valid create", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", defaultedWelcome, "")},
		{name: "invalid create, with a warning", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", invalidWelcome, "")},
		{name: "update keeping an old violation", path: welcomeKind.validate, body: welcomeReviewOf("UPDATE",
			strings.Replace(invalidWelcome, `"password":"x"`, `"password":"y"`, 1), invalidWelcome)},
		{name: "connect", path: welcomeKind.validate, body: welcomeReviewOf("CONNECT", "", "")},
		{name: "v1beta1 review", path: welcomeKind.validate, body: strings.Replace(welcomeReviewOf("CREATE", defaultedWelcome, ""),
			"admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1)},
		{name: "review of kind only", path: welcomeKind.validate, body: `{"kind":"AdmissionReview",` +
			`"request":{"uid":"1","operation":"CREATE","object":` + defaultedWelcome + `}}`},
		{name: "uid to escape", path: welcomeKind.validate, body: strings.Replace(welcomeReviewOf("CREATE", defaultedWelcome, ""),
			"0b9f0c8e-5d0e-4a59-9d3e-000000000001", `<\"é\u2028>`, 1)},
		{name: "scale to keep", path: memcachedScalePath, body: reviewOf(`{"uid":"1","operation":"UPDATE","subResource":"scale",` +
			`"resource":{"group":"cache.seedlabs.dev","version":"v1alpha1","resource":"memcacheds"},` +
			`"object":` + scaleJSON(2) + `,"oldObject":` + scaleJSON(1) + `}`)},
		{name: "scale to refuse", path: memcachedScalePath, body: reviewOf(`{"uid":"1","name":"pool","operation":"UPDATE","subResource":"scale",` +
			`"resource":{"group":"cache.seedlabs.dev","version":"v1alpha1","resource":"memcacheds"},` +
			`"object":` + scaleJSON(5) + `,"oldObject":` + scaleJSON(1) + `}`)},
		{name: "scale of a garbled object", path: memcachedScalePath, body: reviewOf(`{"uid":"1","operation":"UPDATE","subResource":"scale",` +
			`"resource":{"group":"cache.seedlabs.dev","version":"v1alpha1","resource":"memcacheds"},` +
			`"object":{"spec":{"replicas":"two"}},"oldObject":` + scaleJSON(1) + `}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := webhooks[tc.path]
			contentType := tc.contentType
			if contentType == "" {
				contentType = "application/json"
			}
			gotCode, got := serveRaw(h, contentType, tc.body)
			wantCode, want := serveRaw(h.exact, contentType, tc.body)
			got, want = sortedPatch(t, got), sortedPatch(t, want)
			if gotCode != wantCode || got != want {
				t.Errorf("HTTP %d %s\ncontroller-runtime answers HTTP %d %s", gotCode, got, wantCode, want)
			}
		})
	}
}

// serveRaw posts body to h, no body when empty, and returns the reply as it is written.
func serveRaw(h http.Handler, contentType, body string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// sortedPatch is reply, a review, with the operations of its patch in the order of their paths:
// controller-runtime's come in no set order.
func sortedPatch(t *testing.T, reply string) string {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(reply), &review); err != nil || review.Response == nil || len(review.Response.Patch) == 0 {
		return reply
	}
	var ops []gomodulesjsonpatch.Operation
	if err := json.Unmarshal(review.Response.Patch, &ops); err != nil {
		t.Fatalf("the patch %s does not decode: %v", review.Response.Patch, err)
	}
	slices.SortFunc(ops, func(a, b gomodulesjsonpatch.Operation) int { return strings.Compare(a.Path, b.Path) })
	review.Response.Patch = []byte(asJSON(ops))
	return asJSON(review)
}

// TestAllowedReviewIsWrittenAsEncodingJSONWrites holds the direct writing of an admitting reply
// to the bytes encoding/json writes, and to leaving to it what it escapes.
func TestAllowedReviewIsWrittenAsEncodingJSONWrites(t *testing.T) {
	jsonPatchType := admissionv1.PatchTypeJSONPatch
	review := func(change func(*admissionv1.AdmissionReview)) admissionv1.AdmissionReview {
		r := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Response: &admissionv1.AdmissionResponse{UID: "5a1c0b8e-0000-4000-8000-000000000001", Allowed: true,
				Result: &metav1.Status{Code: http.StatusOK}},
		}
		change(&r)
		return r
	}
	tests := []struct {
		name   string
		review admissionv1.AdmissionReview
		direct bool
	}{
		{"admitted", review(func(*admissionv1.AdmissionReview) {}), true},
		{"patched", review(func(r *admissionv1.AdmissionReview) {
			r.Response.Patch, r.Response.PatchType = []byte(`[{"op":"add","path":"/spec/replicas","value":1}]`), &jsonPatchType
		}), true},
		{"with warnings", review(func(r *admissionv1.AdmissionReview) {
			r.Response.Warnings = []string{"spec.replicas is 0: no pod will run", "spec.password: keep it in a Secret"}
		}), true},
		{"patched, with a warning", review(func(r *admissionv1.AdmissionReview) {
			r.Response.Patch, r.Response.PatchType = []byte(`[]`), &jsonPatchType
			r.Response.Warnings = []string{"careful"}
		}), true},
		{"v1beta1", review(func(r *admissionv1.AdmissionReview) { r.APIVersion = "admission.k8s.io/v1beta1" }), true},
		{"without apiVersion", review(func(r *admissionv1.AdmissionReview) { r.APIVersion = "" }), true},
		{"without kind", review(func(r *admissionv1.AdmissionReview) { r.Kind = "" }), true},
		{"empty uid", review(func(r *admissionv1.AdmissionReview) { r.Response.UID = "" }), true},
		{"warning to escape", review(func(r *admissionv1.AdmissionReview) { r.Response.Warnings = []string{`a <b> & "c"`} }), false},
		{"uid to escape", review(func(r *admissionv1.AdmissionReview) { r.Response.UID = "é" }), false},
		{"kind to escape", review(func(r *admissionv1.AdmissionReview) { r.Kind = "a\\b" }), false},
		{"refused", review(func(r *admissionv1.AdmissionReview) {
			r.Response.Allowed, r.Response.Result = false, &metav1.Status{Code: http.StatusForbidden}
		}), false},
		{"with a message", review(func(r *admissionv1.AdmissionReview) { r.Response.Result.Message = "fine" }), false},
		{"with audit annotations", review(func(r *admissionv1.AdmissionReview) {
			r.Response.AuditAnnotations = map[string]string{"a": "b"}
		}), false},
		{"patch without a type", review(func(r *admissionv1.AdmissionReview) { r.Response.Patch = []byte(`[]`) }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(tc.review); err != nil {
				t.Fatal(err)
			}
			got, direct := appendAllowedReview(nil, &tc.review)
			if direct != tc.direct {
				t.Fatalf("written directly: %t, want %t", direct, tc.direct)
			}
			if direct && string(got) != want.String() {
				t.Errorf("written as\n%s\nencoding/json writes\n%s", got, want.String())
			}
			var rec bytes.Buffer
			writeReview(&rec, tc.review)
			if rec.String() != want.String() {
				t.Errorf("writeReview writes\n%s\nencoding/json writes\n%s", rec.String(), want.String())
			}
		})
	}
}

// TestPanicsAreAnsweredAsControllerRuntimeAnswersThem: a panic of the rules is a 500 answer with
// the request's uid, or, with recovery off as in the fuzz targets, a panic.
func TestPanicsAreAnsweredAsControllerRuntimeAnswersThem(t *testing.T) {
	panicking := func(_ *Policy, _, _ *authv1alpha1.Welcome) (field.ErrorList, admission.Warnings) {
		panic("the rule broke")
	}
	h := validatingWebhook(testScheme, judge{}, panicking)
	body := welcomeReviewOf("CREATE", defaultedWelcome, "")

	gotCode, got := serveRaw(h, "application/json", body)
	wantCode, want := serveRaw(h.exact, "application/json", body)
	if gotCode != wantCode || got != want {
		t.Errorf("HTTP %d %s\ncontroller-runtime answers HTTP %d %s", gotCode, got, wantCode, want)
	}
	if !strings.Contains(got, `"code":500`) || !strings.Contains(got, "0b9f0c8e-5d0e-4a59-9d3e-000000000001") {
		t.Errorf("the answer %s is not a 500 with the request's uid", got)
	}

	h.leavePanics()
	defer func() {
		if r := recover(); r != "the rule broke" {
			t.Errorf("recovered %v, want the rule's panic", r)
		}
	}()
	serveRaw(h, "application/json", body)
	t.Error("the panic was answered")
}

// TestJSONValuesAreWrittenAsEncodingJSONWrites holds the values of a patch to encoding/json's
// encoding of the same values.
func TestJSONValuesAreWrittenAsEncodingJSONWrites(t *testing.T) {
	for _, v := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(8080), intstr.FromInt32(-1),
		intstr.FromString(""), intstr.FromString("http"), intstr.FromString(`<"é">`)} {
		if got, want := string(jsonIntOrString(v)), asJSON(v); got != want {
			t.Errorf("jsonIntOrString(%#v) = %s, encoding/json writes %s", v, got, want)
		}
	}
	for _, n := range []*int32{nil, ptr.To[int32](0), ptr.To[int32](-7), ptr.To[int32](65535)} {
		if got, want := string(jsonInt32(n)), asJSON(n); got != want {
			t.Errorf("jsonInt32(%v) = %s, encoding/json writes %s", n, got, want)
		}
	}
}

// TestUnreadableBodiesAreAnsweredAsControllerRuntimeAnswersThem: a body that breaks off, and one
// over controller-runtime's limit, get controller-runtime's answers.
func TestUnreadableBodiesAreAnsweredAsControllerRuntimeAnswersThem(t *testing.T) {
	h := testWebhooks(ImagePolicy{})[welcomeKind.validate]
	bodies := map[string]func() io.Reader{
		"broken off": func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"request":`), iotest.ErrReader(errors.New("connection reset")))
		},
		"too large": func() io.Reader { return strings.NewReader(strings.Repeat(" ", int(maxRequestSize)+1)) },
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			serve := func(h http.Handler) (int, string) {
				req := httptest.NewRequest(http.MethodPost, "/", body())
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Code, rec.Body.String()
			}
			gotCode, got := serve(h)
			wantCode, want := serve(h.exact)
			if gotCode != wantCode || got != want {
				t.Errorf("HTTP %d %s\ncontroller-runtime answers HTTP %d %s", gotCode, got, wantCode, want)
			}
			if !strings.Contains(got, `"allowed":false`) {
				t.Errorf("the answer %s admits", got)
			}
		})
	}
}
