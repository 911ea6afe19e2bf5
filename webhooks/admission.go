package webhooks

// The admission webhooks are served by admissionWebhook rather than by controller-runtime's
// admission.Webhook, which costs several times a plain handler's time per request: it reads the
// AdmissionReview and each object twice (once for apiVersion and kind, once for the value), logs
// through a logger built per request, and computes a defaulting patch by marshalling the defaulted
// object and diffing it with the object as sent.
//
// admissionWebhook reads the review and each object once, into typed values, and builds a
// defaulting patch from the fields the defaulting filled. It does so for the requests
// kube-apiserver sends: a JSON review whose fields and objects' fields are all known and appear
// once, each object carrying its kind's apiVersion and kind. Any other request (YAML, a field
// unknown to the Go types, a repeated key, an object of another kind or none, an unknown
// operation) goes to exact, the controller-runtime webhook of the same rules, so that it gets
// exactly the answer it always got, errors included.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	admissionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/admission/metrics"
	kjson "sigs.k8s.io/json"
)

// maxRequestSize is controller-runtime's limit on an AdmissionReview: two objects of at most 3MB
// each, and the rest of the review.
const maxRequestSize = int64(7 * 1024 * 1024)

// admissionReviewGVK is the kind of a review sent without apiVersion and kind, and of the reply to it.
var admissionReviewGVK = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")

var admissionLog = logf.Log.WithName("admission")

// admissionReview is an admission.k8s.io AdmissionReview (v1 and v1beta1 have the same fields)
// whose objects are read straight into O and OO: the custom resource's type, or rawJSON.
type admissionReview[O, OO any] struct {
	APIVersion string                         `json:"apiVersion,omitempty"`
	Kind       string                         `json:"kind,omitempty"`
	Request    *admissionRequest[O, OO]       `json:"request,omitempty"`
	Response   *admissionv1.AdmissionResponse `json:"response,omitempty"`
}

// admissionRequest is an AdmissionRequest whose object and oldObject are of types O and OO.
type admissionRequest[O, OO any] struct {
	admissionv1.AdmissionRequest
	Object    O  `json:"object,omitempty"`
	OldObject OO `json:"oldObject,omitempty"`
}

// rawJSON is a JSON value as it appears in the review's body, which the handler keeps for the
// whole request, so it is not copied; null is no value, as for a runtime.RawExtension.
type rawJSON []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *rawJSON) UnmarshalJSON(data []byte) error {
	if string(data) != "null" {
		*r = data
	}
	return nil
}

// reviewFunc answers the review in body, or reports false to leave it to controller-runtime's
// webhook.
type reviewFunc func(ctx context.Context, body []byte, recoverPanic bool) (admissionv1.AdmissionReview, bool)

// answerFunc answers req, read from the review in body, or reports false to leave it to
// controller-runtime's webhook.
type answerFunc[O, OO any] func(ctx context.Context, body []byte, req *admissionRequest[O, OO]) (admissionv1.AdmissionResponse, bool)

// reviewing reads a review whose objects are of types O and OO, in one pass, and answers it.
// A review with a field unknown to the types is left to controller-runtime: the field could be a
// key such as "Kind", which the decoder ignores but controller-runtime's reading of apiVersion
// and kind does not (it is case-insensitive, as encoding/json is). So is, when patching, a review
// with a key given twice: a JSON patch applies to the last value, where the decoder merges objects.
func reviewing[O, OO any](patching bool, answer answerFunc[O, OO]) reviewFunc {
	strictness := []kjson.StrictOption{kjson.DisallowUnknownFields}
	if patching {
		strictness = append(strictness, kjson.DisallowDuplicateFields)
	}
	return func(ctx context.Context, body []byte, recoverPanic bool) (admissionv1.AdmissionReview, bool) {
		var req admissionRequest[O, OO]
		// As controller-runtime: a review without a request is answered as an empty request.
		review := admissionReview[O, OO]{Request: &req}
		// The decoder is controller-runtime's: sigs.k8s.io/json, with case-sensitive keys.
		if strictErrs, err := kjson.UnmarshalStrict(body, &review, strictness...); err != nil || len(strictErrs) > 0 {
			return admissionv1.AdmissionReview{}, false
		}
		if log := admissionLog.V(5); log.Enabled() {
			requestLog(log, &req.AdmissionRequest).Info("received request")
		}
		response, handled := handle(ctx, req.UID, recoverPanic, func() (admissionv1.AdmissionResponse, bool) {
			return answer(ctx, body, &req)
		})
		if !handled {
			return admissionv1.AdmissionReview{}, false
		}
		gvk := schema.FromAPIVersionAndKind(review.APIVersion, review.Kind)
		if gvk.Empty() {
			gvk = admissionReviewGVK
		}
		reply := admissionv1.AdmissionReview{Response: &response}
		reply.SetGroupVersionKind(gvk)
		return reply, true
	}
}

