package resources

import (
	"cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// DeployObjectApp is the app.kubernetes.io/name of the objects made for a DeployObject.
const DeployObjectApp = "deployobject"

// DeployObjectSelector is the label selector of a DeployObject's pods: the Deployment's and the
// Service's selector.
func DeployObjectSelector(name string) map[string]string {
	return selectorLabels(DeployObjectApp, name)
}

// DeployObjectDeployment is the Deployment that runs a DeployObject's image. d must be defaulted
// and valid.
//
// Everything the spec sets is in the pod template or in spec.replicas, so server-side apply rolls
// out every edit of the spec, and what the spec no longer lists (an environment variable, a port)
// leaves the template, because the operator's field manager owned it and no longer applies it.
func DeployObjectDeployment(d *appv1.DeployObject) *appsv1ac.DeploymentApplyConfiguration {
	container := corev1ac.Container().
		WithName(appv1.ContainerName).
		WithImage(d.Spec.Image).
		WithCommand(d.Spec.Command...).
		WithArgs(d.Spec.Args...).
		WithEnv(deployObjectEnv(d.Spec.Env)...).
		WithPorts(deployObjectContainerPorts(d.Spec.Ports)...).
		WithResources(resourceRequirements(d.Spec.Resources)).
		WithReadinessProbe(probe(d.Spec.ReadinessProbe)).
		WithLivenessProbe(probe(d.Spec.LivenessProbe)).
		WithStartupProbe(probe(d.Spec.StartupProbe)).
		// The root file system is left writable, unlike the operands': an arbitrary image may
		// well write to it (a cache, a PID file, /tmp), with no volume a DeployObject could mount
		// there.
		WithSecurityContext(restrictedContainerSecurity())

	return deployment(DeployObjectApp, d.Name, d.Namespace, *d.Spec.Replicas, corev1ac.PodSpec().
		// No user: the image is the user's, so it runs as the user the image declares, which
		// the kubelet refuses to start if it is root.
		WithSecurityContext(restrictedPodSecurity()).
		WithImagePullSecrets(pullSecrets(d.Spec.ImagePullSecrets)...).
		WithContainers(container))
}

// DeployObjectService is the ClusterIP Service in front of a DeployObject's pods, with exactly
// the ports of spec.ports. d must be defaulted and valid.
//
// Service ports are a list map keyed by port and protocol. A port removed from spec.ports, or
// whose number or protocol changed, is missing from the applied configuration, so server-side
// apply removes the element the operator's field manager owned; the container ports, keyed by
// containerPort and protocol, follow the same way.
func DeployObjectService(d *appv1.DeployObject) *corev1ac.ServiceApplyConfiguration {
	ports := make([]*corev1ac.ServicePortApplyConfiguration, 0, len(d.Spec.Ports))
	for _, p := range d.Spec.Ports {
		port := corev1ac.ServicePort().
			WithProtocol(p.Protocol).
			WithPort(p.Port).
			WithTargetPort(p.TargetPort)
		if p.Name != "" {
			port.WithName(p.Name)
		}
		if p.AppProtocol != nil {
			port.WithAppProtocol(*p.AppProtocol)
		}
		ports = append(ports, port)
	}
	return service(DeployObjectApp, d.Name, d.Namespace, corev1.ServiceTypeClusterIP, ports...)
}

// deployObjectContainerPorts declares the container port behind each Service port. An int
// targetPort is the container port itself. A named targetPort is resolved by the endpoints
// controller against the pods' container ports of that name and protocol, so it becomes a
// container port of that name on the Service port's number.
//
// Container ports are a list map keyed by containerPort and protocol, and their names must be
// unique within a container, so the first port of each key is kept, and a name already given to
// an earlier port is not given again. A port kept without a name takes the name of a later
// duplicate, so that the duplicate's named targetPort still resolves.
func deployObjectContainerPorts(ports []corev1.ServicePort) []*corev1ac.ContainerPortApplyConfiguration {
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	var out []*corev1ac.ContainerPortApplyConfiguration
	byKey := make(map[key]*corev1ac.ContainerPortApplyConfiguration, len(ports))
	named := make(map[string]bool, len(ports))
	for _, p := range ports {
		k := key{port: p.TargetPort.IntVal, protocol: p.Protocol}
		name := ""
		if p.TargetPort.Type == intstr.String {
			k.port, name = p.Port, p.TargetPort.StrVal
		}
		if named[name] {
			name = ""
		}
		if kept, seen := byKey[k]; seen {
			if kept.Name == nil && name != "" {
				kept.WithName(name)
				named[name] = true
			}
			continue
		}
		cp := corev1ac.ContainerPort().WithContainerPort(k.port).WithProtocol(k.protocol)
		if name != "" {
			cp.WithName(name)
			named[name] = true
		}
		byKey[k] = cp
		out = append(out, cp)
	}
	return out
}

// deployObjectEnv converts the spec's environment variables to apply configurations.
//
// Environment variables are a list map keyed by name, and server-side apply refuses an applied
// list with a key twice, where a Pod would keep the last value. The admission webhook allows a
// repeated name with a warning, so only the last variable of each name is applied, at its place.
func deployObjectEnv(env []corev1.EnvVar) []*corev1ac.EnvVarApplyConfiguration {
	last := make(map[string]int, len(env))
	for i, e := range env {
		last[e.Name] = i
	}
	out := make([]*corev1ac.EnvVarApplyConfiguration, 0, len(last))
	for i, e := range env {
		if last[e.Name] != i {
			continue
		}
		v := corev1ac.EnvVar().WithName(e.Name)
		if e.Value != "" {
			v.WithValue(e.Value)
		}
		if e.ValueFrom != nil {
			v.WithValueFrom(envVarSource(e.ValueFrom))
		}
		out = append(out, v)
	}
	return out
}

// envVarSource converts an environment variable's source to an apply configuration.
func envVarSource(s *corev1.EnvVarSource) *corev1ac.EnvVarSourceApplyConfiguration {
	out := corev1ac.EnvVarSource()
	if f := s.FieldRef; f != nil {
		// The API server defaults apiVersion to v1, and the operator owns fieldRef as a whole (it
		// is an atomic struct): applying it without the default would have what the Deployment
		// holds differ from what is applied for ever (apply.Held), and every reconcile apply again.
		ref := corev1ac.ObjectFieldSelector().WithFieldPath(f.FieldPath).WithAPIVersion(cmp.Or(f.APIVersion, "v1"))
		out.WithFieldRef(ref)
	}
	if f := s.ResourceFieldRef; f != nil {
		ref := corev1ac.ResourceFieldSelector().WithResource(f.Resource)
		if f.ContainerName != "" {
			ref.WithContainerName(f.ContainerName)
		}
		if !f.Divisor.IsZero() {
			ref.WithDivisor(f.Divisor.DeepCopy())
		}
		out.WithResourceFieldRef(ref)
	}
	if c := s.ConfigMapKeyRef; c != nil {
		ref := corev1ac.ConfigMapKeySelector().WithKey(c.Key)
		if c.Name != "" {
			ref.WithName(c.Name)
		}
		if c.Optional != nil {
			ref.WithOptional(*c.Optional)
		}
		out.WithConfigMapKeyRef(ref)
	}
	if c := s.SecretKeyRef; c != nil {
		ref := corev1ac.SecretKeySelector().WithKey(c.Key)
		if c.Name != "" {
			ref.WithName(c.Name)
		}
		if c.Optional != nil {
			ref.WithOptional(*c.Optional)
		}
		out.WithSecretKeyRef(ref)
	}
	if f := s.FileKeyRef; f != nil {
		ref := corev1ac.FileKeySelector().WithVolumeName(f.VolumeName).WithPath(f.Path).WithKey(f.Key)
		if f.Optional != nil {
			ref.WithOptional(*f.Optional)
		}
		out.WithFileKeyRef(ref)
	}
	return out
}

// resourceRequirements converts compute resource requirements to an apply configuration.
func resourceRequirements(r corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	out := corev1ac.ResourceRequirements()
	if len(r.Limits) > 0 {
		out.WithLimits(r.Limits.DeepCopy())
	}
	if len(r.Requests) > 0 {
		out.WithRequests(r.Requests.DeepCopy())
	}
	for _, c := range r.Claims {
		claim := corev1ac.ResourceClaim().WithName(c.Name)
		if c.Request != "" {
			claim.WithRequest(c.Request)
		}
		out.WithClaims(claim)
	}
	return out
}

// pullSecrets are the pod's imagePullSecrets, as spec.imagePullSecrets names them.
func pullSecrets(secrets []corev1.LocalObjectReference) []*corev1ac.LocalObjectReferenceApplyConfiguration {
	refs := make([]*corev1ac.LocalObjectReferenceApplyConfiguration, 0, len(secrets))
	for _, s := range secrets {
		refs = append(refs, corev1ac.LocalObjectReference().WithName(s.Name))
	}
	return refs
}

// probe converts a probe to an apply configuration of exactly the fields it sets, which
// kube-apiserver defaults as it would a pod's; nil when unset.
func probe(p *corev1.Probe) *corev1ac.ProbeApplyConfiguration {
	if p == nil {
		return nil
	}
	out := corev1ac.Probe()
	switch {
	case p.Exec != nil:
		out.WithExec(corev1ac.ExecAction().WithCommand(p.Exec.Command...))
	case p.HTTPGet != nil:
		h := corev1ac.HTTPGetAction().WithPort(p.HTTPGet.Port)
		if p.HTTPGet.Path != "" {
			h.WithPath(p.HTTPGet.Path)
		}
		if p.HTTPGet.Host != "" {
			h.WithHost(p.HTTPGet.Host)
		}
		if p.HTTPGet.Scheme != "" {
			h.WithScheme(p.HTTPGet.Scheme)
		}
		for _, header := range p.HTTPGet.HTTPHeaders {
			h.WithHTTPHeaders(corev1ac.HTTPHeader().WithName(header.Name).WithValue(header.Value))
		}
		out.WithHTTPGet(h)
	case p.TCPSocket != nil:
		t := corev1ac.TCPSocketAction().WithPort(p.TCPSocket.Port)
		if p.TCPSocket.Host != "" {
			t.WithHost(p.TCPSocket.Host)
		}
		out.WithTCPSocket(t)
	case p.GRPC != nil:
		g := corev1ac.GRPCAction().WithPort(p.GRPC.Port)
		if p.GRPC.Service != nil {
			g.WithService(*p.GRPC.Service)
		}
		out.WithGRPC(g)
	}
	for _, n := range []struct {
		value int32
		set   func(int32) *corev1ac.ProbeApplyConfiguration
	}{
		{p.InitialDelaySeconds, out.WithInitialDelaySeconds}, {p.TimeoutSeconds, out.WithTimeoutSeconds},
		{p.PeriodSeconds, out.WithPeriodSeconds}, {p.SuccessThreshold, out.WithSuccessThreshold},
		{p.FailureThreshold, out.WithFailureThreshold},
	} {
		if n.value != 0 {
			n.set(n.value)
		}
	}
	if p.TerminationGracePeriodSeconds != nil {
		out.WithTerminationGracePeriodSeconds(*p.TerminationGracePeriodSeconds)
	}
	return out
}
