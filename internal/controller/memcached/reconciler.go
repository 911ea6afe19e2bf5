// Package memcached reconciles Memcached objects into a Deployment running a pool of memcached
// instances and a ClusterIP Service in front of it.
package memcached

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/reconcile/ownership"
	"github.com/seedlabs/webhook-operator/internal/reconcile/policywatch"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const (
	// ControllerName names the controller in logs and metrics.
	ControllerName = "memcached"
)

// Reconciler turns a Memcached into its Deployment and Service and reports their state.
type Reconciler struct {
	controller.Deps
	// Image is the memcached image every Memcached runs.
	Image string
}

// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds/status,verbs=get;patch
// +kubebuilder:rbac:groups=cache.seedlabs.dev,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a Memcached asks for and records what they report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m := &cachev1.Memcached{}
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
	patch := status.NewPatch(r.Client, m)
	defer func() { reterr = patch.Apply(ctx, m, reterr) }()

	current, err := r.observe(ctx, m)
	if err != nil {
		return ctrl.Result{}, err
	}
	setPoolStatus(m, current.DeploymentStatus().Replicas, current.pods)
	desired, errs, err := guard.Check(ctx, r.Guard, m, webhooks.MemcachedV1)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		status.InvalidSpec(r.Recorder, m, errs)
		return ctrl.Result{}, nil
	}
	if conflict := current.Conflict(); conflict != "" {
		status.NameConflict(r.Recorder, m, conflict)
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, nil
	}

	owner := resources.ControllerReference(cachev1.GroupVersion.String(), "Memcached", m.Name, m.UID)
	deployment := resources.MemcachedDeployment(desired, r.Image).WithOwnerReferences(owner)
	service := resources.MemcachedService(desired).WithOwnerReferences(owner)
	if err := current.ApplyDeployment(ctx, r.Client, deployment); err != nil {
		return ctrl.Result{}, status.ApplyFailed(r.Recorder, m, err)
	}
	// Recorded at once: once the cache sees the new replicas, the change is no longer visible.
	r.recordScale(m, current.Deployment, *desired.Spec.Size)
	if err := current.ApplyService(ctx, r.Client, service); err != nil {
		return ctrl.Result{}, status.ApplyFailed(r.Recorder, m, err)
	}
	current.RecordCreated(r.Recorder, m, fmt.Sprintf("%s with %d memcached instances", m.Name, *desired.Spec.Size),
		fmt.Sprintf("%s on port %d", m.Name, *desired.Spec.ContainerPort))

	rollout, err := status.ObserveRollout(ctx, r.Client, r.APIReader, deployment, resources.MemcachedSelector(m.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	setPoolStatus(m, rollout.Status.Replicas, current.pods)
	status.SetRollout(m, rollout)
	return ctrl.Result{}, nil
}

// observed is what exists of a Memcached's Deployment, Service and pods before anything is applied.
type observed struct {
	ownership.Children
	pods []corev1.Pod
}

// observe reads the Memcached's Deployment and Service, from the cache or, for objects the cache
// cannot hold, from the API server, and its pods from the cache.
func (r *Reconciler) observe(ctx context.Context, m *cachev1.Memcached) (observed, error) {
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

// recordScale records an Event when the apply changed the Deployment's replicas, as judged from
// the cached Deployment before the apply.
//
// The cache may lag behind the apply of a previous reconcile by a moment; an Event recorded twice
// then is folded into one Event series by the events.k8s.io recorder.
func (r *Reconciler) recordScale(m *cachev1.Memcached, before *appsv1.Deployment, size int32) {
	if before == nil {
		return
	}
	if was := ptr.Deref(before.Spec.Replicas, 1); was != size {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, conditions.EventReasonScaled, "Scale",
			"scaled Deployment %s from %d to %d memcached instances", m.Name, was, size)
	}
}

// removeFinalizer takes cachev1.Finalizer off m, where an earlier version of the operator
// put it, with a merge patch carrying m's resourceVersion. metadata.finalizers is a plain list
// that a merge patch replaces whole, so the resourceVersion precondition keeps it from
// overwriting a finalizer another client added or removed meanwhile: the patch then fails with a
// conflict and the reconcile is retried.
func (r *Reconciler) removeFinalizer(ctx context.Context, m *cachev1.Memcached) error {
	base := m.DeepCopy()
	if !controllerutil.RemoveFinalizer(m, cachev1.Finalizer) {
		return nil
	}
	if err := r.Patch(ctx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of Memcached %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller. A Memcached is reconciled when it is first seen and
// when its generation changes, which covers spec changes, the scale subresource and the start of
// the deletion of an object that still carries an earlier version's finalizer (the API server
// bumps metadata.generation when it sets deletionTimestamp on an object with finalizers), and
// when its status changes (controller.WatchStatus); when its Deployment or Service changes, so
// drift is put back and the status follows the rollout; and when one of its pods comes, goes or
// stops being a member of the pool, so status.nodes follows the pods, or turns unable to start a
// container or able again.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := controller.WatchPods(ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&cachev1.Memcached{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}), resources.MemcachedApp, poolMembershipChanged())
	b = controller.WatchStatus(b, &cachev1.Memcached{})
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, r.Guard.Policy, &cachev1.MemcachedList{}).Complete(r)
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
