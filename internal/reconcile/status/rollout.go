package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
)

// Rollout is what a Deployment reports about bringing up its desired replicas.
type Rollout struct {
	// Desired is the Deployment's spec.replicas.
	Desired int32
	// Generation is the Deployment's metadata.generation.
	Generation int64
	// Status is the Deployment's status as the Deployment controller last wrote it.
	Status appsv1.DeploymentStatus
	// PodFailure is why a pod of the Deployment's current template cannot start a container, as
	// ObserveRollout reads it from the pods, or "".
	PodFailure string
}

// RolloutOf reads a Deployment's rollout from the object the API server returned on apply:
// spec.replicas unset means 1, as the API server defaults it.
func RolloutOf(dep *appsv1ac.DeploymentApplyConfiguration) Rollout {
	r := Rollout{Desired: 1, Generation: ptr.Deref(dep.Generation, 0)}
	if dep.Spec != nil {
		r.Desired = ptr.Deref(dep.Spec.Replicas, 1)
	}
	st := dep.Status
	if st == nil {
		return r
	}
	r.Status = appsv1.DeploymentStatus{
		ObservedGeneration:  ptr.Deref(st.ObservedGeneration, 0),
		Replicas:            ptr.Deref(st.Replicas, 0),
		UpdatedReplicas:     ptr.Deref(st.UpdatedReplicas, 0),
		ReadyReplicas:       ptr.Deref(st.ReadyReplicas, 0),
		AvailableReplicas:   ptr.Deref(st.AvailableReplicas, 0),
		UnavailableReplicas: ptr.Deref(st.UnavailableReplicas, 0),
	}
	for _, c := range st.Conditions {
		r.Status.Conditions = append(r.Status.Conditions, appsv1.DeploymentCondition{
			Type:               ptr.Deref(c.Type, ""),
			Status:             ptr.Deref(c.Status, ""),
			LastUpdateTime:     ptr.Deref(c.LastUpdateTime, metav1.Time{}),
			LastTransitionTime: ptr.Deref(c.LastTransitionTime, metav1.Time{}),
			Reason:             ptr.Deref(c.Reason, ""),
			Message:            ptr.Deref(c.Message, ""),
		})
	}
	return r
}

// Current reports whether the Deployment controller has seen the Deployment's latest spec, so
// that its status and conditions describe that spec.
func (r Rollout) Current() bool {
	return r.Status.ObservedGeneration >= r.Generation
}

// Failure returns why the Deployment says its rollout cannot progress (Progressing False, or
// ReplicaFailure True), or "" when it does not. A failure reported for an older generation of the
// Deployment says nothing about its current template, so it does not count.
func (r Rollout) Failure() string {
	if !r.Current() {
		return ""
	}
	failure := ""
	for _, c := range r.Status.Conditions {
		stalled := c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse
		replicaFailure := c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue
		if stalled || replicaFailure {
			failure = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return message.Truncate(failure, message.ConditionLimit)
}

// Complete reports whether the Deployment has seen its latest spec and exactly the desired
// replicas run it, updated, ready and available, with no replica of an older spec left.
func (r Rollout) Complete() bool {
	st := r.Status
	return r.Current() && st.Replicas == r.Desired && st.UpdatedReplicas == r.Desired &&
		st.ReadyReplicas == r.Desired && st.AvailableReplicas == r.Desired
}

// SetRollout records that obj's generation is applied, once its Deployment and Service both
// are, and sets Ready, Reconciling and Stalled from the rollout of the Deployment: Stalled while
// a pod of the current template cannot start (ContainerCannotStart) or the Deployment reports a
// failure (RolloutFailed), and Ready False with the same reason; Ready once the rollout is
// complete, Reconciling until then.
func SetRollout(obj Object, r Rollout) {
	obj.SetObservedGeneration(obj.GetGeneration())
	DropRetired(obj)
	available := r.Status.AvailableReplicas
	// A pod's failure first: it says why, where the Deployment's progress deadline says only that
	// the rollout has not progressed.
	reason, failure := conditions.ReasonContainerCannotStart, r.PodFailure
	if failure == "" {
		reason, failure = conditions.ReasonRolloutFailed, r.Failure()
	}
	complete := failure == "" && r.Complete()
	switch {
	case complete && r.Desired == 0:
		Set(obj, conditions.Ready, metav1.ConditionTrue, conditions.ReasonScaledToZero, "no replica is requested")
	case complete:
		Set(obj, conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut,
			fmt.Sprintf("%d of %s available", available, message.Replicas(r.Desired)))
	case failure != "":
		// The reason of Stalled, as for a spec that is not applied: kubectl get shows it.
		Set(obj, conditions.Ready, metav1.ConditionFalse, reason, failure)
	case available < r.Desired:
		Set(obj, conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %s available", available, message.Replicas(r.Desired)))
	default:
		// Every requested replica is available, but the rollout is not done: pods of an older
		// spec are being replaced, the Deployment is scaling down, or it has not yet seen its
		// latest spec.
		Set(obj, conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling,
			fmt.Sprintf("%s available, %d requested", message.Replicas(available), r.Desired))
	}

	switch {
	case failure != "":
		Set(obj, conditions.Reconciling, metav1.ConditionFalse, reason, failure)
		Set(obj, conditions.Stalled, metav1.ConditionTrue, reason, failure)
		return
	case complete:
		Set(obj, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut,
			fmt.Sprintf("the Deployment runs the current spec with %s", message.Replicas(r.Desired)))
	default:
		Set(obj, conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling,
			fmt.Sprintf("rolling out %s: %d running, %d updated, %d available",
				message.Replicas(r.Desired), r.Status.Replicas, r.Status.UpdatedReplicas, available))
	}
	Set(obj, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "")
}
