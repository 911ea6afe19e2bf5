package webhooks

// The rules in this file are the ones kube-apiserver applies to the Deployment and Service the
// controllers build (k8s.io/kubernetes v1.37.1, pkg/apis/core/validation), restated over the
// fields a custom resource copies into them, so that nothing admitted fails when it is applied.
// k8s.io/kubernetes is not a library: importing it means replacing every staging module, so the
// rules are built from the same apimachinery primitives it uses, and the differential test in
// test/integration holds them to the real API server.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// validateObjectName requires a custom resource's name to be usable as the name of its Service
// and as the value of its pods' app.kubernetes.io/instance label: a DNS-1035 label, which every
// supported Kubernetes version accepts as a Service name.
func validateObjectName(name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNS1035Label(name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name,
			msg+"; the name is also the name of the Service and a label value of the pods, so it must be a DNS-1035 label"))
	}
	return errs
}

// validEnvFieldPaths are the pod fields an environment variable may read through fieldRef.
var validEnvFieldPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// validEnvResources are the container resources an environment variable may read through
// resourceFieldRef, besides requests.hugepages-<size> and limits.hugepages-<size>.
var validEnvResources = []string{
	"limits.cpu", "limits.ephemeral-storage", "limits.memory",
	"requests.cpu", "requests.ephemeral-storage", "requests.memory",
}

// validateEnvVar holds one environment variable to the Pod API's rules. A variable may read a
// ConfigMap of the namespace, whose contents the namespace's view role already shows, but never
// a Secret: whoever may edit the DeployObject could otherwise read any Secret of the namespace
// through an image that prints its environment. The pod has no volumes, so fileKeyRef has nothing
// to read.
func validateEnvVar(e corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(e.Name) == "" {
		errs = append(errs, field.Required(path.Child("name"), "every environment variable needs a name"))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), e.Name, msg))
		}
	}
	src := e.ValueFrom
	if src == nil {
		return errs
	}
	from := path.Child("valueFrom")
	sources := 0
	if src.FieldRef != nil {
		sources++
		errs = append(errs, validateEnvFieldRef(src.FieldRef, from.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateEnvResourceFieldRef(src.ResourceFieldRef, from.Child("resourceFieldRef"))...)
	}
	if ref := src.ConfigMapKeyRef; ref != nil {
		sources++
		errs = append(errs, validateKeySelector("ConfigMap", ref.Name, ref.Key, from.Child("configMapKeyRef"))...)
	}
	if ref := src.SecretKeyRef; ref != nil {
		sources++
		errs = append(errs, field.Forbidden(from.Child("secretKeyRef"),
			"a DeployObject may not read Secrets, since whoever can edit it could read any Secret of the namespace; "+
				"use a configMapKeyRef, or a Deployment of your own").WithOrigin(string(DeployObjectEnvSecrets)))
		// A cluster admin may relax the rule above; what it lets through must still pass the Pod API.
		errs = append(errs, validateKeySelector("Secret", ref.Name, ref.Key, from.Child("secretKeyRef"))...)
	}
	if src.FileKeyRef != nil {
		sources++
		errs = append(errs, field.Forbidden(from.Child("fileKeyRef"),
			"the pod has no volumes to read a file from; use value or another source"))
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Required(from, "must set one of fieldRef, resourceFieldRef or configMapKeyRef"))
	case sources > 1:
		errs = append(errs, field.Invalid(from, sources, "must set only one source"))
	case e.Value != "":
		errs = append(errs, field.Invalid(from, e.Name, "must not be set together with value; keep one of them"))
	}
	return errs
}

