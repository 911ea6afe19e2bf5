package resources

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
)

// Constants of the welcome-web operand that the Deployment depends on.
const (
	// WelcomeApp is the app.kubernetes.io/name of the objects made for a Welcome.
	WelcomeApp = "welcome"
	// WelcomeContainer is the name of the web server container.
	WelcomeContainer = "welcome-web"
	// WelcomePortName names the web server's container port and Service port.
	WelcomePortName = "http"
	// WelcomeGreetingPath is where the web server greets.
	WelcomeGreetingPath = "/hello/"
	// WelcomeHealthPath is the web server's health endpoint, used by both probes.
	WelcomeHealthPath = "/healthz"
	// welcomeUID is the nonroot user of the distroless base image the operand ships in.
	welcomeUID = 65532
)

// WelcomeSelector is the label selector of a Welcome's pods: the Deployment's and the Service's
// selector.
func WelcomeSelector(name string) map[string]string {
	return selectorLabels(WelcomeApp, name)
}

// WelcomeImage is the image a Welcome's web server runs: spec.image, or defaultImage when it is
// empty.
func WelcomeImage(w *authv1.Welcome, defaultImage string) string {
	if w.Spec.Image != "" {
		return w.Spec.Image
	}
	return defaultImage
}

// WelcomeDeployment is the Deployment that runs a Welcome's web server. w must be defaulted;
// image is used when w.Spec.Image is empty (WelcomeImage).
func WelcomeDeployment(w *authv1.Welcome, image string) *appsv1ac.DeploymentApplyConfiguration {
	image = WelcomeImage(w, image)
	port := *w.Spec.Port
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath(WelcomeHealthPath).
			WithPort(intstr.FromString(WelcomePortName)))
	}
	container := corev1ac.Container().
		WithName(WelcomeContainer).
		WithImage(image).
		WithEnv(
			corev1ac.EnvVar().WithName("NAME").WithValue(w.Spec.Name),
			corev1ac.EnvVar().WithName("PORT").WithValue(strconv.Itoa(int(port))),
		).
		WithPorts(corev1ac.ContainerPort().WithName(WelcomePortName).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(probe().WithPeriodSeconds(5)).
		WithLivenessProbe(probe().WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(resourceList("10m", "16Mi")).
			WithLimits(resourceList("200m", "64Mi"))).
		WithSecurityContext(operandContainerSecurity())

	return deployment(WelcomeApp, w.Name, w.Namespace, *w.Spec.Replicas, corev1ac.PodSpec().
		WithSecurityContext(operandPodSecurity(welcomeUID)).
		WithContainers(container))
}

// WelcomeService is the Service in front of a Welcome's web server. w must be defaulted.
func WelcomeService(w *authv1.Welcome) *corev1ac.ServiceApplyConfiguration {
	port := *w.Spec.Port
	return service(WelcomeApp, w.Name, w.Namespace, w.Spec.ServiceType, corev1ac.ServicePort().
		WithName(WelcomePortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(port).
		WithTargetPort(intstr.FromInt32(port)))
}

// WelcomeServiceURL is where a Welcome greets inside the cluster; when the Service has a node
// port, it is named after the URL.
func WelcomeServiceURL(name, namespace string, port, nodePort int32) string {
	url := fmt.Sprintf("http://%s.%s.svc:%d%s", name, namespace, port, WelcomeGreetingPath)
	if nodePort != 0 {
		url += fmt.Sprintf(" (node port %d)", nodePort)
	}
	return url
}