// admissionWebhook serves one admission webhook over HTTP; see the top of this file.
type admissionWebhook struct {
	review reviewFunc
	// exact serves the requests review leaves, as controller-runtime always did.
	exact *admission.Webhook
	// recoverPanic turns a panic of the rules into a 500 answer, as controller-runtime does by
	// default; the tests turn it off to see the panic.
	recoverPanic bool
}

func newAdmissionWebhook(review reviewFunc, exact admission.Handler) *admissionWebhook {
	return &admissionWebhook{review: review, exact: &admission.Webhook{Handler: exact}, recoverPanic: true}
}

// leavePanics leaves a panic of the rules to crash, where it is answered with a 500 by default.
func (h *admissionWebhook) leavePanics() {
	h.recoverPanic = false
	h.exact.WithRecoverPanic(false)
}

// ServeHTTP implements http.Handler, with controller-runtime's answers to a request that is not a
// review (admission.Webhook.ServeHTTP in pkg/webhook/admission/http.go).
func (h *admissionWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		h.exact.ServeHTTP(w, r)
		return
	}
	defer func() { _ = r.Body.Close() }()
	limited := &io.LimitedReader{R: r.Body, N: maxRequestSize}
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength < maxRequestSize {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(limited); err != nil {
		admissionLog.Error(err, "unable to read the body from the incoming request")
		writeReview(w, admissionv1.AdmissionReview{Response: errored(http.StatusBadRequest, err)})
		return
	}
	if limited.N <= 0 {
		err := fmt.Errorf("request entity is too large; limit is %d bytes", maxRequestSize)
		admissionLog.Error(err, "unable to read the body from the incoming request; limit reached")
		writeReview(w, admissionv1.AdmissionReview{Response: errored(http.StatusRequestEntityTooLarge, err)})
		return
	}
	body := buf.Bytes()
	if r.Header.Get("Content-Type") == "application/json" {
		if reply, handled := h.review(r.Context(), body, h.recoverPanic); handled {
			writeReview(w, reply)
			return
		}
	}
	// controller-runtime's webhook answers what the fast path does not take.
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.exact.ServeHTTP(w, r)
}

// handle runs answer with controller-runtime's handling of a panic (admission.Webhook.Handle),
// and completes the response as admission.Response.Complete does.
func handle(ctx context.Context, uid types.UID, recoverPanic bool, answer func() (admissionv1.AdmissionResponse, bool)) (response admissionv1.AdmissionResponse, handled bool) {
	defer func() {
		if r := recover(); r != nil {
			admissionmetrics.WebhookPanics.WithLabelValues().Inc()
			if !recoverPanic {
				admissionLog.Info(fmt.Sprintf("Observed a panic in webhook: %v", r))
				panic(r)
			}
			for _, fn := range utilruntime.PanicHandlers {
				fn(ctx, r)
			}
			response, handled = *errored(http.StatusInternalServerError, fmt.Errorf("panic: %v [recovered]", r)), true
			response.UID = uid
		}
	}()
	response, handled = answer()
	response.UID = uid
	if response.Result == nil {
		response.Result = &metav1.Status{}
	}
	if response.Result.Code == 0 {
		response.Result.Code = http.StatusOK
	}
	if len(response.Patch) > 0 {
		patchType := admissionv1.PatchTypeJSONPatch
		response.PatchType = &patchType
	}
	return response, handled
}

