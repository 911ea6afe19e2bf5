// Package admissionpolicy writes into the AdmissionPolicy's status what the operator makes of it:
// whether every rule and registry of its spec is applied, and if not, what is not and why.
package admissionpolicy

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "admissionpolicy"

// +kubebuilder:rbac:groups=policy.seedlabs.dev,resources=admissionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.seedlabs.dev,resources=admissionpolicies/status,verbs=get;patch

// Reconciler reports in Ready and Stalled whether each AdmissionPolicy is applied whole,
// as its webhook judges it (webhooks.ValidateAdmissionPolicy).
// It runs on the leader alone, so the status is written once.
type Reconciler struct {
	client.Client
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	p := &policyv1.AdmissionPolicy{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch := status.NewPatch(r.Client, p)
	defer func() { reterr = patch.Apply(ctx, p, reterr) }()

	p.SetObservedGeneration(p.Generation)
	switch errs := webhooks.ValidateAdmissionPolicy(p); {
	case p.Name != policyv1.PolicyName:
		setApplied(p, false, conditions.ReasonNotRead,
			fmt.Sprintf("the operator reads only the AdmissionPolicy named %s; this one is not applied", policyv1.PolicyName))
	case len(errs) > 0:
		setApplied(p, false, conditions.ReasonPartlyApplied,
			message.Truncate("applied, except what cannot be: "+message.Violations(errs, message.ConditionLimit), message.ConditionLimit))
	default:
		setApplied(p, true, conditions.ReasonApplied, "every rule and registry is applied")
	}
	return ctrl.Result{}, nil
}

// setApplied sets Ready and Stalled as kstatus reads them: a policy applied whole is Ready; one
// that is not cannot become so without an edit (a spec stored past the webhook) or ever (a policy
// of another name), so it is Stalled, with the same reason and message.
func setApplied(p *policyv1.AdmissionPolicy, applied bool, reason, msg string) {
	status.DropRetired(p)
	if applied {
		status.Set(p, conditions.Ready, metav1.ConditionTrue, reason, msg)
		status.Set(p, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "")
		return
	}
	status.Set(p, conditions.Ready, metav1.ConditionFalse, reason, msg)
	status.Set(p, conditions.Stalled, metav1.ConditionTrue, reason, msg)
}

// SetupWithManager has mgr run the controller: it reconciles the AdmissionPolicy when its spec or
// its status changes (controller.WatchStatus).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1.AdmissionPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	return controller.WatchStatus(b, &policyv1.AdmissionPolicy{}).Complete(r)
}
