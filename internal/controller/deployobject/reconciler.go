// Package deployobject reconciles DeployObject objects into a Deployment running the object's
// image and a ClusterIP Service with the object's ports.
package deployobject

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
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
	ControllerName = "deployobject"
)

// Reasons of the Events the controller records besides the condition reasons of the API.
const ()

// Reconciler turns a DeployObject into its Deployment and Service and reports their state.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server, past the cache, which holds only the operator's own
	// Deployments and Services: it finds a user's object standing under a DeployObject's name.
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
}

// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects/status,verbs=get;patch
// +kubebuilder:rbac:groups=app.seedlabs.dev,resources=deployobjects/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a DeployObject asks for and records what they
// report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &appv1.DeployObject{}
	if err := r.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() {
		// The garbage collector removes the owned Deployment and Service.
		return ctrl.Result{}, nil
	}
	before := d.DeepCopy()

	current, err := r.observe(ctx, d)
	if err != nil {
		return ctrl.Result{}, err
	}

	// A spec stored without passing admission (written before the webhook existed, or with it
	// bypassed) is held to the same structural rules and never rolled out while it breaks them.
	// The registry allow-list is not: it is admission policy, and an image admitted before the
	// list changed keeps running.
	desired := d.DeepCopy()
	webhooks.DefaultDeployObject(desired)
	errs, _ := webhooks.ValidateDeployObject(nil, desired, webhooks.ImagePolicy{})
	errs, err = webhooks.Enforced(ctx, r.Policy, r.Namespaces, desired.Namespace, errs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The Event of an InvalidSpec says what a spec held back breaks; the audit's is for the rest.
	if err := r.audit(ctx, d, desired, len(errs) == 0); err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		return ctrl.Result{}, r.refuseInvalidSpec(ctx, before, d, current, errs)
	}
	if len(current.Conflicts) > 0 {
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, r.refuseNameConflict(ctx, before, d, current)
	}

	owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", d.Name, d.UID)
	deployment := resources.DeployObjectDeployment(desired).WithOwnerReferences(owner)
	service := resources.DeployObjectService(desired).WithOwnerReferences(owner)
	applyOpts := []client.ApplyOption{client.FieldOwner(resources.FieldManager), client.ForceOwnership}
	// A new spec's Service is tried first with a server-side dry run, so that a Service the API
	// server refuses never leaves the new pods rolled out behind the old Service's ports. The rules
	// already refuse at admission what the API server would; this holds for a spec that never
	// passed admission, and for whatever the rules missed, at one request per spec change.
	// The dry run gets a configuration of its own: Apply fills the one it is given with the reply.
	if d.Status.ObservedGeneration != d.Generation {
		trial := resources.DeployObjectService(desired).WithOwnerReferences(owner)
		if err := r.Apply(ctx, trial, append(applyOpts, client.DryRunAll)...); err != nil {
			return ctrl.Result{}, r.applyFailed(ctx, before, d, "Service", err)
		}
	}
	if err := apply.Apply(ctx, r.Client, current.Deployment, deployment, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, d, "Deployment", err)
	}
	if err := drift.ReplaceForeignServicePorts(ctx, r.Client, current.Service, service); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, d, "Service", err)
	}
	if err := apply.Apply(ctx, r.Client, current.Service, service, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, d, "Service", err)
	}
	current.RecordCreated(r.Recorder, d, fmt.Sprintf("%s running %s with %d replicas", d.Name, desired.Spec.Image, *desired.Spec.Replicas),
		fmt.Sprintf("%s on ports %s", d.Name, portList(desired.Spec.Ports)))

	setRolloutStatus(d, rolloutOf(deployment))
	return ctrl.Result{}, r.patchStatus(ctx, before, d)
}

// observed is what exists of a DeployObject's Deployment and Service before anything is applied.
type observed struct {
	ownership.Children
}

// observe reads the DeployObject's Deployment and Service, from the cache or, for objects the
// cache cannot hold, from the API server.
func (r *Reconciler) observe(ctx context.Context, d *appv1.DeployObject) (observed, error) {
	children, err := ownership.ObserveChildren(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(d), "DeployObject", d.UID)
	return observed{Children: children}, err
}

// deploymentStatus is the Deployment's status, or the zero status when there is no Deployment.
func (o observed) deploymentStatus() appsv1.DeploymentStatus {
	if o.Deployment == nil {
		return appsv1.DeploymentStatus{}
	}
	return o.Deployment.Status
}

// refuseInvalidSpec records that the stored spec breaks the admission rules, without applying
// anything. The Deployment of an earlier spec, if any, keeps running, so its status is still
// mirrored.
func (r *Reconciler) refuseInvalidSpec(ctx context.Context, before, d *appv1.DeployObject, current observed, errs field.ErrorList) error {
	mirrorDeploymentStatus(d, current.deploymentStatus())
	if setInvalidSpec(d, message.Violations(errs, message.ConditionLimit)) {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, appv1.ReasonInvalidSpec, "Validate",
			"%s", message.Note("spec is not rolled out: ", errs))
	}
	return r.patchStatus(ctx, before, d)
}

// refuseNameConflict records that a Deployment or Service of the DeployObject's name is someone
// else's, without applying anything.
func (r *Reconciler) refuseNameConflict(ctx context.Context, before, d *appv1.DeployObject, current observed) error {
	mirrorDeploymentStatus(d, current.deploymentStatus())
	conflict := current.Conflict()
	if setNameConflict(d, message.Truncate(conflict, message.ConditionLimit)) {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, appv1.ReasonNameConflict, "Apply",
			"%s", message.Truncate(conflict, message.EventNoteLimit))
	}
	return r.patchStatus(ctx, before, d)
}

// applyFailed records that an object could not be applied and returns the error so that the
// work queue retries with backoff.
func (r *Reconciler) applyFailed(ctx context.Context, before, d *appv1.DeployObject, kind string, err error) error {
	err = fmt.Errorf("applying the %s: %w", kind, err)
	if setApplyFailed(d, message.Truncate(err.Error(), message.ConditionLimit)) {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, appv1.ReasonApplyFailed, "Apply", "%s",
			message.Truncate(err.Error(), message.EventNoteLimit))
	}
	if statusErr := r.patchStatus(ctx, before, d); statusErr != nil && !apierrors.IsNotFound(statusErr) {
		return errors.Join(err, statusErr)
	}
	return err
}

// patchStatus writes d's status when it differs from before.
func (r *Reconciler) patchStatus(ctx context.Context, before, d *appv1.DeployObject) error {
	if equality.Semantic.DeepEqual(before.Status, d.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, d, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the status of DeployObject %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
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

// audit reports in the Compliant condition the rules of the admission policy the spec breaks,
// and records an Event when they change and recordEvent is set.
func (r *Reconciler) audit(ctx context.Context, d, desired *appv1.DeployObject, recordEvent bool) error {
	errs, warnings := webhooks.ValidateDeployObject(nil, desired, webhooks.CurrentPolicy(r.Policy).Images())
	return compliance.Audit(ctx, r.Policy, r.Namespaces, r.Recorder, d, &d.Status.Conditions, errs, warnings, recordEvent)
}

// SetupWithManager registers the controller. A DeployObject is reconciled when its generation
// changes, which covers every spec change, and when its Deployment or Service changes, so that
// drift is put back and the status follows the rollout.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appv1.DeployObject{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{})
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, &appv1.DeployObjectList{}).Complete(r)
}
