// Package welcome reconciles Welcome objects into a Deployment running the welcome-web server and
// a Service in front of it.
package welcome

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/reconcile/ownership"
	"github.com/seedlabs/webhook-operator/internal/reconcile/policywatch"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "welcome"

// Reconciler turns a Welcome into its Deployment and Service and reports their state.
type Reconciler struct {
	controller.Deps
	// Image is the welcome-web image used when a Welcome does not set spec.image.
	Image string
}

// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes,verbs=get;list;watch
// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes/status,verbs=get;patch
// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a Welcome asks for and records what they report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	w := &authv1.Welcome{}
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		// The garbage collector removes the owned Deployment and Service.
		return ctrl.Result{}, nil
	}
	patch := status.NewPatch(r.Client, w)
	defer func() { reterr = patch.Apply(ctx, w, reterr) }()

	children, err := ownership.ObserveChildren(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(w), "Welcome", w.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The pods of an earlier spec keep serving while a new one is held back.
	w.Status.ReadyReplicas = children.DeploymentStatus().ReadyReplicas
	desired, errs, err := guard.Check(ctx, r.Guard, w, webhooks.WelcomeV1)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		status.InvalidSpec(r.Recorder, w, errs)
		return ctrl.Result{}, nil
	}
	if conflict := children.Conflict(); conflict != "" {
		status.NameConflict(r.Recorder, w, conflict)
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, nil
	}

	owner := resources.ControllerReference(authv1.GroupVersion.String(), "Welcome", w.Name, w.UID)
	deployment := resources.WelcomeDeployment(desired, r.Image).WithOwnerReferences(owner)
	service := resources.WelcomeService(desired).WithOwnerReferences(owner)
	if err := children.Apply(ctx, r.Client, deployment, service); err != nil {
		return ctrl.Result{}, status.ApplyFailed(r.Recorder, w, err)
	}
	children.RecordCreated(r.Recorder, w, fmt.Sprintf("%s running %s with %s", w.Name, resources.WelcomeImage(desired, r.Image), message.Replicas(*desired.Spec.Replicas)),
		fmt.Sprintf("%s of type %s on port %d", w.Name, desired.Spec.ServiceType, *desired.Spec.Port))

	rollout, err := status.ObserveRollout(ctx, r.Client, r.APIReader, deployment, resources.WelcomeSelector(w.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	setRolloutStatus(w, desired, rollout, service)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: it reconciles a Welcome when its spec, its status
// (controller.WatchStatus) or its conversion-data annotation changes (the password, which the
// guard judges: the one annotation the cache keeps), when its Deployment or Service changes, so
// drift is put back, and when one of its pods turns unable to start a container or able again.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := controller.WatchPods(ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&authv1.Welcome{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}), resources.WelcomeApp)
	b = controller.WatchStatus(b, &authv1.Welcome{})
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, r.Guard.Policy, &authv1.WelcomeList{}).Complete(r)
}
