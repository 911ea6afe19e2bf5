// Package resources builds the objects the operator applies for its custom resources: pure
// functions from a custom resource to the desired state, as server-side apply configurations.
// They set no owner references and talk to no API server; the reconcilers do that.
package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// Well-known labels set on every object the operator creates.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// ManagedBy is the value of LabelManagedBy on every object the operator creates; the
	// manager's cache only holds Deployments, Services and Pods carrying it.
	ManagedBy = "webhook-operator"
)

// ControllerReference is the owner reference that makes the custom resource described by
// apiVersion, kind, name and uid the controller of an object, so the garbage collector removes
// the object with it and the object's events reach its controller.
func ControllerReference(apiVersion, kind, name string, uid types.UID) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(apiVersion).
		WithKind(kind).
		WithName(name).
		WithUID(uid).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// selectorLabels are the labels a workload's pods are selected by: immutable once created.
func selectorLabels(app, instance string) map[string]string {
	return map[string]string{LabelName: app, LabelInstance: instance}
}

// objectLabels are the labels of every object created for one custom resource.
func objectLabels(app, instance string) map[string]string {
	labels := selectorLabels(app, instance)
	labels[LabelManagedBy] = ManagedBy
	return labels
}

// restrictedPodSecurity is the pod security context the "restricted" Pod Security Standard asks for.
func restrictedPodSecurity(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(uid).
		WithRunAsGroup(uid).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// restrictedContainerSecurity is the container security context the "restricted" Pod Security
// Standard asks for, with a read-only root file system on top.
func restrictedContainerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

func resourceList(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}
}

func metaLabelSelector(labels map[string]string) *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(labels)
}
