// Package memcached reconciles Memcached objects into a Deployment running a pool of memcached
// instances and a ClusterIP Service in front of it.
package memcached

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/controller/apply"
	"github.com/seedlabs/webhook-operator/internal/controller/compliance"
	"github.com/seedlabs/webhook-operator/internal/controller/drift"
	"github.com/seedlabs/webhook-operator/internal/controller/ownership"
	"github.com/seedlabs/webhook-operator/internal/controller/policywatch"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const (
	// ControllerName names the controller in logs and metrics.
	ControllerName = "memcached"
)

// Reasons of the Events the controller records besides the condition reasons of the API.
const (
	// ReasonScaled is recorded when the Deployment's replicas are changed to spec.size.
	ReasonScaled = "Scaled"
)

// Reconciler turns a Memcached into its Deployment and Service and reports their state.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server, past the cache, which holds only the operator's own
	// Deployments and Services: it finds a user's object standing under a Memcached's name.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Policy is the admission policy in force: a spec is not rolled out while it breaks a rule
	// the policy Enforces in its namespace, and is when the policy only Warns or Audits. Nil
	// enforces every rule.
	Policy webhooks.PolicySource
	// Namespaces look up namespace labels for the policy's namespace overrides.
	Namespaces webhooks.NamespaceLabels
	// PolicyChanges, when set, fires when the policy changes, and every object is looked at again.
	PolicyChanges <-chan event.GenericEvent
	// Image is the memcached image every Memcached runs.
	Image string
}

// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds/status,verbs=get;patch
// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a Memcached asks for and records what they report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &cachev1alpha1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.removeFinalizer(ctx, m); err != nil {
		return ctrl.Result{}, err
	}
	if !m.DeletionTimestamp.IsZero() {
		// The garbage collector removes the owned Deployment and Service.
		return ctrl.Result{}, nil
	}

	// A spec stored without passing admission (written before the webhook existed, or with it
	// bypassed) is held to the same rules and never rolled out while it breaks them.
	before := m.DeepCopy()
	desired := m.DeepCopy()
	webhooks.DefaultMemcached(desired)
	errs, _ := webhooks.ValidateMemcached(nil, desired)
	errs, err := webhooks.Enforced(ctx, r.Policy, r.Namespaces, desired.Namespace, errs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The Event of an InvalidSpec says what a spec held back breaks; the audit's is for the rest.
	if err := r.audit(ctx, m, desired, len(errs) == 0); err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		return ctrl.Result{}, r.refuseInvalidSpec(ctx, before, m, errs)
	}

	current, err := r.observe(ctx, m)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(current.Conflicts) > 0 {
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, r.refuseNameConflict(ctx, before, m, current)
	}

	owner := resources.ControllerReference(cachev1alpha1.GroupVersion.String(), "Memcached", m.Name, m.UID)
	deployment := resources.MemcachedDeployment(desired, r.Image).WithOwnerReferences(owner)
	service := resources.MemcachedService(desired).WithOwnerReferences(owner)
	applyOpts := []client.ApplyOption{client.FieldOwner(resources.FieldManager), client.ForceOwnership}
	if err := apply.Apply(ctx, r.Client, current.Deployment, deployment, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, m, current, "Deployment", err)
	}
	r.recordScale(m, current.Deployment, *desired.Spec.Size)
	if err := drift.ReplaceForeignServicePorts(ctx, r.Client, current.Service, service); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, m, current, "Service", err)
	}
	if err := apply.Apply(ctx, r.Client, current.Service, service, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, m, current, "Service", err)
	}
	current.RecordCreated(r.Recorder, m, fmt.Sprintf("%s with %d memcached instances", m.Name, *desired.Spec.Size),
		fmt.Sprintf("%s on port %d", m.Name, *desired.Spec.ContainerPort))

	setRolloutStatus(m, deployment, current.pods)
	return ctrl.Result{}, r.patchStatus(ctx, before, m)
}

// observed is what exists of a Memcached's Deployment, Service and pods before anything is applied.
type observed struct {
	ownership.Children
	pods []corev1.Pod
}

// observe reads the Memcached's Deployment and Service, from the cache or, for objects the cache
// cannot hold, from the API server, and its pods from the cache.
func (r *Reconciler) observe(ctx context.Context, m *cachev1alpha1.Memcached) (observed, error) {
	key := client.ObjectKeyFromObject(m)
	children, err := ownership.ObserveChildren(ctx, r.Client, r.APIReader, key, "Memcached", m.UID)
	o := observed{Children: children}
	if err != nil {
		return o, err
	}

	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(m.Namespace), client.MatchingLabels(resources.MemcachedSelector(m.Name))); err != nil {
		return o, fmt.Errorf("listing the pods of Memcached %s: %w", key, err)
	}
	o.pods = pods.Items
	return o, nil
}

// replicas is the Deployment's status.replicas, or 0 when there is no Deployment.
func (o observed) replicas() int32 {
	if o.Deployment == nil {
		return 0
	}
	return o.Deployment.Status.Replicas
}

// recordScale records an Event when the apply changed the Deployment's replicas, as judged from
// the cached Deployment before the apply.
//
// The cache may lag behind the apply of a previous reconcile by a moment; an Event recorded twice
// then is folded into one Event series by the events.k8s.io recorder.
func (r *Reconciler) recordScale(m *cachev1alpha1.Memcached, before *appsv1.Deployment, size int32) {
	if before == nil {
		return
	}
	if was := ptr.Deref(before.Spec.Replicas, 1); was != size {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, ReasonScaled, "Scale",
			"scaled Deployment %s from %d to %d memcached instances", m.Name, was, size)
	}
}