// writeReview writes review as controller-runtime does: encoding/json, then a newline.
func writeReview(w io.Writer, review admissionv1.AdmissionReview) {
	var err error
	if reply, ok := appendAllowedReview(make([]byte, 0, 512), &review); ok {
		_, err = w.Write(reply)
	} else {
		err = json.NewEncoder(w).Encode(review)
	}
	if err != nil {
		admissionLog.Error(err, "unable to encode and write the response")
		// As controller-runtime does: the connection is probably broken, so try once more only.
		if err := json.NewEncoder(w).Encode(admissionv1.AdmissionReview{Response: errored(http.StatusInternalServerError, err)}); err != nil {
			admissionLog.Error(err, "still unable to encode and write the InternalServerError response")
		}
		return
	}
	if log := admissionLog.V(5); log.Enabled() {
		res := review.Response
		if res.Result != nil {
			log = log.WithValues("code", res.Result.Code, "reason", res.Result.Reason, "message", res.Result.Message)
		}
		log.Info("wrote response", "requestID", res.UID, "allowed", res.Allowed)
	}
}

// appendAllowedReview appends review as encoding/json encodes it, with the newline, when review
// admits with no message and its strings need no escaping: the reply to nearly every request,
// written without reflection. It reports false for any other review.
func appendAllowedReview(buf []byte, review *admissionv1.AdmissionReview) ([]byte, bool) {
	res := review.Response
	if review.Request != nil || res == nil || !res.Allowed || res.Result == nil || *res.Result != (metav1.Status{Code: http.StatusOK}) ||
		len(res.AuditAnnotations) > 0 || (res.PatchType == nil) != (len(res.Patch) == 0) ||
		(res.PatchType != nil && *res.PatchType != admissionv1.PatchTypeJSONPatch) ||
		!plainJSONString(review.Kind) || !plainJSONString(review.APIVersion) || !plainJSONString(string(res.UID)) ||
		slices.ContainsFunc(res.Warnings, func(w string) bool { return !plainJSONString(w) }) {
		return buf, false
	}
	buf = append(buf, '{')
	if review.Kind != "" {
		buf = append(append(append(buf, `"kind":"`...), review.Kind...), `",`...)
	}
	if review.APIVersion != "" {
		buf = append(append(append(buf, `"apiVersion":"`...), review.APIVersion...), `",`...)
	}
	buf = append(append(buf, `"response":{"uid":"`...), res.UID...)
	buf = append(buf, `","allowed":true,"status":{"metadata":{},"code":200}`...)
	if len(res.Patch) > 0 {
		buf = base64.StdEncoding.AppendEncode(append(buf, `,"patch":"`...), res.Patch)
		buf = append(buf, `","patchType":"JSONPatch"`...)
	}
	if len(res.Warnings) > 0 {
		buf = append(buf, `,"warnings":[`...)
		for i, w := range res.Warnings {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(append(append(buf, '"'), w...), '"')
		}
		buf = append(buf, ']')
	}
	return append(buf, "}}\n"...), true
}

// plainJSONString reports whether encoding/json writes s as it is, between quotes: printable
// ASCII without the characters it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func requestLog(log logr.Logger, req *admissionv1.AdmissionRequest) logr.Logger {
	return log.WithValues("namespace", req.Namespace, "name", req.Name,
		"resource", req.Resource, "user", req.UserInfo.Username, "requestID", req.UID)
}

func errored(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: code, Message: err.Error()}}
}

func allowed(warnings admission.Warnings) admissionv1.AdmissionResponse {
	return admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
}

// object is a pointer to a custom resource type the webhooks admit.
type object[T any] interface {
	*T
	runtime.Object
	GetName() string
	GetNamespace() string
}

// ofKind reports whether obj, read from a review, is an object of kind gvk; when it is not, or
// is missing, the request is left to controller-runtime.
func ofKind[T any, PT object[T]](obj PT, gvk schema.GroupVersionKind) bool {
	return obj != nil && obj.GetObjectKind().GroupVersionKind() == gvk
}

