package deployobject

import (
	appsv1 "k8s.io/api/apps/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// mirrorDeploymentStatus copies the replica counts and conditions of the Deployment's status into
// d's status. Nil is recorded for no conditions, so that an unchanged status compares equal.
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
