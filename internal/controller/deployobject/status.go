package deployobject

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/message"
)

// mirrorDeploymentStatus copies the replica counts and conditions of the Deployment's status into
// d's status. Nil is recorded for no conditions, so that an unchanged status compares equal.
//
// The conditions are cut to what the CRD's schema holds, so that the status write is never
// refused: a Deployment's status holds no bound of its own (a ReplicaFailure message quotes the
// error of a pod's creation, and a status edited by hand may hold anything).
func mirrorDeploymentStatus(d *appv1.DeployObject, st appsv1.DeploymentStatus) {
	d.Status.Replicas = st.Replicas
	d.Status.UpdatedReplicas = st.UpdatedReplicas
	d.Status.ReadyReplicas = st.ReadyReplicas
	d.Status.AvailableReplicas = st.AvailableReplicas
	d.Status.UnavailableReplicas = st.UnavailableReplicas
	d.Status.DeploymentConditions = nil
	for _, c := range st.Conditions[:min(len(st.Conditions), appv1.MaxDeploymentConditionsItems)] {
		c.Type = appsv1.DeploymentConditionType(message.Truncate(string(c.Type), appv1.MaxConditionTypeLength))
		c.Status = corev1.ConditionStatus(message.Truncate(string(c.Status), appv1.MaxConditionStatusLength))
		c.Reason = message.Truncate(c.Reason, appv1.MaxConditionReasonLength)
		c.Message = message.Truncate(c.Message, appv1.MaxConditionMessageLength)
		d.Status.DeploymentConditions = append(d.Status.DeploymentConditions, c)
	}
}
