package v1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultReplicas is the number of pods when spec.replicas is unset. The CRD's schema applies it
// before admission (a +kubebuilder:default marker, which a test holds equal to it).
const DefaultReplicas int32 = 1

// ContainerName is the name of the one container of a DeployObject's pods, which runs spec.image:
// the name a resourceFieldRef in spec.env may give as its containerName.
const ContainerName = "app"

// Structural bounds of a DeployObject, which the CRD's schema holds (the markers and CEL rules
// below, which a test holds equal to these) so that kube-apiserver refuses an absurd size before
// it calls any validating webhook. They are far above the webhook's rules where a cluster admin
// may relax those, and Kubernetes' own limits where it has them.
const (
	// MaxImageLength is the most characters of spec.image.
	MaxImageLength = 4096
	// MaxEnvItems is the most environment variables; the webhook's rule allows 100.
	MaxEnvItems = 1000
	// MaxEnvNameLength is the most characters of a variable's name.
	MaxEnvNameLength = 4096
	// MaxEnvValueLength is the most characters of a variable's value, 1 MiB, so that the
	// Deployment that carries it still fits in etcd (1.5 MiB); the webhook's rule allows 32 KiB.
	MaxEnvValueLength = 1 << 20
	// MaxPortsItems is the most Service ports: an EndpointSlice holds at most 100 ports, so a
	// Service of more could not be served.
	MaxPortsItems = 100
	// MaxResourcesProperties is the most entries of spec.resources.limits, and of
	// spec.resources.requests.
	MaxResourcesProperties = 64
	// MaxQuantityLength is the most characters of a quantity in spec.resources or a divisor: an
	// int64 has 19 digits, and a suffix or exponent a few more.
	MaxQuantityLength = 64
	// MaxClaimsItems is the most spec.resources.claims; the webhook refuses any, as the pod has
	// no resource claims.
	MaxClaimsItems = 16
	// MaxCommandItems is the most items of spec.command, and of spec.args.
	MaxCommandItems = 1000
	// MaxCommandItemLength is the most characters of one item of spec.command or spec.args:
	// Linux's MAX_ARG_STRLEN, past which execve refuses to start the process.
	MaxCommandItemLength = 128 << 10
	// MaxImagePullSecretsItems is the most spec.imagePullSecrets.
	MaxImagePullSecretsItems = 64
	// MaxImagePullSecretNameLength is the most characters of a pull secret's name, a Secret's
	// (a DNS-1123 subdomain).
	MaxImagePullSecretNameLength = 253
	// MaxProbePathLength is the most characters of a probe's httpGet.path.
	MaxProbePathLength = 4096
	// MaxProbeHostLength is the most characters of a probe's httpGet.host or tcpSocket.host, a
	// DNS-1123 subdomain or an IP address.
	MaxProbeHostLength = 253
	// MaxProbeHeadersItems is the most httpGet.httpHeaders of a probe.
	MaxProbeHeadersItems = 64
	// MaxProbeHeaderLength is the most characters of a probe's header name, and of its value.
	MaxProbeHeaderLength = 8192
	// MaxProbeServiceLength is the most characters of a probe's grpc.service.
	MaxProbeServiceLength = 4096
	// MaxDeploymentConditionsItems is the most conditions status.deploymentConditions mirrors;
	// a Deployment reports three types.
	MaxDeploymentConditionsItems = 32
	// MaxConditionTypeLength is the most characters of a mirrored Deployment condition's type,
	// as of a metav1.Condition's.
	MaxConditionTypeLength = 316
	// MaxConditionStatusLength is the most characters of a mirrored Deployment condition's
	// status, True, False or Unknown.
	MaxConditionStatusLength = 64
	// MaxConditionReasonLength is the most characters of a mirrored Deployment condition's
	// reason, as of a metav1.Condition's.
	MaxConditionReasonLength = 1024
	// MaxConditionMessageLength is the most characters of a mirrored Deployment condition's
	// message, as of a metav1.Condition's.
	MaxConditionMessageLength = 32768
)

