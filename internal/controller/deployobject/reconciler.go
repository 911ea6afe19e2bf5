// Package deployobject reconciles DeployObject objects into a Deployment running the object's
// image and a ClusterIP Service with the object's ports.
package deployobject

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/reconcile/ownership"
	"github.com/seedlabs/webhook-operator/internal/reconcile/policywatch"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const (
	// ControllerName names the controller in logs and metrics.
	ControllerName = "deployobject"
)

// Reconciler turns a DeployObject into its Deployment and Service and reports their state.
type Reconciler struct {
	controller.Deps
}

// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects/status,verbs=get;patch
// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a DeployObject asks for and records what they
// report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	d := &appv1.DeployObject{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() {
		// The garbage collector removes the owned Deployment and Service.
		return ctrl.Result{}, nil
	}
	patch := status.NewPatch(r.Client, d)
	defer func() { reterr = patch.Apply(ctx, d, reterr) }()

	children, err := ownership.ObserveChildren(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(d), "DeployObject", d.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The Deployment of an earlier spec, if any, keeps running while a new one is held back.
	mirrorDeploymentStatus(d, children.DeploymentStatus())
	desired, errs, err := guard.Check(ctx, r.Guard, d, webhooks.DeployObject)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		status.InvalidSpec(r.Recorder, d, errs)
		return ctrl.Result{}, nil
	}
	if conflict := children.Conflict(); conflict != "" {
		status.NameConflict(r.Recorder, d, conflict)
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, nil
	}

	owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", d.Name, d.UID)
	deployment := resources.DeployObjectDeployment(desired).WithOwnerReferences(owner)
	service := resources.DeployObjectService(desired).WithOwnerReferences(owner)
	// A new spec's Service is tried first with a server-side dry run, so that a Service the API
	// server refuses never leaves the new pods rolled out behind the old Service's ports. The rules
	// already refuse at admission what the API server would; this holds for a spec that never
	// passed admission, and for whatever the rules missed, at one request per spec change, and
	// per retry of a spec not applied yet (one whose Service was refused is tried again the same
	// way). The dry run gets a configuration of its own: Apply fills the one it is given with the
	// reply.
	if !status.Applied(d) {
		trial := resources.DeployObjectService(desired).WithOwnerReferences(owner)
		if err := children.TryService(ctx, r.Client, trial); err != nil {
			return ctrl.Result{}, status.ApplyFailed(r.Recorder, d, fmt.Errorf("applying the Service: %w", err))
		}
	}
	if err := children.Apply(ctx, r.Client, deployment, service); err != nil {
		return ctrl.Result{}, status.ApplyFailed(r.Recorder, d, err)
	}
	children.RecordCreated(r.Recorder, d, fmt.Sprintf("%s running %s with %s", d.Name, desired.Spec.Image, message.Replicas(*desired.Spec.Replicas)),
		fmt.Sprintf("%s on ports %s", d.Name, portList(desired.Spec.Ports)))

	rollout, err := status.ObserveRollout(ctx, r.Client, r.APIReader, deployment, resources.DeployObjectSelector(d.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	mirrorDeploymentStatus(d, rollout.Status)
	status.SetRollout(d, rollout)
	return ctrl.Result{}, nil
}

// portList describes Service ports for messages, as "http 80/TCP, 53/UDP".
func portList(ports []corev1.ServicePort) string {
	described := make([]string, len(ports))
	for i, p := range ports {
		described[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.Name != "" {
			described[i] = p.Name + " " + described[i]
		}
	}
	return strings.Join(described, ", ")
}

// SetupWithManager registers the controller. A DeployObject is reconciled when its generation
// changes, which covers every spec change, or its status (controller.WatchStatus), when its
// Deployment or Service changes, so that drift is put back and the status follows the rollout,
// and when one of its pods turns unable to start a container or able again.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := controller.WatchPods(ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appv1.DeployObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}), resources.DeployObjectApp)
	b = controller.WatchStatus(b, &appv1.DeployObject{})
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, r.Guard.Policy, &appv1.DeployObjectList{}).Complete(r)
}