func validateEnvFieldRef(ref *corev1.ObjectFieldSelector, path *field.Path) field.ErrorList {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return field.ErrorList{field.NotSupported(path.Child("apiVersion"), ref.APIVersion, []string{"v1"})}
	}
	if ref.FieldPath == "" {
		return field.ErrorList{field.Required(path.Child("fieldPath"), "name the pod field to read, such as metadata.name")}
	}
	// A label or an annotation is read by its key: metadata.labels['app.kubernetes.io/name'].
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		key, ok := strings.CutPrefix(ref.FieldPath, prefix+"['")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "']")
		if !ok {
			break
		}
		if prefix == "metadata.annotations" {
			key = strings.ToLower(key)
		}
		var errs field.ErrorList
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(path.Child("fieldPath"), ref.FieldPath, msg))
		}
		return errs
	}
	if !slices.Contains(validEnvFieldPaths, ref.FieldPath) {
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), ref.FieldPath,
			append(slices.Clone(validEnvFieldPaths), "metadata.labels['<key>']", "metadata.annotations['<key>']"))}
	}
	return nil
}

func validateEnvResourceFieldRef(ref *corev1.ResourceFieldSelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.ContainerName != "" && ref.ContainerName != appv1.ContainerName {
		errs = append(errs, field.NotSupported(path.Child("containerName"), ref.ContainerName, []string{appv1.ContainerName}))
	}
	hugePages := strings.HasPrefix(ref.Resource, "requests.hugepages-") || strings.HasPrefix(ref.Resource, "limits.hugepages-")
	switch {
	case ref.Resource == "":
		return append(errs, field.Required(path.Child("resource"), "name the resource to read, such as limits.memory"))
	case !hugePages && !slices.Contains(validEnvResources, ref.Resource):
		return append(errs, field.NotSupported(path.Child("resource"), ref.Resource,
			append(slices.Clone(validEnvResources), "limits.hugepages-<size>", "requests.hugepages-<size>")))
	}
	if ref.Divisor.IsZero() {
		return errs
	}
	allowed := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
	if strings.HasSuffix(ref.Resource, ".cpu") {
		allowed = []string{"1m", "1"}
	}
	if !slices.Contains(allowed, ref.Divisor.String()) {
		errs = append(errs, field.NotSupported(path.Child("divisor"), ref.Divisor.String(), allowed))
	}
	return errs
}

// validateKeySelector holds a reference to a key of a ConfigMap or Secret (kind) to the Pod API's
// rules: a DNS-1123 subdomain name and a key made of alphanumerics, '-', '_' and '.'.
func validateKeySelector(kind, name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name the "+kind+" to read"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(path.Child("name"), name, msg))
		}
	}
	if key == "" {
		return append(errs, field.Required(path.Child("key"), "name the key to read"))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Child("key"), key, msg))
	}
	return errs
}

// validateResources holds a container's compute resources to the Pod API's rules: known resource
// names, quantities that are not negative, whole numbers of extended resources, requests no
// higher than limits, and requests equal to limits for resources that cannot be overcommitted
// (extended resources and huge pages), huge pages only beside cpu or memory. A DeployObject's pod
// has no resource claims, so claims are refused.
func validateResources(res corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	cpuOrMemory, hugePages := false, false
	for _, list := range []struct {
		name   string
		values corev1.ResourceList
	}{{"limits", res.Limits}, {"requests", res.Requests}} {
		for _, name := range sortedResourceNames(list.values) {
			quantity := list.values[name]
			rp := path.Child(list.name).Key(string(name))
			errs = append(errs, validateResourceName(name, rp)...)
			errs = append(errs, validateResourceQuantity(name, quantity, rp)...)
			cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
			hugePages = hugePages || isHugePages(name)
			if list.name == "limits" {
				continue
			}
			limit, limited := res.Limits[name]
			switch {
			case !limited && !overcommitAllowed(name):
				errs = append(errs, field.Required(path.Child("limits").Key(string(name)),
					fmt.Sprintf("%s cannot be overcommitted, so its limit must be set, equal to the request %s", name, quantity.String())))
			case limited && !overcommitAllowed(name) && quantity.Cmp(limit) != 0:
				errs = append(errs, field.Invalid(rp, quantity.String(),
					fmt.Sprintf("must equal the limit %s: %s cannot be overcommitted", limit.String(), name)))
			case limited && quantity.Cmp(limit) > 0:
				errs = append(errs, field.Invalid(rp, quantity.String(), fmt.Sprintf("must not be above the limit %s", limit.String())))
			}
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "huge pages require a cpu or memory request or limit"))
	}
	for i := range res.Claims {
		errs = append(errs, field.Forbidden(path.Child("claims").Index(i),
			"the pod has no resource claims to refer to; remove the claim"))
	}
	return errs
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateResourceName accepts cpu, memory, ephemeral-storage, hugepages-<size>, and extended
// resources named with a domain outside kubernetes.io, such as example.com/gpu.
func validateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		return nil // the names nearly every container asks for, which pass every check below
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	switch {
	case !strings.Contains(string(name), "/"):
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !isHugePages(name) {
			errs = append(errs, field.Invalid(path, name,
				"must be cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource such as example.com/gpu"))
		}
	case !isNativeResource(name) && !isExtendedResource(name):
		errs = append(errs, field.Invalid(path, name, "is not a valid extended resource name, such as example.com/gpu"))
	}
	return errs
}

