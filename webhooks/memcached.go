package webhooks

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
)

// The webhooks of a Memcached: DefaultMemcached, and ValidateMemcached or
// validateSizeChange for a scale, called at v1 for both versions: kube-apiserver converts a
// v1alpha1 Memcached to v1 in process (conversion None), calling no webhook. The scale webhook keeps
// the path the previous release serves: a Scale is autoscaling/v1 at either version. Their
// matchConditions (config/webhook/match-conditions/match_conditions.yaml) call them only for the
// requests they could answer otherwise than with a plain allow.
// +kubebuilder:webhook:path=/mutate-cache-seedlabs-dev-v1-memcached,mutating=true,failurePolicy=fail,sideEffects=None,groups=cache.seedlabs.dev,resources=memcacheds,verbs=create;update,versions=v1,name=mmemcached.cache.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-cache-seedlabs-dev-v1-memcached,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=cache.seedlabs.dev,resources=memcacheds,verbs=create;update,versions=v1,name=vmemcached.cache.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-cache-seedlabs-dev-v1alpha1-memcached-scale,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=cache.seedlabs.dev,resources=memcacheds/scale,verbs=update,versions=v1,name=vmemcachedscale.cache.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent

// MemcachedV1 is the admission of a Memcached at v1, the version stored, whose webhooks the
// markers above route.
var MemcachedV1 = Kind[cachev1.Memcached, *cachev1.Memcached]{
	GVK:     cachev1.GroupVersion.WithKind("Memcached"),
	Default: DefaultMemcached,
	// No rule of a Memcached reads the policy's image rules or caps.
	Validate: func(old, m *cachev1.Memcached, _ *Policy) (field.ErrorList, []Warning) {
		return ValidateMemcached(old, m)
	},
}

// Memcached is the admission of a Memcached at v1alpha1, deprecated, which the previous release's
// configuration calls: MemcachedV1's rules, on the object at v1, which has the same fields (the
// conversion below does not compile otherwise).
var Memcached = Kind[cachev1alpha1.Memcached, *cachev1alpha1.Memcached]{
	GVK: cachev1alpha1.GroupVersion.WithKind("Memcached"),
	Default: func(m *cachev1alpha1.Memcached) {
		hub := memcachedV1(m)
		DefaultMemcached(hub)
		m.Spec = cachev1alpha1.MemcachedSpec(hub.Spec)
	},
	Validate: func(old, m *cachev1alpha1.Memcached, policy *Policy) (field.ErrorList, []Warning) {
		return MemcachedV1.Validate(memcachedV1(old), memcachedV1(m), policy)
	},
}

// memcachedV1 is m at v1; nil for nil.
func memcachedV1(m *cachev1alpha1.Memcached) *cachev1.Memcached {
	if m == nil {
		return nil
	}
	return &cachev1.Memcached{ObjectMeta: m.ObjectMeta, Spec: cachev1.MemcachedSpec(m.Spec), Status: cachev1.MemcachedStatus(m.Status)}
}

// memcachedScalePath serves the validating webhook of the memcacheds/scale subresource.
const memcachedScalePath = "/validate-cache-seedlabs-dev-v1alpha1-memcached-scale"

var (
	memcachedGK  = cachev1.GroupVersion.WithKind("Memcached").GroupKind()
	memcachedGVR = cachev1.GroupVersion.WithResource("memcacheds")
)

// DefaultMemcached fills the fields of a Memcached the user left unset: size and containerPort.
func DefaultMemcached(m *cachev1.Memcached) {
	if m.Spec.Size == nil {
		m.Spec.Size = ptr.To(cachev1.DefaultSize)
	}
	if m.Spec.ContainerPort == nil {
		m.Spec.ContainerPort = ptr.To(cachev1.DefaultContainerPort)
	}
}

// ValidateMemcached returns every rule the Memcached breaks, and warnings for what is allowed but
// unwise. old is nil on create; on update, violations old already had are not held against the
// update, and keeping or lowering the size is always allowed.
func ValidateMemcached(old, m *cachev1.Memcached) (field.ErrorList, []Warning) {
	path := field.NewPath("spec")
	var oldSize *int32
	if old != nil {
		oldSize = old.Spec.Size
	}
	errs, warnings := validateSizeChange(oldSize, m.Spec.Size, path.Child("size"))
	errs = append(tagged(validateObjectName(m.Name), MemcachedObjectName), errs...)
	if m.Spec.ContainerPort != nil {
		errs = append(errs, tagged(validatePort(*m.Spec.ContainerPort, path.Child("containerPort")), MemcachedContainerPort)...)
	}
	if old != nil && len(errs) > 0 {
		oldErrs := validateObjectName(old.Name)
		if old.Spec.ContainerPort != nil {
			oldErrs = append(oldErrs, validatePort(*old.Spec.ContainerPort, path.Child("containerPort"))...)
		}
		errs = ratchet(errs, oldErrs, old, m)
	}
	return errs, warnings
}

// validateSizeChange checks a size against the allowed range. Keeping the stored size is always
// allowed, so that an object stored out of range (before the rule existed) can still have its
// metadata and other fields edited; lowering a size above the range is allowed too, so that the
// pool can be scaled down step by step. Any other size outside the range is refused.
func validateSizeChange(old, size *int32, path *field.Path) (field.ErrorList, []Warning) {
	if size == nil || (*size >= cachev1.MinSize && *size <= cachev1.MaxSize) {
		return nil, nil
	}
	if old != nil && *size == *old && *size < cachev1.MinSize {
		return nil, nil
	}
	if old != nil && *size <= *old && *size >= cachev1.MinSize {
		return nil, []Warning{warning(MemcachedSizeScaleDown,
			"%s is %d, still above %d: the pool is not rolled out until it is at most %d",
			path, *size, cachev1.MaxSize, cachev1.MaxSize)}
	}
	return field.ErrorList{field.Invalid(path, *size,
		fmt.Sprintf("must be between %d and %d", cachev1.MinSize, cachev1.MaxSize)).WithOrigin(string(MemcachedSize))}, nil
}

// memcachedScaleValidator guards the scale subresource, which `kubectl scale` and autoscalers
// write: the request carries an autoscaling/v1 Scale, whose spec.replicas is the Memcached's
// spec.size, so it is held to the same range, judged under the same policy and refused in the
// same words, by a validating webhook of its own. Any other request is allowed untouched.
type memcachedScaleValidator struct {
	validator admission.Handler
}

func newMemcachedScaleValidator(scheme *runtime.Scheme, j judge) memcachedScaleValidator {
	return memcachedScaleValidator{validator: validator[autoscalingv1.Scale, *autoscalingv1.Scale]{kind: kindOf[autoscalingv1.Scale, *autoscalingv1.Scale](scheme), rule: validatorFunc[autoscalingv1.Scale, *autoscalingv1.Scale]{
		gvk: cachev1.GroupVersion.WithKind(memcachedGK.Kind), judge: j,
		validate: func(_ *Policy, old, scale *autoscalingv1.Scale) (field.ErrorList, []Warning) {
			var oldSize *int32
			if old != nil {
				oldSize = &old.Spec.Replicas
			}
			errs, warnings := validateSizeChange(oldSize, &scale.Spec.Replicas, field.NewPath("spec", "size"))
			return errs, warnings
		},
	}}}
}

// Handle implements admission.Handler.
func (v memcachedScaleValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update || req.SubResource != "scale" ||
		req.Resource.Group != memcachedGVR.Group || req.Resource.Resource != memcachedGVR.Resource {
		return admission.Allowed("")
	}
	return v.validator.Handle(ctx, req)
}
