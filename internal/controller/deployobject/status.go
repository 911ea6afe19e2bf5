package deployobject

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/controller/deploymentstatus"
)

// Messages of conditions whose text does not depend on the rollout.
const (
	messageNotRolledOut  = "the spec is not rolled out until it is fixed"
	messageNothingRolled = "nothing was rolled out"
	messageScaledToZero  = "spec.replicas is 0: no pod is requested"
)

// rollout is what a Deployment reports about bringing up the desired replicas.
type rollout struct {
	// desired is the Deployment's spec.replicas.
	desired int32
	// generation is the Deployment's metadata.generation.
	generation int64
	// status is the Deployment's status as the Deployment controller last wrote it.
	status appsv1.DeploymentStatus
}

// rolloutOf reads the state of a Deployment from the object the API server returned on apply.
func rolloutOf(dep *appsv1ac.DeploymentApplyConfiguration) rollout {
	desired, generation, status := deploymentstatus.Read(dep)
	return rollout{desired: desired, generation: generation, status: status}
}

// current reports whether the Deployment controller has seen the Deployment's latest spec, so
// that its status and conditions describe that spec.
func (r rollout) current() bool {
	return r.status.ObservedGeneration >= r.generation
}

// failure returns why the Deployment says its rollout cannot progress, or "" when it does not.
func (r rollout) failure() string {
	return deploymentstatus.Failure(r.generation, r.status)
}

// complete reports whether exactly the desired replicas run the current spec and are available,
// and no replica of an older spec is left.
func (r rollout) complete() bool {
	st := r.status
	return r.current() && st.UpdatedReplicas == r.desired && st.Replicas == r.desired && st.AvailableReplicas == r.desired
}

// mirrorDeploymentStatus copies the Deployment's replica counts and conditions into d's status.
// Nil is recorded for no conditions, so that an unchanged status compares equal.
func mirrorDeploymentStatus(d *appv1.DeployObject, st appsv1.DeploymentStatus) {
	d.Status.Replicas = st.Replicas
	d.Status.UpdatedReplicas = st.UpdatedReplicas
	d.Status.ReadyReplicas = st.ReadyReplicas
	d.Status.AvailableReplicas = st.AvailableReplicas
	d.Status.UnavailableReplicas = st.UnavailableReplicas
	d.Status.DeploymentConditions = nil
	if len(st.Conditions) > 0 {
		d.Status.DeploymentConditions = append([]appsv1.DeploymentCondition(nil), st.Conditions...)
	}
}

// setRolloutStatus records the state of the applied Deployment in d's status: d's generation is
// now rolled out.
func setRolloutStatus(d *appv1.DeployObject, r rollout) {
	d.Status.ObservedGeneration = d.Generation
	mirrorDeploymentStatus(d, r.status)
	setRolloutConditions(d, r)
}

// setRolloutConditions sets Available, Progressing and Degraded from a rollout.
func setRolloutConditions(d *appv1.DeployObject, r rollout) {
	available := r.status.AvailableReplicas
	switch {
	case r.desired == 0:
		setCondition(d, appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonScaledToZero, messageScaledToZero)
	case available < r.desired:
		setCondition(d, appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %d replicas available", available, r.desired))
	case r.complete():
		setCondition(d, appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut,
			fmt.Sprintf("%d of %d replicas available", available, r.desired))
	default:
		// Every requested replica is available, but the Deployment is still being brought to
		// the spec: pods of an older spec are being replaced, or it is scaling down.
		setCondition(d, appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonReconciling,
			fmt.Sprintf("%d replicas available, %d requested", available, r.desired))
	}

	if failure := r.failure(); failure != "" {
		setCondition(d, appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolloutFailed, failure)
		setCondition(d, appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonRolloutFailed, failure)
		return
	}
	if r.complete() {
		setCondition(d, appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut,
			fmt.Sprintf("the Deployment runs the current spec with %d replicas", r.desired))
	} else {
		setCondition(d, appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling,
			fmt.Sprintf("rolling out %d replicas: %d running, %d updated, %d available",
				r.desired, r.status.Replicas, r.status.UpdatedReplicas, available))
	}
	setCondition(d, appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "")
}

// setInvalidSpec records that the stored spec breaks the admission rules and reports whether
// that is news. Available is left as it is when a rollout of an earlier spec set it: those pods
// still run.
func setInvalidSpec(d *appv1.DeployObject, message string) bool {
	return setNotApplied(d, appv1.ReasonInvalidSpec, message, messageNotRolledOut)
}

// setNameConflict records that a Deployment or Service of the name exists that d does not
// control, so nothing is applied, and reports whether that is news.
func setNameConflict(d *appv1.DeployObject, message string) bool {
	return setNotApplied(d, appv1.ReasonNameConflict, message, "nothing is applied until the name conflict is resolved")
}

// setNotApplied records why nothing is applied for the current generation: Degraded carries the
// reason and message, Progressing says what would unblock it, and Available, unless a rollout of
// an earlier spec set it, says that nothing was rolled out. It reports whether Degraded changed.
func setNotApplied(d *appv1.DeployObject, reason, message, progressing string) bool {
	d.Status.ObservedGeneration = d.Generation
	changed := setCondition(d, appv1.ConditionDegraded, metav1.ConditionTrue, reason, message)
	setCondition(d, appv1.ConditionProgressing, metav1.ConditionFalse, reason, progressing)
	if meta.FindStatusCondition(d.Status.Conditions, appv1.ConditionAvailable) == nil {
		setCondition(d, appv1.ConditionAvailable, metav1.ConditionFalse, reason, messageNothingRolled)
	}
	return changed
}

// setApplyFailed records that the Deployment or Service could not be applied and reports whether
// that is news.
func setApplyFailed(d *appv1.DeployObject, message string) bool {
	return setCondition(d, appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonApplyFailed, message)
}

// setCondition sets one condition for the current generation and reports whether it changed.
func setCondition(d *appv1.DeployObject, conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: d.Generation,
	})
}
