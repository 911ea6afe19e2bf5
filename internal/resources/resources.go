// Package resources builds the objects the operator applies for its custom resources: pure
// functions from a custom resource to the desired state, as server-side apply configurations.
// They set no owner references and talk to no API server; the reconcilers do that.
package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
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

// deployment is the Deployment that runs replicas copies of pod for the custom resource name of
// kind app: it and its pods carry objectLabels, and it selects its pods by selectorLabels.
//
// The pod mounts no service-account token and gets no service links, whatever the kind: its pods
// run as the namespace's default service account, which no custom resource can choose, so the
// token is of no use to them, and a namespace of many Services would fill their environment.
func deployment(app, name, namespace string, replicas int32, pod *corev1ac.PodSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(name, namespace).
		WithLabels(objectLabels(app, name)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(app, name))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(objectLabels(app, name)).
				WithSpec(pod.
					WithAutomountServiceAccountToken(false).
					WithEnableServiceLinks(false))))
}

// service is the Service of type typ in front of the pods of the custom resource name of kind
// app, with ports: it carries objectLabels and selects the pods by selectorLabels. The cluster
// IP and node ports are left to the API server to allocate: the operator never applies them, so
// they are kept across edits.
func service(app, name, namespace string, typ corev1.ServiceType, ports ...*corev1ac.ServicePortApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, namespace).
		WithLabels(objectLabels(app, name)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(typ).
			WithSelector(selectorLabels(app, name)).
			WithPorts(ports...))
}

// restrictedPodSecurity is the pod security context the "restricted" Pod Security Standard asks
// for, as every pod the operator creates has it.
func restrictedPodSecurity() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// restrictedContainerSecurity is the container security context the "restricted" Pod Security
// Standard asks for, as every container the operator creates has it.
func restrictedContainerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// operandPodSecurity is restrictedPodSecurity for the operator's own operands (welcome-web and
// memcached), whose images' user, uid, is known: the pod runs as it.
func operandPodSecurity(uid int64) *corev1ac.PodSecurityContextApplyConfiguration {
	return restrictedPodSecurity().WithRunAsUser(uid).WithRunAsGroup(uid)
}

// operandContainerSecurity is restrictedContainerSecurity for the operator's own operands, which
// write nothing to their root file system, so it is read-only.
func operandContainerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return restrictedContainerSecurity().WithReadOnlyRootFilesystem(true)
}

func resourceList(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}
}
