package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"
)

// validatingWebhook is the validating webhook of a kind: validate judges an object against the
// stored one on update, nil on create, and j refuses what the policy in force enforces of its
// violations in one 422 Invalid status.
func validatingWebhook[T any, PT object[T]](scheme *runtime.Scheme, j judge, validate func(p *Policy, old, obj PT) (field.ErrorList, []Warning)) *admission.Webhook {
	gvk := kindOf[T, PT](scheme)
	return &admission.Webhook{Handler: validator[T, PT]{kind: gvk, rule: validatorFunc[T, PT]{gvk: gvk, validate: validate, judge: j}}}
}

// validator serves a validation rule as controller-runtime's admission.WithValidator does, with one
// difference: it decodes each object once (decodeObject), where controller-runtime's decoder first
// reads the object's apiVersion and kind to choose its type, one more pass over all of it. For the
// largest objects kube-apiserver sends (3 MiB) that pass took an eighth to a quarter of the
// handler's time (docs/performance.md). Its answers are controller-runtime's, which the fuzz targets of the kinds
// hold it to (checkAdmission), but for objects kube-apiserver never sends (decodeObject).
type validator[T any, PT object[T]] struct {
	// kind is the kind of the objects decoded.
	kind schema.GroupVersionKind
	rule validatorFunc[T, PT]
}

// Handle implements admission.Handler.
func (v validator[T, PT]) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	obj := PT(new(T))
	var warnings admission.Warnings
	var err error
	switch req.Operation {
	case admissionv1.Connect:
	case admissionv1.Create:
		if err := decodeObject(req.Object.Raw, v.kind, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		warnings, err = v.rule.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		old := PT(new(T))
		if err := decodeObject(req.Object.Raw, v.kind, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := decodeObject(req.OldObject.Raw, v.kind, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		warnings, err = v.rule.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete:
		// The object deleted is the old object.
		if err := decodeObject(req.OldObject.Raw, v.kind, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		warnings, err = v.rule.ValidateDelete(ctx, obj)
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			result := status.Status()
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Result: &result}}.WithWarnings(warnings...)
		}
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// decodeObject decodes raw, an object of a review, into obj, whose kind is kind, as
// controller-runtime's admission.Decoder does (sigs.k8s.io/json's case-sensitive decoding) in one
// pass instead of two: it knows the type, so it checks the apiVersion and kind raw names once
// decoded instead of reading them first to choose one. An object naming another kind is an error,
// as it is to the Decoder; so is an empty one. The apiVersion and kind raw leaves out are the type's,
// as the Decoder defaults them (apimachinery's json serializer, gvkWithDefaults).
//
// One difference remains, for objects kube-apiserver never sends: the Decoder reads the apiVersion
// and kind with encoding/json, which matches a key whatever its case ("Kind", or with the Kelvin
// sign), and the object with sigs.k8s.io/json, which does not. decodeObject reads both as
// sigs.k8s.io/json does, and as kube-apiserver does: such a key is an unknown field, not the kind.
// The fuzz targets hold the webhooks to controller-runtime's answers on every other object.
func decodeObject(raw []byte, kind schema.GroupVersionKind, obj runtime.Object) error {
	if len(raw) == 0 {
		return errors.New("there is no content to decode")
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
		return err
	}
	named := obj.GetObjectKind().GroupVersionKind()
	if named.Kind == "" {
		named.Kind = kind.Kind
	}
	if named.Version == "" && (named.Group == "" || named.Group == kind.Group) {
		named.Group, named.Version = kind.Group, kind.Version
	}
	if named != kind {
		return fmt.Errorf("the object is a %s, not a %s", named, kind)
	}
	return nil
}

func kindOf[T any, PT object[T]](scheme *runtime.Scheme) schema.GroupVersionKind {
	gvks, _, err := scheme.ObjectKinds(PT(new(T)))
	if err != nil || len(gvks) != 1 {
		panic(fmt.Sprintf("webhooks: %T must be registered in the scheme under one kind: %v", PT(nil), err))
	}
	return gvks[0]
}

// validatorFunc serves a validation rule through controller-runtime.
type validatorFunc[T any, PT object[T]] struct {
	gvk      schema.GroupVersionKind
	validate func(p *Policy, old, obj PT) (field.ErrorList, []Warning)
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

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (validatorFunc[T, PT]) ValidateDelete(context.Context, PT) (admission.Warnings, error) {
	return nil, nil
}

// answer validates obj, and judges, counts and records what the rules found. Once the request's
// context is done (kube-apiserver gave up waiting, or its timeout passed), nothing more is done:
// no one reads the answer.
func (v validatorFunc[T, PT]) answer(ctx context.Context, op admissionv1.Operation, old, obj PT) (admission.Warnings, error) {
	policy := v.judge.current()
	errs, warnings := v.validate(policy, old, obj)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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

// admissionResult turns violations into the error a webhook returns: one 422 Invalid status naming
// every field, which the API server passes to the client with a cause per violation (Refusal), and
// warnings as many as an answer carries.
func admissionResult(gk schema.GroupKind, name string, errs field.ErrorList, warnings []Warning) (admission.Warnings, error) {
	listed := ListedWarnings(warnings)
	if len(errs) == 0 {
		return listed, nil
	}
	return listed, Refusal(gk, name, errs)
}

// judge is what a validating webhook does with what the rules found: it applies the policy in
// force, counts the answer, and records a refusal.
type judge struct {
	policy     PolicySource
	namespaces Namespaces
	events     *refusalEvents
}

func newJudge(opts Options) judge {
	return judge{policy: opts.Policy, namespaces: opts.Namespaces, events: newRefusalEvents(opts.Recorder, opts.Namespaces)}
}

// current is the policy in force, read once per request so that one answer follows one policy.
func (j judge) current() *Policy { return CurrentPolicy(j.policy) }

// judge applies p to what the rules found in the object of d, counts the answer and records a
// refusal, and returns the violations to refuse and the warnings to send. A namespace whose labels
// an override needs but that cannot be read is an error, which refuses the request.
func (j judge) judge(ctx context.Context, p *Policy, d denial, errs field.ErrorList, warnings []Warning) (field.ErrorList, []Warning, error) {
	verdict, err := p.JudgeIn(ctx, j.namespaces, d.namespace, errs, warnings)
	if err != nil {
		return nil, nil, err
	}
	observe(d.gvk.Kind, d.operation, verdict)
	j.events.record(ctx, d, verdict.Refused)
	return verdict.Refused, verdict.Warnings, nil
}