// defaultingWebhook is the mutating webhook of a kind: patch defaults the object, read from the
// review in body, and returns the JSON patch that makes the defaulted object of the object as
// sent; nil when nothing changed.
func defaultingWebhook[T any, PT object[T]](scheme *runtime.Scheme, defaults func(PT), patch func(body []byte, obj PT) ([]byte, error)) *admissionWebhook {
	gvk := kindOf[T, PT](scheme)
	review := reviewing(true, func(_ context.Context, body []byte, req *admissionRequest[PT, rawJSON]) (admissionv1.AdmissionResponse, bool) {
		if req.Operation == admissionv1.Delete {
			return allowed(nil), true
		}
		if !ofKind(req.Object, gvk) {
			return admissionv1.AdmissionResponse{}, false
		}
		p, err := patch(body, req.Object)
		if err != nil {
			return admissionv1.AdmissionResponse{}, false
		}
		response := allowed(nil)
		response.Patch = p
		return response, true
	})
	return newAdmissionWebhook(review, admission.WithDefaulter[PT](scheme, defaulterFunc[T, PT](defaults)).Handler)
}

// validatingWebhook is the validating webhook of a kind: validate judges an object against the
// stored one on update, nil on create, and its violations are refused in one 422 Invalid status.
func validatingWebhook[T any, PT object[T]](scheme *runtime.Scheme, j judge, validate func(p *Policy, old, obj PT) (field.ErrorList, admission.Warnings)) *admissionWebhook {
	gvk := kindOf[T, PT](scheme)
	review := reviewing(false, func(ctx context.Context, _ []byte, req *admissionRequest[PT, PT]) (admissionv1.AdmissionResponse, bool) {
		obj, old := req.Object, req.OldObject
		switch req.Operation {
		case admissionv1.Connect:
			return allowed(nil), true
		case admissionv1.Create:
			old = nil
		case admissionv1.Update:
			if !ofKind(old, gvk) {
				return admissionv1.AdmissionResponse{}, false
			}
		default:
			// Deletion is allowed once the object decodes, and an unknown operation is a bad
			// request, both as controller-runtime answers them.
			return admissionv1.AdmissionResponse{}, false
		}
		if !ofKind(obj, gvk) {
			return admissionv1.AdmissionResponse{}, false
		}
		policy := j.current()
		errs, warnings := validate(policy, old, obj)
		errs, warnings, err := j.judge(ctx, policy, denial{gvk: gvk, namespace: req.Namespace, name: obj.GetName(),
			operation: string(req.Operation), dryRun: ptr.Deref(req.DryRun, false)}, errs, warnings)
		if err != nil {
			// As controller-runtime answers a validator's error that is no API status.
			return admission.Denied(err.Error()).AdmissionResponse, true
		}
		if len(errs) == 0 {
			return allowed(warnings), true
		}
		status := invalidStatus(gvk.GroupKind(), obj.GetName(), errs)
		return admissionv1.AdmissionResponse{Result: &status, Warnings: warnings}, true
	})
	return newAdmissionWebhook(review, admission.WithValidator[PT](scheme, validatorFunc[T, PT]{gvk: gvk, validate: validate, judge: j}).Handler)
}

func kindOf[T any, PT object[T]](scheme *runtime.Scheme) schema.GroupVersionKind {
	gvks, _, err := scheme.ObjectKinds(PT(new(T)))
	if err != nil || len(gvks) != 1 {
		panic(fmt.Sprintf("webhooks: %T must be registered in the scheme under one kind: %v", PT(nil), err))
	}
	return gvks[0]
}

// defaulterFunc serves a defaulting rule through controller-runtime.
type defaulterFunc[T any, PT object[T]] func(PT)

// Default implements admission.Defaulter.
func (f defaulterFunc[T, PT]) Default(_ context.Context, obj PT) error {
	f(obj)
	return nil
}

// validatorFunc serves a validation rule through controller-runtime.
type validatorFunc[T any, PT object[T]] struct {
	gvk      schema.GroupVersionKind
	validate func(p *Policy, old, obj PT) (field.ErrorList, admission.Warnings)
	judge    judge
}

// ValidateCreate implements admission.Validator.
func (v validatorFunc[T, PT]) ValidateCreate(ctx context.Context, obj PT) (admission.Warnings, error) {
	return v.answer(ctx, admissionv1.Create, nil, obj)
}