// DeployObjectSpec is the desired state of a generic app: one Deployment behind one Service.
//
// Image rules and ranges are enforced by the validating webhook, not by this schema, so that one
// bad object gets every violation in a single reply. The schema holds only structural bounds,
// which kube-apiserver checks before calling any webhook: far above the webhook's rules a cluster
// admin may relax, and Kubernetes' own limits where it has them. The fields of Kubernetes' own
// types are bounded by the CEL rules on the field that holds them.
type DeployObjectSpec struct {
	// Replicas is the number of pods, at most 100 unless the AdmissionPolicy's maxReplicas raises
	// the cap or the policy relaxes deployobject.replicas.max. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Replicas *int32 `json:"replicas,omitempty"`

	// Image is the container image, with an explicit tag or digest. The schema refuses more
	// than 4096 characters.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Image string `json:"image"`

	// Resources are the container's compute resource requests and limits. The schema refuses
	// more than 64 limits or requests, a resource name of more than 317 characters (a qualified
	// name), a quantity of more than 64, and more than 16 claims, each named in at most 63 (a
	// DNS-1123 label).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || self.limits.size() <= 64",message="spec.resources.limits must have at most 64 entries"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || self.limits.all(k, k.size() <= 317 && (type(self.limits[k]) != string || self.limits[k].size() <= 64))",message="spec.resources.limits[*] must be a quantity of at most 64 characters, named by a resource name of at most 317 (a qualified name)"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || self.requests.size() <= 64",message="spec.resources.requests must have at most 64 entries"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || self.requests.all(k, k.size() <= 317 && (type(self.requests[k]) != string || self.requests[k].size() <= 64))",message="spec.resources.requests[*] must be a quantity of at most 64 characters, named by a resource name of at most 317 (a qualified name)"
	// +kubebuilder:validation:XValidation:rule="!has(self.claims) || self.claims.size() <= 16",message="spec.resources.claims must have at most 16 items"
	// +kubebuilder:validation:XValidation:rule="!has(self.claims) || self.claims.all(c, (!has(c.name) || c.name.size() <= 63) && (!has(c.request) || c.request.size() <= 63))",message="spec.resources.claims[*].name and spec.resources.claims[*].request must have at most 63 characters (a DNS-1123 label)"
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`

	// Env are the container's environment variables: at most 100, each value at most 32 KiB, and
	// names and values at most 256 KiB in all. The schema refuses more than 1000 variables, a
	// name of more than 4096 characters, a value of more than 1 MiB (so that the Deployment still
	// fits in etcd), and references longer than Kubernetes allows.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.name) || e.name.size() <= 4096)",message="spec.env[*].name must have at most 4096 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.value) || e.value.size() <= 1048576)",message="spec.env[*].value must have at most 1048576 characters (1 MiB), so that the Deployment still fits in etcd"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.configMapKeyRef) || ((!has(e.valueFrom.configMapKeyRef.name) || e.valueFrom.configMapKeyRef.name.size() <= 253) && (!has(e.valueFrom.configMapKeyRef.key) || e.valueFrom.configMapKeyRef.key.size() <= 253)))",message="spec.env[*].valueFrom.configMapKeyRef.name and spec.env[*].valueFrom.configMapKeyRef.key must have at most 253 characters (a ConfigMap's name and key)"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef) || ((!has(e.valueFrom.secretKeyRef.name) || e.valueFrom.secretKeyRef.name.size() <= 253) && (!has(e.valueFrom.secretKeyRef.key) || e.valueFrom.secretKeyRef.key.size() <= 253)))",message="spec.env[*].valueFrom.secretKeyRef.name and spec.env[*].valueFrom.secretKeyRef.key must have at most 253 characters (a Secret's name and key)"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.fieldRef) || ((!has(e.valueFrom.fieldRef.apiVersion) || e.valueFrom.fieldRef.apiVersion.size() <= 317) && (!has(e.valueFrom.fieldRef.fieldPath) || e.valueFrom.fieldRef.fieldPath.size() <= 1024)))",message="spec.env[*].valueFrom.fieldRef.apiVersion must have at most 317 characters (a group and version) and spec.env[*].valueFrom.fieldRef.fieldPath at most 1024"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.resourceFieldRef) || ((!has(e.valueFrom.resourceFieldRef.containerName) || e.valueFrom.resourceFieldRef.containerName.size() <= 63) && (!has(e.valueFrom.resourceFieldRef.resource) || e.valueFrom.resourceFieldRef.resource.size() <= 1024) && (!has(e.valueFrom.resourceFieldRef.divisor) || type(e.valueFrom.resourceFieldRef.divisor) != string || e.valueFrom.resourceFieldRef.divisor.size() <= 64)))",message="spec.env[*].valueFrom.resourceFieldRef.containerName must have at most 63 characters (a DNS-1123 label), spec.env[*].valueFrom.resourceFieldRef.resource at most 1024 and spec.env[*].valueFrom.resourceFieldRef.divisor at most 64"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.valueFrom) || !has(e.valueFrom.fileKeyRef) || ((!has(e.valueFrom.fileKeyRef.volumeName) || e.valueFrom.fileKeyRef.volumeName.size() <= 63) && (!has(e.valueFrom.fileKeyRef.path) || e.valueFrom.fileKeyRef.path.size() <= 4096) && (!has(e.valueFrom.fileKeyRef.key) || e.valueFrom.fileKeyRef.key.size() <= 4096)))",message="spec.env[*].valueFrom.fileKeyRef.volumeName must have at most 63 characters (a DNS-1123 label), spec.env[*].valueFrom.fileKeyRef.path and spec.env[*].valueFrom.fileKeyRef.key at most 4096"
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Ports are the Service's ports; each targetPort is also a container port. The schema
	// refuses more than 100 ports, as an EndpointSlice holds at most 100 and a Service of more
	// could not be served; port numbers beyond the int32 range; a name of more than 63 characters
	// (a DNS-1123 label), a protocol of more than 64 and an appProtocol of more than 317 (a
	// qualified name).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.port) || (p.port >= -2147483648 && p.port <= 2147483647))",message="spec.ports[*].port must be within the int32 range, -2147483648 to 2147483647"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.nodePort) || (p.nodePort >= -2147483648 && p.nodePort <= 2147483647))",message="spec.ports[*].nodePort must be within the int32 range, -2147483648 to 2147483647"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.targetPort) || (type(p.targetPort) == string ? p.targetPort.size() <= 63 : (p.targetPort >= -2147483648 && p.targetPort <= 2147483647)))",message="spec.ports[*].targetPort must be a number within the int32 range, -2147483648 to 2147483647, or a name of at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.name) || p.name.size() <= 63)",message="spec.ports[*].name must have at most 63 characters (a DNS-1123 label)"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.protocol) || p.protocol.size() <= 64)",message="spec.ports[*].protocol must have at most 64 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.appProtocol) || p.appProtocol.size() <= 317)",message="spec.ports[*].appProtocol must have at most 317 characters (a qualified name)"
	Ports []corev1.ServicePort `json:"ports,omitempty"`

	// Command replaces the image's entrypoint, as a container's command does; unset, the image's
	// own runs. Not run in a shell: $(VAR) expands to the variable of spec.env, as in a Pod. The
	// schema refuses more than 1000 items and an item of more than 131072 characters (128 KiB,
	// Linux's limit on one argument).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=131072
	Command []string `json:"command,omitempty"`

	// Args replaces the image's arguments (its CMD), as a container's args do. Bounded as
	// Command.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=131072
	Args []string `json:"args,omitempty"`

	// ImagePullSecrets name Secrets of the namespace, of type kubernetes.io/dockerconfigjson,
	// whose credentials kubelet uses to pull spec.image from a private registry. Each names a
	// Secret (a DNS-1123 subdomain) once. The schema refuses more than 64 and a name of more than
	// 253 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(s, !has(s.name) || s.name.size() <= 253)",message="spec.imagePullSecrets[*].name must have at most 253 characters (a Secret's name)"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// ReadinessProbe tells when a pod is ready to serve: until it succeeds, the pod is out of the Service and a rollout waits for it, and so do the Ready condition and kstatus. A container's readiness probe, under the Pod API's rules (rule deployobject.probes.valid); an httpGet or tcpSocket probe checks the pod's own IP and may not set host, which the Pod Security Standards refuse. The schema refuses more than 1000 items of exec.command, strings longer than Kubernetes allows and numbers beyond the int32 range.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || !has(self.exec.command) || (self.exec.command.size() <= 1000 && self.exec.command.all(c, c.size() <= 131072))",message="spec.readinessProbe.exec.command must have at most 1000 items, spec.readinessProbe.exec.command[*] at most 131072 characters each"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || ((!has(self.httpGet.path) || self.httpGet.path.size() <= 4096) && (!has(self.httpGet.host) || self.httpGet.host.size() <= 253) && (!has(self.httpGet.scheme) || self.httpGet.scheme.size() <= 64) && (!has(self.httpGet.protocol) || self.httpGet.protocol.size() <= 64) && (!has(self.httpGet.port) || (type(self.httpGet.port) == string ? self.httpGet.port.size() <= 63 : (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647))))",message="spec.readinessProbe.httpGet.path must have at most 4096 characters, spec.readinessProbe.httpGet.host at most 253, spec.readinessProbe.httpGet.scheme and spec.readinessProbe.httpGet.protocol at most 64, and spec.readinessProbe.httpGet.port must be a number within the int32 range or a name of at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || !has(self.httpGet.httpHeaders) || (self.httpGet.httpHeaders.size() <= 64 && self.httpGet.httpHeaders.all(h, (!has(h.name) || h.name.size() <= 8192) && (!has(h.value) || h.value.size() <= 8192)))",message="spec.readinessProbe.httpGet.httpHeaders must have at most 64 items, spec.readinessProbe.httpGet.httpHeaders[*].name and spec.readinessProbe.httpGet.httpHeaders[*].value at most 8192 characters"
	// +kubebuilder:validation:XValidation:rule="(!has(self.tcpSocket) || ((!has(self.tcpSocket.host) || self.tcpSocket.host.size() <= 253) && (!has(self.tcpSocket.port) || (type(self.tcpSocket.port) == string ? self.tcpSocket.port.size() <= 63 : (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647))))) && (!has(self.grpc) || ((!has(self.grpc.service) || self.grpc.service.size() <= 4096) && (!has(self.grpc.mode) || self.grpc.mode.size() <= 64)))",message="spec.readinessProbe.tcpSocket.host must have at most 253 characters, spec.readinessProbe.tcpSocket.port must be a number within the int32 range or a name of at most 63 characters, spec.readinessProbe.grpc.service must have at most 4096 characters and spec.readinessProbe.grpc.mode at most 64"
	// +kubebuilder:validation:XValidation:rule="(!has(self.initialDelaySeconds) || (self.initialDelaySeconds >= -2147483648 && self.initialDelaySeconds <= 2147483647)) && (!has(self.timeoutSeconds) || (self.timeoutSeconds >= -2147483648 && self.timeoutSeconds <= 2147483647)) && (!has(self.periodSeconds) || (self.periodSeconds >= -2147483648 && self.periodSeconds <= 2147483647)) && (!has(self.successThreshold) || (self.successThreshold >= -2147483648 && self.successThreshold <= 2147483647)) && (!has(self.failureThreshold) || (self.failureThreshold >= -2147483648 && self.failureThreshold <= 2147483647)) && (!has(self.grpc) || !has(self.grpc.port) || (self.grpc.port >= -2147483648 && self.grpc.port <= 2147483647))",message="spec.readinessProbe.initialDelaySeconds, spec.readinessProbe.timeoutSeconds, spec.readinessProbe.periodSeconds, spec.readinessProbe.successThreshold, spec.readinessProbe.failureThreshold and spec.readinessProbe.grpc.port must be within the int32 range, -2147483648 to 2147483647"
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe restarts the container when it fails: a container's liveness probe, its successThreshold 1, otherwise as ReadinessProbe.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || !has(self.exec.command) || (self.exec.command.size() <= 1000 && self.exec.command.all(c, c.size() <= 131072))",message="spec.livenessProbe.exec.command must have at most 1000 items, spec.livenessProbe.exec.command[*] at most 131072 characters each"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || ((!has(self.httpGet.path) || self.httpGet.path.size() <= 4096) && (!has(self.httpGet.host) || self.httpGet.host.size() <= 253) && (!has(self.httpGet.scheme) || self.httpGet.scheme.size() <= 64) && (!has(self.httpGet.protocol) || self.httpGet.protocol.size() <= 64) && (!has(self.httpGet.port) || (type(self.httpGet.port) == string ? self.httpGet.port.size() <= 63 : (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647))))",message="spec.livenessProbe.httpGet.path must have at most 4096 characters, spec.livenessProbe.httpGet.host at most 253, spec.livenessProbe.httpGet.scheme and spec.livenessProbe.httpGet.protocol at most 64, and spec.livenessProbe.httpGet.port must be a number within the int32 range or a name of at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || !has(self.httpGet.httpHeaders) || (self.httpGet.httpHeaders.size() <= 64 && self.httpGet.httpHeaders.all(h, (!has(h.name) || h.name.size() <= 8192) && (!has(h.value) || h.value.size() <= 8192)))",message="spec.livenessProbe.httpGet.httpHeaders must have at most 64 items, spec.livenessProbe.httpGet.httpHeaders[*].name and spec.livenessProbe.httpGet.httpHeaders[*].value at most 8192 characters"
	// +kubebuilder:validation:XValidation:rule="(!has(self.tcpSocket) || ((!has(self.tcpSocket.host) || self.tcpSocket.host.size() <= 253) && (!has(self.tcpSocket.port) || (type(self.tcpSocket.port) == string ? self.tcpSocket.port.size() <= 63 : (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647))))) && (!has(self.grpc) || ((!has(self.grpc.service) || self.grpc.service.size() <= 4096) && (!has(self.grpc.mode) || self.grpc.mode.size() <= 64)))",message="spec.livenessProbe.tcpSocket.host must have at most 253 characters, spec.livenessProbe.tcpSocket.port must be a number within the int32 range or a name of at most 63 characters, spec.livenessProbe.grpc.service must have at most 4096 characters and spec.livenessProbe.grpc.mode at most 64"
	// +kubebuilder:validation:XValidation:rule="(!has(self.initialDelaySeconds) || (self.initialDelaySeconds >= -2147483648 && self.initialDelaySeconds <= 2147483647)) && (!has(self.timeoutSeconds) || (self.timeoutSeconds >= -2147483648 && self.timeoutSeconds <= 2147483647)) && (!has(self.periodSeconds) || (self.periodSeconds >= -2147483648 && self.periodSeconds <= 2147483647)) && (!has(self.successThreshold) || (self.successThreshold >= -2147483648 && self.successThreshold <= 2147483647)) && (!has(self.failureThreshold) || (self.failureThreshold >= -2147483648 && self.failureThreshold <= 2147483647)) && (!has(self.grpc) || !has(self.grpc.port) || (self.grpc.port >= -2147483648 && self.grpc.port <= 2147483647))",message="spec.livenessProbe.initialDelaySeconds, spec.livenessProbe.timeoutSeconds, spec.livenessProbe.periodSeconds, spec.livenessProbe.successThreshold, spec.livenessProbe.failureThreshold and spec.livenessProbe.grpc.port must be within the int32 range, -2147483648 to 2147483647"
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// StartupProbe holds the other probes back until it succeeds once, for a slow start: a container's startup probe, its successThreshold 1, otherwise as ReadinessProbe.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.exec) || !has(self.exec.command) || (self.exec.command.size() <= 1000 && self.exec.command.all(c, c.size() <= 131072))",message="spec.startupProbe.exec.command must have at most 1000 items, spec.startupProbe.exec.command[*] at most 131072 characters each"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || ((!has(self.httpGet.path) || self.httpGet.path.size() <= 4096) && (!has(self.httpGet.host) || self.httpGet.host.size() <= 253) && (!has(self.httpGet.scheme) || self.httpGet.scheme.size() <= 64) && (!has(self.httpGet.protocol) || self.httpGet.protocol.size() <= 64) && (!has(self.httpGet.port) || (type(self.httpGet.port) == string ? self.httpGet.port.size() <= 63 : (self.httpGet.port >= -2147483648 && self.httpGet.port <= 2147483647))))",message="spec.startupProbe.httpGet.path must have at most 4096 characters, spec.startupProbe.httpGet.host at most 253, spec.startupProbe.httpGet.scheme and spec.startupProbe.httpGet.protocol at most 64, and spec.startupProbe.httpGet.port must be a number within the int32 range or a name of at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.httpGet) || !has(self.httpGet.httpHeaders) || (self.httpGet.httpHeaders.size() <= 64 && self.httpGet.httpHeaders.all(h, (!has(h.name) || h.name.size() <= 8192) && (!has(h.value) || h.value.size() <= 8192)))",message="spec.startupProbe.httpGet.httpHeaders must have at most 64 items, spec.startupProbe.httpGet.httpHeaders[*].name and spec.startupProbe.httpGet.httpHeaders[*].value at most 8192 characters"
	// +kubebuilder:validation:XValidation:rule="(!has(self.tcpSocket) || ((!has(self.tcpSocket.host) || self.tcpSocket.host.size() <= 253) && (!has(self.tcpSocket.port) || (type(self.tcpSocket.port) == string ? self.tcpSocket.port.size() <= 63 : (self.tcpSocket.port >= -2147483648 && self.tcpSocket.port <= 2147483647))))) && (!has(self.grpc) || ((!has(self.grpc.service) || self.grpc.service.size() <= 4096) && (!has(self.grpc.mode) || self.grpc.mode.size() <= 64)))",message="spec.startupProbe.tcpSocket.host must have at most 253 characters, spec.startupProbe.tcpSocket.port must be a number within the int32 range or a name of at most 63 characters, spec.startupProbe.grpc.service must have at most 4096 characters and spec.startupProbe.grpc.mode at most 64"
	// +kubebuilder:validation:XValidation:rule="(!has(self.initialDelaySeconds) || (self.initialDelaySeconds >= -2147483648 && self.initialDelaySeconds <= 2147483647)) && (!has(self.timeoutSeconds) || (self.timeoutSeconds >= -2147483648 && self.timeoutSeconds <= 2147483647)) && (!has(self.periodSeconds) || (self.periodSeconds >= -2147483648 && self.periodSeconds <= 2147483647)) && (!has(self.successThreshold) || (self.successThreshold >= -2147483648 && self.successThreshold <= 2147483647)) && (!has(self.failureThreshold) || (self.failureThreshold >= -2147483648 && self.failureThreshold <= 2147483647)) && (!has(self.grpc) || !has(self.grpc.port) || (self.grpc.port >= -2147483648 && self.grpc.port <= 2147483647))",message="spec.startupProbe.initialDelaySeconds, spec.startupProbe.timeoutSeconds, spec.startupProbe.periodSeconds, spec.startupProbe.successThreshold, spec.startupProbe.failureThreshold and spec.startupProbe.grpc.port must be within the int32 range, -2147483648 to 2147483647"
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`
}

