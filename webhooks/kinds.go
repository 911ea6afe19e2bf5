package webhooks

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// object is a pointer to a custom resource type the webhooks admit.
type object[T any] interface {
	*T
	runtime.Object
	GetName() string
	GetNamespace() string
}

// Kind is the admission of one kind, said once: its defaulting and validation rules, with one
// signature for every kind, and the paths kube-apiserver calls its webhooks on. Each kind's value
// is in its file, beside its webhook markers. The webhook table (Handlers), the controllers' guard,
// lint and the tests read it: adding a kind is its file and its entry in Kinds.
type Kind[T any, PT object[T]] struct {
	// GVK is the kind's group, version and kind.
	GVK schema.GroupVersionKind
	// Default fills what the CRD's schema cannot default.
	Default func(obj PT)
	// Validate returns every rule obj breaks under policy, and warnings for what is allowed but
	// unwise. old is nil on create; on update, what old already broke is not held against obj.
	Validate func(old, obj PT, policy *Policy) (field.ErrorList, []Warning)
	// bounds, when set, refuses an object past its schema's bounds in the mutating webhook, as the
	// schema refuses it next (bounds.go).
	bounds func(PT) field.ErrorList
}

// MutatePath is the path kube-apiserver calls the kind's mutating webhook on, as kubebuilder names
// it and the kind's marker spells it out.
func (k Kind[T, PT]) MutatePath() string { return "/mutate-" + k.pathSuffix() }

// ValidatePath is the path kube-apiserver calls the kind's validating webhook on.
func (k Kind[T, PT]) ValidatePath() string { return "/validate-" + k.pathSuffix() }

// pathSuffix is the kind in its webhooks' paths: app-seedlabs-dev-v1-deployobject.
func (k Kind[T, PT]) pathSuffix() string {
	return strings.ReplaceAll(k.GVK.Group, ".", "-") + "-" + k.GVK.Version + "-" + strings.ToLower(k.GVK.Kind)
}

// AnyKind is a Kind for what holds an object of any of them.
type AnyKind interface {
	// Kind is the kind's group, version and kind.
	Kind() schema.GroupVersionKind
	// Matches reports whether obj is an object of the kind.
	Matches(obj runtime.Object) bool
	// DefaultObject defaults obj as the mutating webhook does, and reports false, doing nothing,
	// for an object of another kind.
	DefaultObject(obj runtime.Object) bool
	// Admit defaults obj as the mutating webhook does, and validates it as the validating webhook
	// does a create under policy. It reports false, doing nothing, for an object of another kind.
	Admit(obj runtime.Object, policy *Policy) (errs field.ErrorList, warnings []Warning, ok bool)
	// register adds its webhooks to table, which j judges.
	register(table map[string]*admission.Webhook, scheme *runtime.Scheme, j judge)
	// newObject is an empty object of the kind.
	newObject() runtime.Object
}

// Kinds are the kinds admission defaults and validates, at the version the API server stores and
// the controllers read.
func Kinds() []AnyKind { return []AnyKind{WelcomeV1, MemcachedV1, DeployObject} }

// deprecated are the kinds at the versions still served, deprecated, beside Kinds': at v1alpha1,
// which the API server still serves and the webhook configurations still route a Welcome of
// (docs/upgrade.md). Their webhooks must outlive the version by a release: the release that
// unserves v1alpha1 still serves these paths, which this release's configuration calls, until its
// rollout is done.
func deprecated() []AnyKind { return []AnyKind{Welcome, Memcached} }

// served are the kinds at every version served: Kinds, then deprecated.
func served() []AnyKind { return append(Kinds(), deprecated()...) }

// KindOf is the kind of gvk, at any version served, if admission defaults and validates it.
func KindOf(gvk schema.GroupVersionKind) (AnyKind, bool) {
	for _, k := range served() {
		if k.Kind() == gvk {
			return k, true
		}
	}
	return nil, false
}

// DefaultObject defaults obj by the rules of its kind, and reports false for an object of no kind
// admission knows.
func DefaultObject(obj runtime.Object) bool {
	for _, k := range served() {
		if k.DefaultObject(obj) {
			return true
		}
	}
	return false
}

// Kind implements AnyKind.
func (k Kind[T, PT]) Kind() schema.GroupVersionKind { return k.GVK }

// Matches implements AnyKind.
func (k Kind[T, PT]) Matches(obj runtime.Object) bool {
	_, ok := obj.(PT)
	return ok
}

// DefaultObject implements AnyKind.
func (k Kind[T, PT]) DefaultObject(obj runtime.Object) bool {
	o, ok := obj.(PT)
	if ok {
		k.Default(o)
	}
	return ok
}

// Admit implements AnyKind.
func (k Kind[T, PT]) Admit(obj runtime.Object, policy *Policy) (field.ErrorList, []Warning, bool) {
	o, ok := obj.(PT)
	if !ok {
		return nil, nil, false
	}
	k.Default(o)
	errs, warnings := k.Validate(nil, o, policy)
	return errs, warnings, true
}

func (k Kind[T, PT]) register(table map[string]*admission.Webhook, scheme *runtime.Scheme, j judge) {
	table[k.MutatePath()] = defaultingWebhook(scheme, k.Default, k.bounds)
	table[k.ValidatePath()] = validatingWebhook(scheme, j, func(p *Policy, old, obj PT) (field.ErrorList, []Warning) {
		return k.Validate(old, obj, p)
	})
}

func (k Kind[T, PT]) newObject() runtime.Object { return PT(new(T)) }