func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must not be negative")}
	}
	var errs field.ErrorList
	if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, q.String(), "must be a whole number: extended resources are counted in units"))
	}
	if isHugePages(name) {
		pageSize, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
		if err != nil || pageSize.Sign() <= 0 || pageSize.MilliValue()%1000 != 0 || q.Value()%pageSize.Value() != 0 {
			errs = append(errs, field.Invalid(path, q.String(), fmt.Sprintf("must be a whole multiple of the page size of %s", name)))
		}
	}
	return errs
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isNativeResource reports whether a resource is in the kubernetes.io domain; unqualified names are.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

// validateAppProtocol requires a Service port's appProtocol to be a qualified name, such as http
// or kubernetes.io/h2c.
func validateAppProtocol(appProtocol *string, path *field.Path) field.ErrorList {
	if appProtocol == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(*appProtocol) {
		errs = append(errs, field.Invalid(path, *appProtocol, msg))
	}
	return errs
}

// The port numbers the Pod and Service APIs accept.
const (
	minPort = 1
	maxPort = 65535
)

// validatePort requires a port number the Pod and Service APIs accept: 1 to 65535.
func validatePort(port int32, path *field.Path) field.ErrorList {
	if port < minPort || port > maxPort {
		return field.ErrorList{field.Invalid(path, port, "must be between 1 and 65535")}
	}
	return nil
}

// validateImagePullSecrets holds the pull secrets to what the Deployment's apply needs: the Pod
// API keys spec.imagePullSecrets by name (a list map), so server-side apply refuses a name given
// twice, which kube-apiserver itself only warns of. An empty name, which the apply takes, and a
// name no Secret can have are refused too: kubelet would find no Secret by them.
func validateImagePullSecrets(secrets []corev1.LocalObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(secrets))
	for i, s := range secrets {
		p := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, "the name of a Secret of the namespace, of type kubernetes.io/dockerconfigjson"))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		default:
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p, s.Name, msg+"; it must be the name of a Secret"))
			}
		}
		seen[s.Name] = true
	}
	return errs
}

// validateProbes holds the probes to the Pod API's rules as kube-apiserver applies them to the
// Deployment's pod template, once it has defaulted it: a zero timeoutSeconds, periodSeconds,
// successThreshold or failureThreshold and an empty httpGet path or scheme are defaulted there
// (to 1, 10, 1, 3, "/" and HTTP), so they pass here. Besides those rules:
//   - httpGet.protocol and grpc.mode are refused: the oldest Kubernetes the operator supports has
//     neither, and would refuse the Deployment's apply.
//   - A host is refused: a probe checks the pod's own IP. The baseline Pod Security Standard,
//     which restricted includes, refuses any host from Kubernetes 1.34 on (pod-security-admission's
//     hostProbesAndHostLifecycle), as a probe could reach another machine from the node.
func validateProbes(spec *appv1.DeployObjectSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, p := range probesOf(spec) {
		errs = append(errs, validateProbe(p.probe, path.Child(p.field), p.field != "readinessProbe")...)
	}
	return errs
}

