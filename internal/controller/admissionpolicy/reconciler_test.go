package admissionpolicy

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// TestReconcileReportsReadyAndDropsAccepted: a policy applied whole is Ready and not Stalled, and
// the Accepted condition an earlier commit of the operator wrote, which said what Ready says, is
// gone once the policy is reported on again.
func TestReconcileReportsReadyAndDropsAccepted(t *testing.T) {
	stale := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: conditions.ReasonApplied,
		Message: "every rule and registry is applied", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}
	p := &policyv1.AdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName, Generation: 2},
		Status:     policyv1.AdmissionPolicyStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{stale}},
	}
	h := reconciletest.New(t, types.NamespacedName{Name: p.Name}, func(c client.Client, _ *events.FakeRecorder) reconcile.Reconciler {
		return &Reconciler{Client: c}
	}, nil, p)
	h.MustReconcile(t)

	got := reconciletest.Get(t, h, &policyv1.AdmissionPolicy{})
	reconciletest.ExpectCondition(t, got, conditions.Ready, metav1.ConditionTrue, conditions.ReasonApplied)
	reconciletest.ExpectCondition(t, got, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)
	if c := meta.FindStatusCondition(got.Status.Conditions, "Accepted"); c != nil {
		t.Errorf("the retired Accepted condition is still there: %+v", c)
	}
	if got.Status.ObservedGeneration != 2 {
		t.Errorf("status.observedGeneration = %d, want 2", got.Status.ObservedGeneration)
	}
}