// refuseInvalidSpec records that the stored spec breaks the admission rules, without applying
// anything.
func (r *Reconciler) refuseInvalidSpec(ctx context.Context, before, m *cachev1alpha1.Memcached, errs field.ErrorList) error {
	current, err := r.observe(ctx, m)
	if err != nil {
		return err
	}
	setPoolStatus(m, current.replicas(), current.pods)
	if setInvalidSpec(m, message.Violations(errs, message.ConditionLimit)) {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, cachev1alpha1.ReasonInvalidSpec, "Validate",
			"%s", message.Note("spec is not rolled out: ", errs))
	}
	return r.patchStatus(ctx, before, m)
}

// refuseNameConflict records that a Deployment or Service of the Memcached's name is someone
// else's, without applying anything.
func (r *Reconciler) refuseNameConflict(ctx context.Context, before, m *cachev1alpha1.Memcached, current observed) error {
	setPoolStatus(m, current.replicas(), current.pods)
	conflict := current.Conflict()
	if setNameConflict(m, message.Truncate(conflict, message.ConditionLimit)) {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, cachev1alpha1.ReasonNameConflict, "Apply",
			"%s", message.Truncate(conflict, message.EventNoteLimit))
	}
	return r.patchStatus(ctx, before, m)
}

// applyFailed records that an object could not be applied and returns the error so that the
// work queue retries with backoff.
func (r *Reconciler) applyFailed(ctx context.Context, before, m *cachev1alpha1.Memcached, current observed, kind string, err error) error {
	err = fmt.Errorf("applying the %s: %w", kind, err)
	setPoolStatus(m, current.replicas(), current.pods)
	if setApplyFailed(m, message.Truncate(err.Error(), message.ConditionLimit)) {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, cachev1alpha1.ReasonApplyFailed, "Apply", "%s",
			message.Truncate(err.Error(), message.EventNoteLimit))
	}
	if statusErr := r.patchStatus(ctx, before, m); statusErr != nil && !apierrors.IsNotFound(statusErr) {
		return errors.Join(err, statusErr)
	}
	return err
}

// removeFinalizer takes cachev1alpha1.Finalizer off m, where an earlier version of the operator
// put it, with a merge patch carrying m's resourceVersion. metadata.finalizers is a plain list
// that a merge patch replaces whole, so the resourceVersion precondition keeps it from
// overwriting a finalizer another client added or removed meanwhile: the patch then fails with a
// conflict and the reconcile is retried.
func (r *Reconciler) removeFinalizer(ctx context.Context, m *cachev1alpha1.Memcached) error {
	base := m.DeepCopy()
	if !controllerutil.RemoveFinalizer(m, cachev1alpha1.Finalizer) {
		return nil
	}
	if err := r.Patch(ctx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of Memcached %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// patchStatus writes m's status when it differs from before.
func (r *Reconciler) patchStatus(ctx context.Context, before, m *cachev1alpha1.Memcached) error {
	if equality.Semantic.DeepEqual(before.Status, m.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the status of Memcached %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// audit reports in the Compliant condition the rules of the admission policy the spec breaks,
// and records an Event when they change and recordEvent is set.
func (r *Reconciler) audit(ctx context.Context, m, desired *cachev1alpha1.Memcached, recordEvent bool) error {
	errs, warnings := webhooks.ValidateMemcached(nil, desired)
	return compliance.Audit(ctx, r.Policy, r.Namespaces, r.Recorder, m, &m.Status.Conditions, errs, warnings, recordEvent)
}

// SetupWithManager registers the controller. A Memcached is reconciled when it is first seen and
// when its generation changes, which covers spec changes, the scale subresource and the start of
// the deletion of an object that still carries an earlier version's finalizer (the API server
// bumps metadata.generation when it sets deletionTimestamp on an object with finalizers); when its Deployment or Service changes, so drift is put back and the status
// follows the rollout; and when one of its pods comes, goes or stops being a member of the pool,
// so status.nodes follows the pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&cachev1alpha1.Memcached{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(memcachedOfPod),
			builder.WithPredicates(poolMembershipChanged()))
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, &cachev1alpha1.MemcachedList{}).Complete(r)
}

// memcachedOfPod maps a memcached pod to the Memcached it runs for, by its instance label.
func memcachedOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	l := pod.GetLabels()
	name := l[resources.LabelInstance]
	if l[resources.LabelName] != resources.MemcachedApp || l[resources.LabelManagedBy] != resources.ManagedBy || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
}

// poolMembershipChanged passes pod creations and deletions, and the updates that can change
// status.nodes: a pod starting to terminate or finishing, or its labels changing. Readiness
// changes reach the Memcached through its Deployment's status.
func poolMembershipChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldPod, okOld := e.ObjectOld.(*corev1.Pod)
			newPod, okNew := e.ObjectNew.(*corev1.Pod)
			if !okOld || !okNew {
				return true
			}
			return isNode(oldPod) != isNode(newPod) || !maps.Equal(oldPod.Labels, newPod.Labels)
		},
	}
}
