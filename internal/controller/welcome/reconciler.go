// Package welcome reconciles Welcome objects into a Deployment running the welcome-web server and
// a Service in front of it.
package welcome

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/controller/apply"
	"github.com/seedlabs/webhook-operator/internal/controller/compliance"
	"github.com/seedlabs/webhook-operator/internal/controller/drift"
	"github.com/seedlabs/webhook-operator/internal/controller/ownership"
	"github.com/seedlabs/webhook-operator/internal/controller/policywatch"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "welcome"

// Reconciler turns a Welcome into its Deployment and Service and reports their state.
type Reconciler struct {
	client.Client
	// APIReader reads from the API server, past the cache, which holds only the operator's own
	// Deployments and Services: it finds a user's object standing under a Welcome's name.
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
	// Image is the welcome-web image used when a Welcome does not set spec.image.
	Image string
}

// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes,verbs=get;list;watch
// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes/status,verbs=get;patch
// +kubebuilder:rbac:groups=auth.seedlabs.dev,resources=welcomes/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile applies the Deployment and Service a Welcome asks for and records what they report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &authv1alpha1.Welcome{}
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		// The garbage collector removes the owned Deployment and Service.
		return ctrl.Result{}, nil
	}
	before := w.DeepCopy()

	// A spec stored without passing admission (written before the webhook existed, or with it
	// bypassed) is held to the same rules and never rolled out while it breaks them.
	desired := w.DeepCopy()
	webhooks.DefaultWelcome(desired)
	errs, _ := webhooks.ValidateWelcome(nil, desired, webhooks.ImagePolicy{})
	errs, err := webhooks.Enforced(ctx, r.Policy, r.Namespaces, desired.Namespace, errs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The Event of an InvalidSpec says what a spec held back breaks; the audit's is for the rest.
	if err := r.audit(ctx, w, desired, len(errs) == 0); err != nil {
		return ctrl.Result{}, err
	}
	if len(errs) > 0 {
		if setInvalidSpec(w, message.Violations(errs, message.ConditionLimit)) {
			r.Recorder.Eventf(w, nil, corev1.EventTypeWarning, authv1alpha1.ReasonInvalidSpec, "Validate",
				"%s", message.Note("spec is not rolled out: ", errs))
		}
		return ctrl.Result{}, r.patchStatus(ctx, before, w)
	}
	children, err := ownership.ObserveChildren(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(w), "Welcome", w.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if conflict := children.Conflict(); conflict != "" {
		if setNameConflict(w, message.Truncate(conflict, message.ConditionLimit)) {
			r.Recorder.Eventf(w, nil, corev1.EventTypeWarning, authv1alpha1.ReasonNameConflict, "Apply",
				"%s", message.Truncate(conflict, message.EventNoteLimit))
		}
		return ctrl.Result{RequeueAfter: ownership.RecheckAfter}, r.patchStatus(ctx, before, w)
	}

	owner := resources.ControllerReference(authv1alpha1.GroupVersion.String(), "Welcome", w.Name, w.UID)

	deployment := resources.WelcomeDeployment(desired, r.Image).WithOwnerReferences(owner)
	service := resources.WelcomeService(desired).WithOwnerReferences(owner)
	applyOpts := []client.ApplyOption{client.FieldOwner(resources.FieldManager), client.ForceOwnership}
	if err := apply.Apply(ctx, r.Client, children.Deployment, deployment, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, w, "Deployment", err)
	}
	if err := drift.ReplaceForeignServicePorts(ctx, r.Client, children.Service, service); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, w, "Service", err)
	}
	if err := apply.Apply(ctx, r.Client, children.Service, service, applyOpts...); err != nil {
		return ctrl.Result{}, r.applyFailed(ctx, before, w, "Service", err)
	}

	children.RecordCreated(r.Recorder, w, fmt.Sprintf("%s running %s with %d replicas", w.Name, resources.WelcomeImage(desired, r.Image), *desired.Spec.Replicas),
		fmt.Sprintf("%s of type %s on port %d", w.Name, desired.Spec.ServiceType, *desired.Spec.Port))

	setRolloutStatus(w, desired, deployment, service)
	return ctrl.Result{}, r.patchStatus(ctx, before, w)
}

// applyFailed records that an object could not be applied and returns the error so that the
// work queue retries with backoff.
func (r *Reconciler) applyFailed(ctx context.Context, before, w *authv1alpha1.Welcome, kind string, err error) error {
	err = fmt.Errorf("applying the %s: %w", kind, err)
	if setApplyFailed(w, message.Truncate(err.Error(), message.ConditionLimit)) {
		r.Recorder.Eventf(w, nil, corev1.EventTypeWarning, authv1alpha1.ReasonApplyFailed, "Apply", "%s",
			message.Truncate(err.Error(), message.EventNoteLimit))
	}
	if statusErr := r.patchStatus(ctx, before, w); statusErr != nil && !apierrors.IsNotFound(statusErr) {
		return errors.Join(err, statusErr)
	}
	return err
}

// patchStatus writes w's status when it differs from before.
func (r *Reconciler) patchStatus(ctx context.Context, before, w *authv1alpha1.Welcome) error {
	if equality.Semantic.DeepEqual(before.Status, w.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, w, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the status of Welcome %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// audit reports in the Compliant condition the rules of the admission policy the spec breaks,
// and records an Event when they change and recordEvent is set.
func (r *Reconciler) audit(ctx context.Context, w, desired *authv1alpha1.Welcome, recordEvent bool) error {
	errs, warnings := webhooks.ValidateWelcome(nil, desired, webhooks.CurrentPolicy(r.Policy).Images())
	return compliance.Audit(ctx, r.Policy, r.Namespaces, r.Recorder, w, &w.Status.Conditions, errs, warnings, recordEvent)
}

// SetupWithManager registers the controller: it reconciles a Welcome when its spec changes and
// when its Deployment or Service changes, so drift is put back.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&authv1alpha1.Welcome{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{})
	return policywatch.Watch(b, mgr.GetClient(), r.PolicyChanges, &authv1alpha1.WelcomeList{}).Complete(r)
}

// setCondition sets one condition for the current generation and reports whether it changed.
func setCondition(w *authv1alpha1.Welcome, conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: w.Generation,
	})
}
