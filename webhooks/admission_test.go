package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	admissionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/admission/metrics"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// testScheme is the operator's scheme.
var testScheme = scheme.New()

// testDecoder decodes objects as controller-runtime's webhooks do.
var testDecoder = admission.NewDecoder(testScheme)

// testWebhooks are the webhooks as Setup registers them, under policy, with panics left to crash
// the test instead of turning into a 500 reply.
func testWebhooks(policy ImagePolicy) map[string]*admission.Webhook {
	webhooks := admissionWebhooks(testScheme, Options{Policy: StaticPolicy{Policy: DefaultPolicy(policy)}})
	for _, h := range webhooks {
		h.WithRecoverPanic(false)
	}
	return webhooks
}

// The rules as controller-runtime serves them, for the tests of the status their violations make.

var welcomeValidator admission.Validator[*authv1alpha1.Welcome] = validatorFunc[authv1alpha1.Welcome, *authv1alpha1.Welcome]{
	gvk: kindOf[authv1alpha1.Welcome](testScheme),
	validate: func(_ *Policy, old, w *authv1alpha1.Welcome) (field.ErrorList, []Warning) {
		return Welcome.Validate(old, w, nil)
	},
}

func memcachedValidator() admission.Validator[*cachev1alpha1.Memcached] {
	return validatorFunc[cachev1alpha1.Memcached, *cachev1alpha1.Memcached]{gvk: cachev1alpha1.GroupVersion.WithKind(memcachedGK.Kind),
		validate: func(_ *Policy, old, m *cachev1alpha1.Memcached) (field.ErrorList, []Warning) {
			return Memcached.Validate(old, m, nil)
		}}
}

func deployObjectValidator(policy ImagePolicy) admission.Validator[*appv1.DeployObject] {
	return validatorFunc[appv1.DeployObject, *appv1.DeployObject]{gvk: kindOf[appv1.DeployObject](testScheme),
		validate: func(_ *Policy, old, d *appv1.DeployObject) (field.ErrorList, []Warning) {
			return ValidateDeployObject(old, d, DefaultPolicy(policy))
		}}
}

// admit sends req to h over HTTP as kube-apiserver does, and requires a well-formed answer: the
// request's uid, and a patch only when admitted, of type JSONPatch, that applies to the object and
// makes an object of its kind. It returns the answer and the operations of its patch.
func admit(t *testing.T, h http.Handler, req admission.Request) (*admissionv1.AdmissionResponse, []gomodulesjsonpatch.Operation) {
	t.Helper()
	reply := serveBody(t, h, "application/json", reviewBody(t, req.AdmissionRequest))
	resp := reply.Response
	if resp.UID != req.UID {
		t.Fatalf("the answer carries the uid %q, the request %q", resp.UID, req.UID)
	}
	if len(resp.Patch) == 0 {
		return resp, nil
	}
	if !resp.Allowed {
		t.Fatalf("a refusal carries a patch: %s", resp.Patch)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("the patch %s has the patch type %v", resp.Patch, resp.PatchType)
	}
	patchedObject(t, req.Kind, req.Object.Raw, resp.Patch)
	var ops []gomodulesjsonpatch.Operation
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("the patch %s does not decode: %v", resp.Patch, err)
	}
	return resp, ops
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

