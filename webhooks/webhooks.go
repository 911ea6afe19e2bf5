// Package webhooks holds the admission webhooks: for each kind, its defaulting and validation
// rules as plain functions (<kind>.go) and its Kind (kinds.go); the table of webhooks (this file),
// and the adapters that serve them through controller-runtime (defaulting.go, validating.go, with
// ratchet.go's judgement of an update on what it changes). Beside them, the table holds the
// conversion webhook, controller-runtime's, which converts through each kind's hub version.
//
// The rules make no cluster calls, so the controllers re-run them to refuse a stored spec that
// never passed admission.
package webhooks

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// Options configure the admission webhooks.
type Options struct {
	// Policy is the admission policy in force, read on every request: the actions of the rules,
	// the replica cap and the image policy (the AdmissionPolicy, as it changes). Without one,
	// every rule has its default action, and any registry is allowed.
	Policy PolicySource
	// Namespaces are the namespaces the manager knows: the labels the policy's namespace overrides
	// select, and where a refusal Event may be written.
	Namespaces Namespaces
	// Recorder, when set, records every refusal that is not a dry run as a Warning Event in the
	// refused object's namespace, when Namespaces knows it, within limits per namespace and
	// overall (refusalEvents).
	Recorder events.EventRecorder
}

// Setup registers every admission webhook with the manager's webhook server, which counts and
// times the requests of each path.
func Setup(mgr ctrl.Manager, opts Options) {
	for path, webhook := range Handlers(mgr.GetScheme(), opts) {
		mgr.GetWebhookServer().Register(path, webhook)
	}
}

// Handlers returns every webhook by the path it is called on: the defaulting and validating
// webhooks of each of Kinds and of the deprecated versions, and the validating webhooks of the
// memcacheds/scale subresource and of the AdmissionPolicy at each version, which this release's
// configurations in config/webhook call, or the previous release's do; and the conversion
// webhook, which a CRD that converts by webhook calls. The scheme must know the kinds, each
// version of a kind that converts, and autoscaling/v1 Scale.
func Handlers(scheme *runtime.Scheme, opts Options) map[string]http.Handler {
	handlers := make(map[string]http.Handler)
	for path, webhook := range admissionWebhooks(scheme, opts) {
		handlers[path] = webhook
	}
	// The versions convert by their own methods (conversion.Hub, conversion.Convertible), which
	// envtest also reads to tell which CRDs convert; no converter is registered besides.
	// controller-runtime's handler reads any body whole: the cap keeps a caller from making it.
	handlers[ConvertPath] = http.MaxBytesHandler(conversion.NewWebhookHandler(scheme, conversion.NewRegistry()), MaxConversionReviewBytes)
	return handlers
}

// ConvertPath is the conversion webhook's path, where a CRD's spec.conversion.webhook sends
// kube-apiserver's ConversionReviews.
const ConvertPath = "/convert"

// MaxConversionReviewBytes is the largest ConversionReview the conversion webhook reads: what
// controller-runtime reads of an AdmissionReview. Past it, the answer is 400. kube-apiserver 1.37
// sends the objects of a LIST one to a review (test/integration/conversion_test.go serves a page of
// 8 MB), and an object is at most 3 MiB; a review of a whole page of 500 Welcomes as kubectl
// applies them and the controller reports them would take a fifth of it.
const MaxConversionReviewBytes = 7 << 20

// admissionWebhooks are the webhooks of Handlers, served by controller-runtime: it reads the
// AdmissionReview, decodes the objects, recovers a panic into a 500 answer and refuses a body over
// its size limit (the defaulting patch is the defaulter's own: defaulting.go).
func admissionWebhooks(scheme *runtime.Scheme, opts Options) map[string]*admission.Webhook {
	j := newJudge(opts)
	table := map[string]*admission.Webhook{
		memcachedScalePath: {Handler: newMemcachedScaleValidator(scheme, j)},
		admissionPolicyPath: validatingWebhook(scheme, judge{},
			func(_ *Policy, _, p *policyv1.AdmissionPolicy) (field.ErrorList, []Warning) {
				return ValidateAdmissionPolicy(p), nil
			}),
		admissionPolicyV1alpha1Path: validatingWebhook(scheme, judge{},
			func(_ *Policy, _, p *policyv1alpha1.AdmissionPolicy) (field.ErrorList, []Warning) {
				return ValidateAdmissionPolicy(admissionPolicyV1(p)), nil
			}),
	}
	for _, k := range served() {
		k.register(table, scheme, j)
	}
	return table
}
