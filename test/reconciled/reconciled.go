// Package reconciled writes objects as if the operator had reconciled them, with a plain client:
// for the benchmarks and tests that store many objects without running the controllers.
package reconciled

import (
	"fmt"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// OperatorWrites are the Deployment, Service and status the operator writes for obj, a Welcome,
// Memcached or DeployObject as stored (defaulted), its Deployment running welcomeImage or
// memcachedImage: what a plain client writes where a test or bench stores objects as if the
// operator had reconciled them. The status is the operator's own (status.SetRollout) of a
// Deployment just applied, of which no pod runs yet.
func OperatorWrites(obj client.Object, welcomeImage, memcachedImage string) (*appsv1ac.DeploymentApplyConfiguration, *corev1ac.ServiceApplyConfiguration, client.Object) {
	switch o := obj.(type) {
	case *authv1.Welcome:
		owner := resources.ControllerReference(authv1.GroupVersion.String(), "Welcome", o.Name, o.UID)
		stored, deployment := o.DeepCopy(), resources.WelcomeDeployment(o, welcomeImage).WithOwnerReferences(owner)
		status.SetRollout(stored, status.RolloutOf(deployment))
		stored.Status.ServiceURL = resources.WelcomeServiceURL(o.Name, o.Namespace, *o.Spec.Port, 0)
		return deployment, resources.WelcomeService(o).WithOwnerReferences(owner), stored
	case *cachev1.Memcached:
		owner := resources.ControllerReference(cachev1.GroupVersion.String(), "Memcached", o.Name, o.UID)
		stored, deployment := o.DeepCopy(), resources.MemcachedDeployment(o, memcachedImage).WithOwnerReferences(owner)
		status.SetRollout(stored, status.RolloutOf(deployment))
		return deployment, resources.MemcachedService(o).WithOwnerReferences(owner), stored
	case *appv1.DeployObject:
		owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", o.Name, o.UID)
		stored, deployment := o.DeepCopy(), resources.DeployObjectDeployment(o).WithOwnerReferences(owner)
		status.SetRollout(stored, status.RolloutOf(deployment))
		return deployment, resources.DeployObjectService(o).WithOwnerReferences(owner), stored
	}
	panic(fmt.Sprintf("unexpected %T", obj))
}
