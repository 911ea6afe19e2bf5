package welcome

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// setRolloutStatus records in w's status the rollout of the applied Deployment and where the
// applied Service answers. desired is w with defaults applied.
func setRolloutStatus(w, desired *authv1.Welcome, r status.Rollout, svc *corev1ac.ServiceApplyConfiguration) {
	w.Status.ReadyReplicas = r.Status.ReadyReplicas
	w.Status.ServiceURL = resources.WelcomeServiceURL(w.Name, w.Namespace, *desired.Spec.Port, nodePortOf(svc))
	status.SetRollout(w, r)
}

// nodePortOf returns the node port the API server allocated to a Service's first port, or 0.
func nodePortOf(svc *corev1ac.ServiceApplyConfiguration) int32 {
	if svc.Spec == nil || len(svc.Spec.Ports) == 0 {
		return 0
	}
	return ptr.Deref(svc.Spec.Ports[0].NodePort, 0)
}
