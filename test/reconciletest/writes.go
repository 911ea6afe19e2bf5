package reconciletest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// OperatorWrites are the Deployment, Service and status the operator writes for obj, a Welcome,
// Memcached or DeployObject as stored (defaulted), its Deployment running welcomeImage or
// memcachedImage: what a plain client writes where a test or bench stores objects as if the
// operator had reconciled them.
func OperatorWrites(obj client.Object, welcomeImage, memcachedImage string) (*appsv1ac.DeploymentApplyConfiguration, *corev1ac.ServiceApplyConfiguration, client.Object) {
	conditions := func(generation int64) []metav1.Condition {
		var out []metav1.Condition
		meta.SetStatusCondition(&out, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ReplicasUnavailable",
			Message: "0 of 1 replicas available", ObservedGeneration: generation})
		meta.SetStatusCondition(&out, metav1.Condition{Type: "Reconciling", Status: metav1.ConditionTrue, Reason: "Reconciling",
			Message: "rolling out 1 replicas: 0 running, 0 updated, 0 available", ObservedGeneration: generation})
		meta.SetStatusCondition(&out, metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "AsExpected",
			Message: "", ObservedGeneration: generation})
		return out
	}
	switch o := obj.(type) {
	case *authv1alpha1.Welcome:
		owner := resources.ControllerReference(authv1alpha1.GroupVersion.String(), "Welcome", o.Name, o.UID)
		status := o.DeepCopy()
		status.Status.ObservedGeneration, status.Status.Conditions = o.Generation, conditions(o.Generation)
		status.Status.ServiceURL = resources.WelcomeServiceURL(o.Name, o.Namespace, *o.Spec.Port, 0)
		return resources.WelcomeDeployment(o, welcomeImage).WithOwnerReferences(owner),
			resources.WelcomeService(o).WithOwnerReferences(owner), status
	case *cachev1alpha1.Memcached:
		owner := resources.ControllerReference(cachev1alpha1.GroupVersion.String(), "Memcached", o.Name, o.UID)
		status := o.DeepCopy()
		status.Status.ObservedGeneration, status.Status.Conditions = o.Generation, conditions(o.Generation)
		return resources.MemcachedDeployment(o, memcachedImage).WithOwnerReferences(owner),
			resources.MemcachedService(o).WithOwnerReferences(owner), status
	case *appv1.DeployObject:
		owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", o.Name, o.UID)
		status := o.DeepCopy()
		status.Status.ObservedGeneration, status.Status.Conditions = o.Generation, conditions(o.Generation)
		return resources.DeployObjectDeployment(o).WithOwnerReferences(owner),
			resources.DeployObjectService(o).WithOwnerReferences(owner), status
	}
	panic(fmt.Sprintf("unexpected %T", obj))
}
