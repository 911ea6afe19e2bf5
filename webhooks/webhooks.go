// Package webhooks holds the admission webhooks: for each kind, its defaulting and validation
// rules as plain functions, and the adapters that serve them through controller-runtime.
//
// The rules make no cluster calls, so the controllers re-run them to refuse a stored spec that
// never passed admission.
package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// Options configure the admission webhooks.
type Options struct {
	// ImagePolicy is what the image of a DeployObject, and of a Welcome that sets one, must
	// satisfy beyond a pinned reference.
	// It is the image policy of the default policy, when Policy is not set.
	ImagePolicy ImagePolicy
	// Policy, when set, is the admission policy in force, read on every request: the actions of
	// the rules and the image policy (the AdmissionPolicy, as it changes).
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

// Handlers returns every admission webhook by the path the webhook configurations in
// config/webhook call it on: the defaulting and validating webhooks of each of Kinds, the
// validating webhooks of the memcacheds/scale subresource and of the AdmissionPolicy. The scheme
// must know the kinds and autoscaling/v1 Scale.
func Handlers(scheme *runtime.Scheme, opts Options) map[string]http.Handler {
	handlers := make(map[string]http.Handler)
	for path, webhook := range admissionWebhooks(scheme, opts) {
		handlers[path] = webhook
	}
	return handlers
}

// admissionWebhooks are the webhooks of Handlers, served by controller-runtime: it reads the
// AdmissionReview, decodes the objects, recovers a panic into a 500 answer and refuses a body over
// its size limit (the defaulting patch is the defaulter's own: defaulting.go).
func admissionWebhooks(scheme *runtime.Scheme, opts Options) map[string]*admission.Webhook {
	j := newJudge(opts)
	table := map[string]*admission.Webhook{
		memcachedScalePath: {Handler: newMemcachedScaleValidator(scheme, j)},
		admissionPolicyPath: validatingWebhook(scheme, judge{},
			func(_ *Policy, _, p *policyv1alpha1.AdmissionPolicy) (field.ErrorList, admission.Warnings) {
				return ValidateAdmissionPolicy(p), nil
			}),
	}
	for _, k := range Kinds() {
		k.register(table, scheme, j)
	}
	return table
}

// object is a pointer to a custom resource type the webhooks admit.
type object[T any] interface {
	*T
	runtime.Object
	GetName() string
	GetNamespace() string
}

// validatingWebhook is the validating webhook of a kind: validate judges an object against the
// stored one on update, nil on create, and j refuses what the policy in force enforces of its
// violations in one 422 Invalid status.
func validatingWebhook[T any, PT object[T]](scheme *runtime.Scheme, j judge, validate func(p *Policy, old, obj PT) (field.ErrorList, admission.Warnings)) *admission.Webhook {
	return admission.WithValidator[PT](scheme, validatorFunc[T, PT]{gvk: kindOf[T, PT](scheme), validate: validate, judge: j})
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

// ratchet drops from errs every violation the old object already had, so that an update is judged
// only on what it changes: an object stored before a rule existed (or before policy tightened) can
// still have its other fields and its metadata edited. oldErrs is nil on create.
//
// A violation is the old one only if the value at its field is unchanged too. The error alone does
// not say so: a Forbidden or Required error carries no bad value, and many others name a part of
// what they judge, so a secretKeyRef repointed to another Secret, or a blank name replaced by
// another blank, would be the same error at the same field. A violation whose field does not
// resolve in both objects (valueAt) is kept.
func ratchet(errs, oldErrs field.ErrorList, old, obj runtime.Object) field.ErrorList {
	if len(oldErrs) == 0 {
		return errs
	}
	known := make(map[string]bool, len(oldErrs))
	for _, e := range oldErrs {
		known[violationKey(e)] = true
	}
	unchanged := unchangedAt(old, obj)
	kept := errs[:0:0]
	for _, e := range errs {
		if !known[violationKey(e)] || !unchanged(e.Field) {
			kept = append(kept, e)
		}
	}
	return kept
}

// violationKey tells violations apart by type, field and bad value.
func violationKey(e *field.Error) string {
	return fmt.Sprintf("%s\x00%s\x00%#v", e.Type, e.Field, e.BadValue)
}

// unchangedAt reports whether the value at a field path, as field.Path prints it, is semantically
// the same in old and obj. Both are converted to unstructured on the first call only, so an update
// that keeps no violation does not pay for it.
func unchangedAt(old, obj runtime.Object) func(path string) bool {
	objects := sync.OnceValues(func() (map[string]any, map[string]any) {
		before, errBefore := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
		after, errAfter := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if errBefore != nil || errAfter != nil {
			return nil, nil
		}
		return before, after
	})
	return func(path string) bool {
		before, after := objects()
		if before == nil || after == nil {
			return false
		}
		was, resolved := valueAt(before, "."+path)
		is, resolvedToo := valueAt(after, "."+path)
		return resolved && resolvedToo && equality.Semantic.DeepEqual(was, is)
	}
}

// valueAt finds the value at path in v, an unstructured object, where path is a field path as
// field.Path prints it, each step led by its separator: ".spec.env[2].valueFrom",
// ".metadata.labels[app.kubernetes.io/name]". A field or key the object lacks is nil, and so is
// everything under it. It fails where the object has another shape than the path (a field of a
// list or of a scalar, an index past a list's end), and where the path reads two ways: a map key
// may hold '.', '[' and ']', so a key is matched against the map's own keys, never cut out of the
// path, and a path that resolves through more than one of them is not resolved.
func valueAt(v any, path string) (any, bool) {
	if path == "" || v == nil {
		return v, true
	}
	switch v := v.(type) {
	case map[string]any:
		if rest, isField := strings.CutPrefix(path, "."); isField {
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			return valueAt(v[rest[:end]], rest[end:])
		}
		var found any
		matches, resolved := 0, 0
		for key, child := range v {
			rest, isKey := strings.CutPrefix(path, "["+key+"]")
			if !isKey {
				continue
			}
			matches++
			if value, ok := valueAt(child, rest); ok {
				found, resolved = value, resolved+1
			}
		}
		if matches == 0 {
			return nil, strings.HasPrefix(path, "[") && strings.Contains(path, "]")
		}
		return found, resolved == 1
	case []any:
		rest, isIndex := strings.CutPrefix(path, "[")
		end := strings.IndexByte(rest, ']')
		if !isIndex || end < 0 {
			return nil, false
		}
		i, err := strconv.Atoi(rest[:end])
		if err != nil || i < 0 || i >= len(v) {
			return nil, false
		}
		return valueAt(v[i], rest[end+1:])
	}
	return nil, false
}

// admissionResult turns violations into the error a webhook returns: one 422 Invalid status naming
// every field, which the API server passes to the client with a cause per violation (Refusal), and
// warnings as many as an answer carries.
func admissionResult(gk schema.GroupKind, name string, errs field.ErrorList, warnings admission.Warnings) (admission.Warnings, error) {
	warnings = ListedWarnings(warnings)
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, Refusal(gk, name, errs)
}