// ValidateUpdate implements admission.Validator.
func (v validatorFunc[T, PT]) ValidateUpdate(ctx context.Context, old, obj PT) (admission.Warnings, error) {
	return v.answer(ctx, admissionv1.Update, old, obj)
}

// answer validates obj, and judges, counts and records what the rules found, as the lean path does.
func (v validatorFunc[T, PT]) answer(ctx context.Context, op admissionv1.Operation, old, obj PT) (admission.Warnings, error) {
	policy := v.judge.current()
	errs, warnings := v.validate(policy, old, obj)
	d := denial{gvk: v.gvk, namespace: obj.GetNamespace(), name: obj.GetName(), operation: string(op)}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		d.namespace, d.dryRun = req.Namespace, ptr.Deref(req.DryRun, false)
	}
	errs, warnings, err := v.judge.judge(ctx, policy, d, errs, warnings)
	if err != nil {
		return nil, err
	}
	return admissionResult(v.gvk.GroupKind(), obj.GetName(), errs, warnings)
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (validatorFunc[T, PT]) ValidateDelete(context.Context, PT) (admission.Warnings, error) {
	return nil, nil
}

// jsonPatch builds an RFC 6902 JSON patch.
type jsonPatch []byte

// add sets the member at path of an object, whether or not it is there.
func (p *jsonPatch) add(path string, value []byte) { p.operation("add", path, value) }

// replace sets the element at path of a list, before which "add" would insert.
func (p *jsonPatch) replace(path string, value []byte) { p.operation("replace", path, value) }

func (p *jsonPatch) operation(op, path string, value []byte) {
	if len(*p) == 0 {
		*p = append(*p, '[')
	} else {
		*p = append(*p, ',')
	}
	*p = append(*p, `{"op":"`...)
	*p = append(*p, op...)
	*p = append(*p, `","path":"`...)
	*p = append(*p, path...)
	*p = append(*p, `","value":`...)
	*p = append(*p, value...)
	*p = append(*p, '}')
}

// bytes returns the patch, or nil when it has no operation.
func (p jsonPatch) bytes() []byte {
	if len(p) == 0 {
		return nil
	}
	return append(p, ']')
}

// jsonInt32 is the JSON of an optional integer.
func jsonInt32(n *int32) []byte {
	if n == nil {
		return []byte("null")
	}
	return strconv.AppendInt(nil, int64(*n), 10)
}

// jsonIntOrString is the JSON of an int-or-string, as intstr.IntOrString.MarshalJSON writes it.
func jsonIntOrString(v intstr.IntOrString) []byte {
	if v.Type == intstr.String {
		return jsonString(v.StrVal)
	}
	return strconv.AppendInt(nil, int64(v.IntVal), 10)
}

// jsonString is the JSON of a string.
func jsonString[S ~string](s S) []byte {
	value, _ := json.Marshal(string(s)) // a string always marshals
	return value
}

// objectShape is what a defaulting patch needs to know of an object as sent, beyond its decoded
// value, when that value cannot tell: whether spec is a JSON object (rather than missing or
// null), and which elements of spec.ports are.
type objectShape struct {
	Spec *struct {
		Ports []*struct{} `json:"ports"`
	} `json:"spec"`
}

// shapeOf reads the shape of the object of the review in body.
func shapeOf(body []byte) (objectShape, error) {
	var review struct {
		Request struct {
			Object objectShape `json:"object"`
		} `json:"request"`
	}
	err := kjson.UnmarshalCaseSensitivePreserveInts(body, &review)
	return review.Request.Object, err
}

// specPatch returns the patch that sets spec whole, for an object sent without one (or with
// null), which has no spec to add a field to; nil when defaulting left spec empty.
func specPatch[S any](spec *S) ([]byte, error) {
	if isZero(spec) {
		return nil, nil
	}
	value, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var patch jsonPatch
	patch.add("/spec", value)
	return patch.bytes(), nil
}

func equalInt32(a, b *int32) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

func isZero[T any](v *T) bool {
	return reflect.ValueOf(v).Elem().IsZero()
}

// invalidStatus is the 422 Invalid status that names every violation, as the client sees it.
func invalidStatus(gk schema.GroupKind, name string, errs field.ErrorList) metav1.Status {
	return apierrors.NewInvalid(gk, name, errs).ErrStatus
}
