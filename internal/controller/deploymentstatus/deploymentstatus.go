// Package deploymentstatus reads what a Deployment reports about its rollout from the object the
// API server returns on a server-side apply, for the controllers that own Deployments.
package deploymentstatus

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/seedlabs/webhook-operator/internal/message"
)

// Read returns a Deployment's desired replicas (1 when unset, as the API server defaults them),
// its metadata.generation and its status.
func Read(dep *appsv1ac.DeploymentApplyConfiguration) (desired int32, generation int64, status appsv1.DeploymentStatus) {
	desired, generation = 1, ptr.Deref(dep.Generation, 0)
	if dep.Spec != nil {
		desired = ptr.Deref(dep.Spec.Replicas, 1)
	}
	st := dep.Status
	if st == nil {
		return desired, generation, status
	}
	status = appsv1.DeploymentStatus{
		ObservedGeneration:  ptr.Deref(st.ObservedGeneration, 0),
		Replicas:            ptr.Deref(st.Replicas, 0),
		UpdatedReplicas:     ptr.Deref(st.UpdatedReplicas, 0),
		ReadyReplicas:       ptr.Deref(st.ReadyReplicas, 0),
		AvailableReplicas:   ptr.Deref(st.AvailableReplicas, 0),
		UnavailableReplicas: ptr.Deref(st.UnavailableReplicas, 0),
	}
	for _, c := range st.Conditions {
		status.Conditions = append(status.Conditions, appsv1.DeploymentCondition{
			Type:               ptr.Deref(c.Type, ""),
			Status:             ptr.Deref(c.Status, ""),
			LastUpdateTime:     ptr.Deref(c.LastUpdateTime, metav1.Time{}),
			LastTransitionTime: ptr.Deref(c.LastTransitionTime, metav1.Time{}),
			Reason:             ptr.Deref(c.Reason, ""),
			Message:            ptr.Deref(c.Message, ""),
		})
	}
	return desired, generation, status
}

// Failure returns why the Deployment says its rollout cannot progress (Progressing False, or
// ReplicaFailure True), or "" when it does not. A failure reported for an older generation of
// the Deployment says nothing about its current template, so it does not count.
func Failure(generation int64, status appsv1.DeploymentStatus) string {
	if status.ObservedGeneration < generation {
		return ""
	}
	failure := ""
	for _, c := range status.Conditions {
		stalled := c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse
		replicaFailure := c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue
		if stalled || replicaFailure {
			failure = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return message.Truncate(failure, message.ConditionLimit)
}