// TestRequestsAreAnswered sends the webhooks well-formed and malformed reviews, and requires
// each answer to decode, to carry the request's uid, and to admit or refuse with the status code
// the request calls for: 400 for what cannot be read, 422 naming every violation.
func TestRequestsAreAnswered(t *testing.T) {
	webhooks := testWebhooks(ImagePolicy{})
	const uid = "0b9f0c8e-5d0e-4a59-9d3e-000000000001"
	scaleOf := func(object string) string {
		return reviewOf(`{"uid":"` + uid + `","name":"pool","operation":"UPDATE","subResource":"scale",` +
			`"resource":{"group":"cache.seedlabs.dev","version":"v1alpha1","resource":"memcacheds"},` +
			`"object":` + object + `,"oldObject":` + scaleJSON(1) + `}`)
	}
	tests := []struct {
		name, path, contentType, body string
		allowed                       bool
		code                          int32
		// uid is whether the answer carries the request's uid: not when the review cannot be read.
		uid bool
		// patched and message are what the answer must carry, when set.
		patched bool
		message string
	}{
		{name: "no body", path: welcomeKind.validate, code: http.StatusBadRequest, message: "request body is empty"},
		{name: "another content type", path: welcomeKind.validate, contentType: "application/yaml",
			body: welcomeReviewOf("CREATE", defaultedWelcome, ""), code: http.StatusBadRequest, message: "expected application/json"},
		{name: "not JSON", path: welcomeKind.mutate, body: "not a review", code: http.StatusBadRequest},
		{name: "truncated JSON", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", validWelcome, "")[:80], code: http.StatusBadRequest},
		{name: "unknown operation", path: welcomeKind.validate, body: welcomeReviewOf("PATCH", defaultedWelcome, ""),
			code: http.StatusBadRequest, uid: true, message: `unknown operation "PATCH"`},
		{name: "create without object", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", "", ""), code: http.StatusBadRequest, uid: true},
		{name: "create without object, validated", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", "", ""), code: http.StatusBadRequest, uid: true},
		{name: "object with a field of the wrong type", path: welcomeKind.validate,
			body: welcomeReviewOf("CREATE", strings.Replace(defaultedWelcome, `"replicas":1`, `"replicas":"one"`, 1), ""),
			code: http.StatusBadRequest, uid: true},
		{name: "update without old object", path: welcomeKind.validate, body: welcomeReviewOf("UPDATE", defaultedWelcome, ""), code: http.StatusBadRequest, uid: true},
		{name: "create to default", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", validWelcome, ""),
			allowed: true, code: http.StatusOK, uid: true, patched: true},
		{name: "fully specified create", path: welcomeKind.mutate, body: welcomeReviewOf("CREATE", defaultedWelcome, ""),
			allowed: true, code: http.StatusOK, uid: true},
		{name: "delete to the mutating webhook", path: welcomeKind.mutate, body: welcomeReviewOf("DELETE", "", defaultedWelcome),
			allowed: true, code: http.StatusOK, uid: true},
		{name: "valid create", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", defaultedWelcome, ""),
			allowed: true, code: http.StatusOK, uid: true},
		{name: "invalid create", path: welcomeKind.validate, body: welcomeReviewOf("CREATE", invalidWelcome, ""),
			code: http.StatusUnprocessableEntity, uid: true, message: "spec.port: Invalid value: 0"},
		{name: "update keeping an old violation", path: welcomeKind.validate, body: welcomeReviewOf("UPDATE",
			strings.Replace(invalidWelcome, `"password":"x"`, `"password":"y"`, 1), invalidWelcome),
			allowed: true, code: http.StatusOK, uid: true},
		{name: "delete of an invalid object", path: welcomeKind.validate, body: welcomeReviewOf("DELETE", "", invalidWelcome),
			allowed: true, code: http.StatusOK, uid: true},
		{name: "connect", path: welcomeKind.validate, body: welcomeReviewOf("CONNECT", "", ""), allowed: true, code: http.StatusOK, uid: true},
		{name: "v1beta1 review", path: welcomeKind.validate, body: strings.Replace(welcomeReviewOf("CREATE", defaultedWelcome, ""),
			"admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), allowed: true, code: http.StatusOK, uid: true},
		{name: "scale to keep", path: memcachedScalePath, body: scaleOf(scaleJSON(2)), allowed: true, code: http.StatusOK, uid: true},
		{name: "scale to refuse", path: memcachedScalePath, body: scaleOf(scaleJSON(5)),
			code: http.StatusUnprocessableEntity, uid: true, message: "spec.size: Invalid value: 5: must be between 1 and 3"},
		{name: "scale of a garbled object", path: memcachedScalePath, body: scaleOf(`{"spec":{"replicas":"two"}}`),
			code: http.StatusBadRequest, uid: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			contentType := tc.contentType
			if contentType == "" {
				contentType = "application/json"
			}
			httpCode, reply := serveRaw(webhooks[tc.path], contentType, tc.body)
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal([]byte(reply), &review); err != nil || review.Response == nil || review.Response.Result == nil {
				t.Fatalf("HTTP %d, the reply %s is no review with a status: %v", httpCode, reply, err)
			}
			resp := review.Response
			if httpCode != http.StatusOK || resp.Allowed != tc.allowed || resp.Result.Code != tc.code {
				t.Errorf("HTTP %d, allowed %t, code %d; want HTTP 200, allowed %t, code %d: %s",
					httpCode, resp.Allowed, resp.Result.Code, tc.allowed, tc.code, reply)
			}
			if hasUID := resp.UID == uid; hasUID != tc.uid {
				t.Errorf("the reply carries the uid %q; want the request's: %t", resp.UID, tc.uid)
			}
			if patched := len(resp.Patch) > 0; patched != tc.patched {
				t.Errorf("patched: %t, want %t: %s", patched, tc.patched, resp.Patch)
			}
			if !strings.Contains(resp.Result.Message, tc.message) {
				t.Errorf("the message %q does not say %q", resp.Result.Message, tc.message)
			}
			if strings.Contains(tc.body, "admission.k8s.io/v1beta1") && review.APIVersion != "admission.k8s.io/v1beta1" {
				t.Errorf("a v1beta1 review is answered as %s", review.APIVersion)
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

// TestPanicsAreAnsweredWith500: a panic of the rules is a 500 answer with the request's uid, and
// counted; with recovery off, as in the fuzz targets, it is a panic.
func TestPanicsAreAnsweredWith500(t *testing.T) {
	panicking := func(_ *Policy, _, _ *authv1alpha1.Welcome) (field.ErrorList, []Warning) {
		panic("the rule broke")
	}
	h := validatingWebhook(testScheme, judge{}, panicking)
	body := welcomeReviewOf("CREATE", defaultedWelcome, "")

	before := testutil.ToFloat64(admissionmetrics.WebhookPanics)
	_, got := serveRaw(h, "application/json", body)
	if !strings.Contains(got, `"code":500`) || !strings.Contains(got, "0b9f0c8e-5d0e-4a59-9d3e-000000000001") ||
		!strings.Contains(got, `"allowed":false`) {
		t.Errorf("the answer %s is not a refusal with code 500 and the request's uid", got)
	}
	if n := testutil.ToFloat64(admissionmetrics.WebhookPanics) - before; n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}

	h.WithRecoverPanic(false)
	defer func() {
		if r := recover(); r != "the rule broke" {
			t.Errorf("recovered %v, want the rule's panic", r)
		}
	}()
	serveRaw(h, "application/json", body)
	t.Error("the panic was answered")
}

// TestUnreadableBodiesAreRefused: a body that breaks off is a 400 answer, and one over the size
// limit, two objects of 3 MB and the rest of the review, a 413 answer; neither admits.
func TestUnreadableBodiesAreRefused(t *testing.T) {
	const maxRequestSize = 7 * 1024 * 1024
	h := testWebhooks(ImagePolicy{})[welcomeKind.validate]
	tests := map[string]struct {
		body func() io.Reader
		code string
	}{
		"broken off": {func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"request":`), iotest.ErrReader(errors.New("connection reset")))
		}, `"code":400`},
		"too large": {func() io.Reader { return strings.NewReader(strings.Repeat(" ", maxRequestSize+1)) }, `"code":413`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", tc.body())
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if got := rec.Body.String(); !strings.Contains(got, `"allowed":false`) || !strings.Contains(got, tc.code) {
				t.Errorf("the answer %s does not refuse with %s", got, tc.code)
			}
		})
	}
}
