package resources

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
)

// Constants of the memcached operand that the Deployment and Service depend on.
const (
	// MemcachedApp is the app.kubernetes.io/name of the objects made for a Memcached.
	MemcachedApp = "memcached"
	// MemcachedContainer is the name of the memcached container.
	MemcachedContainer = "memcached"
	// MemcachedPortName names memcached's container port and Service port.
	MemcachedPortName = "memcached"
	// MemcachedCacheMB is the memory memcached may use for items, in megabytes; the container's
	// memory request covers it, and its limit leaves room for connections and the hash table.
	MemcachedCacheMB = 64
	// memcachedUID is the user memcached runs as.
	memcachedUID = 1001
)

// MemcachedCommand is the memcached command line, without the port, which is passed in the
// container's args. The memory limit is spelt --memory-limit=64: memcached parses the short
// form -m=64 as "-m" with the value "=64", which is 0 MB, and refuses to start ("Cannot set item
// size limit higher than 1/2 of memory max").
func MemcachedCommand() []string {
	return []string{"memcached", fmt.Sprintf("--memory-limit=%d", MemcachedCacheMB), "-o", "modern", "-v"}
}

// MemcachedSelector is the label selector of a Memcached's pods: the Deployment's and the
// Service's selector, and what status.selector reports for the scale subresource.
func MemcachedSelector(name string) map[string]string {
	return selectorLabels(MemcachedApp, name)
}

// MemcachedDeployment is the Deployment that runs a Memcached's pool of spec.size instances with
// the given image. m must be defaulted and valid.
//
// A rolling update replaces one pod at a time without a surge, so the pool never runs more
// than spec.size instances.
func MemcachedDeployment(m *cachev1.Memcached, image string) *appsv1ac.DeploymentApplyConfiguration {
	port := *m.Spec.ContainerPort
	tcpProbe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(MemcachedPortName)))
	}
	container := corev1ac.Container().
		WithName(MemcachedContainer).
		WithImage(image).
		WithCommand(MemcachedCommand()...).
		// memcached listens on 11211 unless told otherwise, so the port follows spec.containerPort.
		WithArgs(fmt.Sprintf("--port=%d", port)).
		WithPorts(corev1ac.ContainerPort().WithName(MemcachedPortName).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(tcpProbe().WithPeriodSeconds(5)).
		WithLivenessProbe(tcpProbe().WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(resourceList("10m", "64Mi")).
			WithLimits(resourceList("500m", "96Mi"))).
		WithSecurityContext(operandContainerSecurity())

	d := deployment(MemcachedApp, m.Name, m.Namespace, *m.Spec.Size, corev1ac.PodSpec().
		WithSecurityContext(operandPodSecurity(memcachedUID)).
		WithContainers(container))
	d.Spec.WithStrategy(appsv1ac.DeploymentStrategy().
		WithType(appsv1.RollingUpdateDeploymentStrategyType).
		WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
			WithMaxSurge(intstr.FromInt32(0)).
			WithMaxUnavailable(intstr.FromInt32(1))))
	return d
}

// MemcachedService is the ClusterIP Service in front of a Memcached's pool. m must be defaulted
// and valid. The target port is the container port's name, so each pod is reached on the port
// it declares.
func MemcachedService(m *cachev1.Memcached) *corev1ac.ServiceApplyConfiguration {
	return service(MemcachedApp, m.Name, m.Namespace, corev1.ServiceTypeClusterIP, corev1ac.ServicePort().
		WithName(MemcachedPortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(*m.Spec.ContainerPort).
		WithTargetPort(intstr.FromString(MemcachedPortName)))
}