// namedProbe is one of a DeployObject's probes and the field of spec that holds it.
type namedProbe struct {
	field string
	probe *corev1.Probe
}

// probesOf are the probes of spec, each under its field, set or not.
func probesOf(spec *appv1.DeployObjectSpec) []namedProbe {
	return []namedProbe{{"readinessProbe", spec.ReadinessProbe}, {"livenessProbe", spec.LivenessProbe}, {"startupProbe", spec.StartupProbe}}
}

// validateProbe holds one probe to validateProbes' rules. A liveness or startup probe (oneSuccess)
// must succeed once to count, and only a readiness probe may not set a grace period of its own.
func validateProbe(p *corev1.Probe, path *field.Path, oneSuccess bool) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	handlers := 0
	handler := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		switch {
		case !set:
		case handlers > 0:
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
		default:
			handlers++
			errs = append(errs, validate(path.Child(name))...)
		}
	}
	handler(p.Exec != nil, "exec", func(path *field.Path) field.ErrorList {
		if len(p.Exec.Command) == 0 {
			return field.ErrorList{field.Required(path.Child("command"), "the command the probe runs in the container")}
		}
		return nil
	})
	handler(p.HTTPGet != nil, "httpGet", func(path *field.Path) field.ErrorList { return validateHTTPGetProbe(p.HTTPGet, path) })
	handler(p.TCPSocket != nil, "tcpSocket", func(path *field.Path) field.ErrorList {
		return append(validatePortNumOrName(p.TCPSocket.Port, path.Child("port")), validateProbeHost(p.TCPSocket.Host, path.Child("host"))...)
	})
	handler(p.GRPC != nil, "grpc", func(path *field.Path) field.ErrorList {
		errs := validatePort(p.GRPC.Port, path.Child("port"))
		if p.GRPC.Mode != nil {
			errs = append(errs, field.Forbidden(path.Child("mode"), "is not supported: the oldest Kubernetes version the operator supports lacks it"))
		}
		return errs
	})
	if handlers == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type: exec, httpGet, tcpSocket or grpc"))
	}
	for _, n := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold},
	} {
		if n.value < 0 {
			errs = append(errs, field.Invalid(path.Child(n.name), n.value, "must be greater than or equal to 0"))
		}
	}
	if oneSuccess && p.SuccessThreshold != 0 && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if grace := p.TerminationGracePeriodSeconds; grace != nil {
		switch {
		case !oneSuccess:
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *grace, "must not be set for readinessProbes"))
		case *grace <= 0:
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *grace, "must be greater than 0"))
		}
	}
	return errs
}

var probeSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

// validateHTTPGetProbe holds an httpGet probe to the Pod API's rules and validateProbes' own.
func validateHTTPGetProbe(h *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	errs := validatePortNumOrName(h.Port, path.Child("port"))
	errs = append(errs, validateProbeHost(h.Host, path.Child("host"))...)
	if h.Scheme != "" && !slices.Contains(probeSchemes, h.Scheme) {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, probeSchemes))
	}
	for i, header := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), header.Name, msg))
		}
	}
	if h.Protocol != nil {
		errs = append(errs, field.Forbidden(path.Child("protocol"), "is not supported: the oldest Kubernetes version the operator supports lacks it"))
	}
	return errs
}

// validateProbeHost refuses a probe's host.
func validateProbeHost(host string, path *field.Path) field.ErrorList {
	if host == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(path, host,
		"must be unset, so that the probe checks the pod's own IP: the Pod Security Standards (baseline and restricted) refuse a probe's host")}
}

// validatePortNumOrName holds a port given by number or name (a probe's port, a Service's
// targetPort) to the Pod API's rules: a number 1-65535, or an IANA service name.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(path, port.StrVal, msg))
		}
		return errs
	}
	return validatePort(port.IntVal, path)
}