// DeployObjectStatus is the observed state of the app: the Deployment's status and our own conditions.
type DeployObjectStatus struct {
	// ObservedGeneration is the generation of the spec this status describes; 0 until the
	// operator first reports, so that no tool takes an object it has not seen for done.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of pods the Deployment targets.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of pods running the current pod template.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of ready pods.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of pods ready for at least minReadySeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UnavailableReplicas is the number of pods still missing for the Deployment to be fully available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// DeploymentConditions are the Deployment's own conditions, mirrored: at most 32, their
	// strings bounded as a metav1.Condition's (type 316 characters, status 64, reason 1024,
	// message 32768). The operator cuts what it mirrors to fit.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.type) || c.type.size() <= 316)",message="status.deploymentConditions[*].type must have at most 316 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.status) || c.status.size() <= 64)",message="status.deploymentConditions[*].status must have at most 64 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.reason) || c.reason.size() <= 1024)",message="status.deploymentConditions[*].reason must have at most 1024 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(c, !has(c.message) || c.message.size() <= 32768)",message="status.deploymentConditions[*].message must have at most 32768 characters"
	DeploymentConditions []appsv1.DeploymentCondition `json:"deploymentConditions,omitempty"`

	// Conditions are Ready, Reconciling, Stalled and Compliant, as kstatus reads them: Ready is True
	// once the spec is fully rolled out, Reconciling while it is being rolled out, Stalled when it
	// cannot progress without a change (docs/operations.md#conditions). At most 32.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeployObject is a generic app: an image run as a Deployment and exposed by a Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dobj,categories=seedlabs
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Compliant",type=string,JSONPath=`.status.conditions[?(@.type=="Compliant")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeployObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DeployObjectSpec `json:"spec"`
	// +kubebuilder:default={}
	Status DeployObjectStatus `json:"status,omitzero"`
}

// GetConditions returns the conditions of the status.
func (d *DeployObject) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the conditions of the status.
func (d *DeployObject) SetConditions(conditions []metav1.Condition) { d.Status.Conditions = conditions }

// SetObservedGeneration records the generation of the spec the status describes.
func (d *DeployObject) SetObservedGeneration(generation int64) {
	d.Status.ObservedGeneration = generation
}

// DeployObjectList is a list of DeployObject objects.
//
// +kubebuilder:object:root=true
type DeployObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeployObject `json:"items"`
}
