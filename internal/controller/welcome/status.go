package welcome

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/controller/deploymentstatus"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// rollout is what the Deployment reports about bringing up the desired replicas.
type rollout struct {
	desired            int32
	generation         int64
	observedGeneration int64
	replicas           int32
	updated            int32
	ready              int32
	available          int32
	// failure is set when the Deployment says its rollout cannot progress.
	failure string
}

// rolloutOf reads the state of a Deployment from the object the API server returned on apply.
func rolloutOf(dep *appsv1ac.DeploymentApplyConfiguration) rollout {
	desired, generation, st := deploymentstatus.Read(dep)
	return rollout{
		desired:            desired,
		generation:         generation,
		observedGeneration: st.ObservedGeneration,
		replicas:           st.Replicas,
		updated:            st.UpdatedReplicas,
		ready:              st.ReadyReplicas,
		available:          st.AvailableReplicas,
		failure:            deploymentstatus.Failure(generation, st),
	}
}

// complete reports whether every desired replica runs the current template and is available,
// and no replica of an older template is left.
func (r rollout) complete() bool {
	return r.observedGeneration >= r.generation &&
		r.updated == r.desired && r.replicas == r.desired && r.available == r.desired
}

// nodePortOf returns the node port the API server allocated to a Service's first port, or 0.
func nodePortOf(svc *corev1ac.ServiceApplyConfiguration) int32 {
	if svc.Spec == nil || len(svc.Spec.Ports) == 0 {
		return 0
	}
	return ptr.Deref(svc.Spec.Ports[0].NodePort, 0)
}

// setRolloutStatus records the state of the applied Deployment and Service in w's status. desired
// is w with defaults applied.
func setRolloutStatus(w, desired *authv1alpha1.Welcome, dep *appsv1ac.DeploymentApplyConfiguration, svc *corev1ac.ServiceApplyConfiguration) {
	r := rolloutOf(dep)
	w.Status.ObservedGeneration = w.Generation
	w.Status.ReadyReplicas = r.ready
	w.Status.ServiceURL = resources.WelcomeServiceURL(w.Name, w.Namespace, *desired.Spec.Port, nodePortOf(svc))
	setRolloutConditions(w, r)
}

// setRolloutConditions sets Available, Progressing and Degraded from a rollout.
func setRolloutConditions(w *authv1alpha1.Welcome, r rollout) {
	switch {
	case r.desired == 0:
		setCondition(w, authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonScaledToZero,
			"spec.replicas is 0: no web server runs")
	case r.available >= r.desired:
		setCondition(w, authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut,
			fmt.Sprintf("%d of %d replicas available", r.available, r.desired))
	default:
		setCondition(w, authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %d replicas available", r.available, r.desired))
	}

	switch {
	case r.failure != "":
		setCondition(w, authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolloutFailed, r.failure)
		setCondition(w, authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonRolloutFailed, r.failure)
		return
	case r.complete():
		setCondition(w, authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolledOut,
			"the Deployment runs the current spec")
	default:
		setCondition(w, authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling,
			fmt.Sprintf("rolling out: %d of %d replicas updated, %d available", r.updated, r.desired, r.available))
	}
	setCondition(w, authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "")
}

// setInvalidSpec records that the stored spec breaks the admission rules and reports whether
// that is news.
func setInvalidSpec(w *authv1alpha1.Welcome, message string) bool {
	return setNotApplied(w, authv1alpha1.ReasonInvalidSpec, message, "the spec is not rolled out until it is fixed")
}

// setNameConflict records that a Deployment or Service of the name exists that w does not
// control, so nothing is applied, and reports whether that is news.
func setNameConflict(w *authv1alpha1.Welcome, message string) bool {
	return setNotApplied(w, authv1alpha1.ReasonNameConflict, message, "nothing is applied until the name conflict is resolved")
}

// setNotApplied records why nothing is applied for the current generation: Degraded carries the
// reason and message, Progressing says what would unblock it, and Available, unless a rollout of
// an earlier spec set it, says that nothing was rolled out. It reports whether Degraded changed.
func setNotApplied(w *authv1alpha1.Welcome, reason, message, progressing string) bool {
	w.Status.ObservedGeneration = w.Generation
	changed := setCondition(w, authv1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, message)
	setCondition(w, authv1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, progressing)
	if meta.FindStatusCondition(w.Status.Conditions, authv1alpha1.ConditionAvailable) == nil {
		setCondition(w, authv1alpha1.ConditionAvailable, metav1.ConditionFalse, reason, "nothing was rolled out")
	}
	return changed
}

// setApplyFailed records that the Deployment or Service could not be applied and reports whether
// that is news.
func setApplyFailed(w *authv1alpha1.Welcome, message string) bool {
	return setCondition(w, authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonApplyFailed, message)
}
