package resources_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

const (
	defaultImage = "ghcr.io/seedlabs/welcome-web:v1.0.0"
	// password is distinctive enough that finding it anywhere in a marshalled object is a leak.
	password = "Pa55w0rd-must-never-reach-the-pod"
)

// defaultedWelcome is a Welcome as it looks after the mutating webhook, with every optional
// field the builders must ignore filled in.
// greeting is the spec.name of every Welcome in these tests.
const greeting = "Ada Lovelace"

func defaultedWelcome(name, namespace string, replicas, port int32, serviceType corev1.ServiceType, image string) *authv1.Welcome {
	return &authv1.Welcome{
		TypeMeta: metav1.TypeMeta{APIVersion: "auth.seedlabs.dev/v1", Kind: "Welcome"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  namespace,
			UID:        "6f1c1c4e-5a42-4d55-9c1e-2b8f0f0e2a11",
			Generation: 4,
			Labels:     map[string]string{"team": "web"},
			// Where v1 keeps a v1alpha1 Welcome's password.
			Annotations: map[string]string{authv1.ConversionDataAnnotation: `{"spec":{"password":"` + password + `"}}`},
		},
		Spec: authv1.WelcomeSpec{
			Name:        greeting,
			UserID:      ptr.To[int32](1042),
			Groups:      []string{"admins", "devs"},
			Email:       "ada@example.com",
			Replicas:    ptr.To(replicas),
			Port:        ptr.To(port),
			Image:       image,
			ServiceType: serviceType,
		},
	}
}

func wantLabels(instance string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "welcome",
		"app.kubernetes.io/instance":   instance,
		"app.kubernetes.io/managed-by": "webhook-operator",
	}
}

func wantSelector(instance string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "welcome",
		"app.kubernetes.io/instance": instance,
	}
}

func healthProbe(period, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
		},
		PeriodSeconds:    period,
		FailureThreshold: failureThreshold,
	}
}

func wantDeployment(name, namespace, image string, replicas, port int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: wantLabels(name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: wantSelector(name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: wantLabels(name)},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						RunAsGroup:     ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "welcome-web",
						Image: image,
						Env: []corev1.EnvVar{
							{Name: "NAME", Value: greeting},
							{Name: "PORT", Value: fmt.Sprint(port)},
						},
						Ports: []corev1.ContainerPort{
							{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: healthProbe(5, 0),
						LivenessProbe:  healthProbe(10, 3),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("10m"),
								corev1.ResourceMemory: resource.MustParse("16Mi"),
							},
							Limits: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("200m"),
								corev1.ResourceMemory: resource.MustParse("64Mi"),
							},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
				},
			},
		},
	}
}

// decodeStrict unmarshals data into out, refusing fields out does not know.
func decodeStrict(t *testing.T, data []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}

// jsonField walks a JSON document along path (object keys, or array indexes as ints) and
// reports the value found and whether every step existed.
func jsonField(t *testing.T, data []byte, path ...any) (any, bool) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("unmarshalling %s: %v", data, err)
	}
	for _, step := range path {
		switch s := step.(type) {
		case string:
			obj, ok := doc.(map[string]any)
			if !ok {
				return nil, false
			}
			if doc, ok = obj[s]; !ok {
				return nil, false
			}
		case int:
			arr, ok := doc.([]any)
			if !ok || s >= len(arr) {
				return nil, false
			}
			doc = arr[s]
		default:
			t.Fatalf("bad path step %#v", step)
		}
	}
	return doc, true
}

func TestWelcomeDeployment(t *testing.T) {
	tests := []struct {
		name         string
		welcome      *authv1.Welcome
		defaultImage string
		want         *appsv1.Deployment
	}{
		{
			name:         "default image, default port, one replica",
			welcome:      defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, ""),
			defaultImage: defaultImage,
			want:         wantDeployment("hello", "demo", defaultImage, 1, 8088),
		},
		{
			name:         "spec.image overrides the default image",
			welcome:      defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, "registry.example.com/welcome-web:dev"),
			defaultImage: defaultImage,
			want:         wantDeployment("hello", "demo", "registry.example.com/welcome-web:dev", 1, 8088),
		},
		{
			name:         "spec.image is used when the operator has no default",
			welcome:      defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, "registry.example.com/welcome-web:dev"),
			defaultImage: "",
			want:         wantDeployment("hello", "demo", "registry.example.com/welcome-web:dev", 1, 8088),
		},
		{
			name:         "port 9000 and three replicas",
			welcome:      defaultedWelcome("greeter", "team-a", 3, 9000, corev1.ServiceTypeClusterIP, ""),
			defaultImage: defaultImage,
			want:         wantDeployment("greeter", "team-a", defaultImage, 3, 9000),
		},
		{
			name:         "zero replicas are kept, not dropped",
			welcome:      defaultedWelcome("idle", "demo", 0, 9000, corev1.ServiceTypeLoadBalancer, ""),
			defaultImage: defaultImage,
			want:         wantDeployment("idle", "demo", defaultImage, 0, 9000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.welcome.DeepCopy()

			raw, err := json.Marshal(resources.WelcomeDeployment(tt.welcome, tt.defaultImage))
			if err != nil {
				t.Fatalf("marshalling the Deployment: %v", err)
			}
			got := &appsv1.Deployment{}
			decodeStrict(t, raw, got)

			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Deployment mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if !equality.Semantic.DeepEqual(before, tt.welcome) {
				t.Errorf("WelcomeDeployment modified the Welcome (-before +after):\n%s", diff.Diff(before, tt.welcome))
			}
			if bytes.Contains(raw, []byte(password)) {
				t.Errorf("the password %q appears in the Deployment: %s", password, raw)
			}
			// Distinguish an explicit 0 from an absent field, which the typed struct cannot.
			if v, ok := jsonField(t, raw, "spec", "replicas"); !ok || v != float64(*tt.welcome.Spec.Replicas) {
				t.Errorf("spec.replicas = %v (present %t), want %d", v, ok, *tt.welcome.Spec.Replicas)
			}
			for _, path := range [][]any{
				{"metadata", "ownerReferences"},
				{"status"},
			} {
				if v, ok := jsonField(t, raw, path...); ok {
					t.Errorf("%v is set to %v, want it absent", path, v)
				}
			}
		})
	}
}

func TestWelcomeDeploymentPodIsRestricted(t *testing.T) {
	raw, err := json.Marshal(resources.WelcomeDeployment(
		defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, ""), defaultImage))
	if err != nil {
		t.Fatalf("marshalling the Deployment: %v", err)
	}
	got := &appsv1.Deployment{}
	decodeStrict(t, raw, got)
	if violations := restrictedViolations(&got.Spec.Template.Spec); len(violations) > 0 {
		t.Errorf("the pod template breaks the restricted Pod Security Standard:\n%s", strings.Join(violations, "\n"))
	}
}

// TestRestrictedViolations shows that restrictedViolations finds what it checks for, so that
// TestWelcomeDeploymentPodIsRestricted can fail.
func TestRestrictedViolations(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   []string
	}{
		{
			name:   "as built",
			mutate: func(*corev1.PodSpec) {},
			want:   nil,
		},
		{
			name: "privilege escalation unset",
			mutate: func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
			},
			want: []string{`container "welcome-web": allowPrivilegeEscalation must be false`},
		},
		{
			name: "capabilities not dropped",
			mutate: func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext.Capabilities = nil
			},
			want: []string{`container "welcome-web": capabilities must drop ALL`},
		},
		{
			name: "capability added",
			mutate: func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
			},
			want: []string{`container "welcome-web": capability "NET_ADMIN" must not be added`},
		},
		{
			name: "non-root only on neither level",
			mutate: func(s *corev1.PodSpec) {
				s.SecurityContext.RunAsNonRoot = nil
				s.Containers[0].SecurityContext.RunAsNonRoot = nil
			},
			want: []string{`container "welcome-web": runAsNonRoot must be true on the pod or the container`},
		},
		{
			name: "root user",
			mutate: func(s *corev1.PodSpec) {
				s.SecurityContext.RunAsUser = ptr.To[int64](0)
			},
			want: []string{"pod: runAsUser must not be 0"},
		},
		{
			name: "seccomp on neither level",
			mutate: func(s *corev1.PodSpec) {
				s.SecurityContext.SeccompProfile = nil
				s.Containers[0].SecurityContext.SeccompProfile = nil
			},
			want: []string{`container "welcome-web": seccompProfile must be RuntimeDefault or Localhost on the pod or the container`},
		},
		{
			name: "host network and host path",
			mutate: func(s *corev1.PodSpec) {
				s.HostNetwork = true
				s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			},
			want: []string{"pod: host namespaces must not be shared", `volume "root": type is not allowed`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(resources.WelcomeDeployment(
				defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, ""), defaultImage))
			if err != nil {
				t.Fatalf("marshalling the Deployment: %v", err)
			}
			dep := &appsv1.Deployment{}
			decodeStrict(t, raw, dep)
			tt.mutate(&dep.Spec.Template.Spec)
			if got := restrictedViolations(&dep.Spec.Template.Spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("restrictedViolations() = %q, want %q", got, tt.want)
			}
		})
	}
}

// restrictedViolations checks a pod spec against the "restricted" Pod Security Standard
// (baseline included), as k8s.io/pod-security-admission/policy does for the latest version.
// That module is not in this module's graph, so the rules are restated here.
func restrictedViolations(spec *corev1.PodSpec) []string {
	var out []string
	pod := spec.SecurityContext
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		out = append(out, "pod: host namespaces must not be shared")
	}
	if !ptr.Deref(pod.RunAsNonRoot, true) {
		out = append(out, "pod: runAsNonRoot must not be false")
	}
	if pod.RunAsUser != nil && *pod.RunAsUser == 0 {
		out = append(out, "pod: runAsUser must not be 0")
	}
	if p := pod.SeccompProfile; p != nil && p.Type != corev1.SeccompProfileTypeRuntimeDefault && p.Type != corev1.SeccompProfileTypeLocalhost {
		out = append(out, "pod: seccompProfile must be RuntimeDefault or Localhost")
	}
	if p := pod.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		out = append(out, "pod: appArmorProfile must not be Unconfined")
	}
	if o := pod.SELinuxOptions; o != nil && (o.User != "" || o.Role != "" || !allowedSELinuxType(o.Type)) {
		out = append(out, "pod: seLinuxOptions are not allowed")
	}
	if w := pod.WindowsOptions; w != nil && ptr.Deref(w.HostProcess, false) {
		out = append(out, "pod: hostProcess is not allowed")
	}
	safeSysctls := map[string]bool{
		"kernel.shm_rmid_forced": true, "net.ipv4.ip_local_port_range": true, "net.ipv4.ip_unprivileged_port_start": true,
		"net.ipv4.tcp_syncookies": true, "net.ipv4.ping_group_range": true, "net.ipv4.ip_local_reserved_ports": true,
		"net.ipv4.tcp_keepalive_time": true, "net.ipv4.tcp_fin_timeout": true, "net.ipv4.tcp_keepalive_intvl": true,
		"net.ipv4.tcp_keepalive_probes": true, "net.ipv4.tcp_rmem": true, "net.ipv4.tcp_wmem": true,
	}
	for _, s := range pod.Sysctls {
		if !safeSysctls[s.Name] {
			out = append(out, fmt.Sprintf("pod: sysctl %q is not allowed", s.Name))
		}
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		if s.ConfigMap == nil && s.CSI == nil && s.DownwardAPI == nil && s.EmptyDir == nil && s.Ephemeral == nil &&
			s.PersistentVolumeClaim == nil && s.Projected == nil && s.Secret == nil && s.Image == nil {
			out = append(out, fmt.Sprintf("volume %q: type is not allowed", v.Name))
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, e := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
	}
	for _, c := range containers {
		prefix := fmt.Sprintf("container %q: ", c.Name)
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if ptr.Deref(sc.Privileged, false) {
			out = append(out, prefix+"must not be privileged")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, prefix+"allowPrivilegeEscalation must be false")
		}
		droppedAll := false
		if sc.Capabilities != nil {
			for _, d := range sc.Capabilities.Drop {
				droppedAll = droppedAll || d == "ALL"
			}
			for _, a := range sc.Capabilities.Add {
				if a != "NET_BIND_SERVICE" {
					out = append(out, fmt.Sprintf("%scapability %q must not be added", prefix, a))
				}
			}
		}
		if !droppedAll {
			out = append(out, prefix+"capabilities must drop ALL")
		}
		switch {
		case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
			out = append(out, prefix+"runAsNonRoot must not be false")
		case sc.RunAsNonRoot == nil && !ptr.Deref(pod.RunAsNonRoot, false):
			out = append(out, prefix+"runAsNonRoot must be true on the pod or the container")
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			out = append(out, prefix+"runAsUser must not be 0")
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = pod.SeccompProfile
		}
		if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
			out = append(out, prefix+"seccompProfile must be RuntimeDefault or Localhost on the pod or the container")
		}
		if p := sc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
			out = append(out, prefix+"appArmorProfile must not be Unconfined")
		}
		if o := sc.SELinuxOptions; o != nil && (o.User != "" || o.Role != "" || !allowedSELinuxType(o.Type)) {
			out = append(out, prefix+"seLinuxOptions are not allowed")
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			out = append(out, prefix+"procMount must be Default")
		}
		if w := sc.WindowsOptions; w != nil && ptr.Deref(w.HostProcess, false) {
			out = append(out, prefix+"hostProcess is not allowed")
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, fmt.Sprintf("%shostPort %d is not allowed", prefix, p.HostPort))
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && ((p.HTTPGet != nil && p.HTTPGet.Host != "") || (p.TCPSocket != nil && p.TCPSocket.Host != "")) {
				out = append(out, prefix+"probes must not set a host")
			}
		}
	}
	return out
}

func allowedSELinuxType(t string) bool {
	switch t {
	case "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t":
		return true
	}
	return false
}

func wantService(name, namespace string, serviceType corev1.ServiceType, port int32) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: wantLabels(name)},
		Spec: corev1.ServiceSpec{
			Type:     serviceType,
			Selector: wantSelector(name),
			Ports: []corev1.ServicePort{{
				Name:       "http",
				Protocol:   corev1.ProtocolTCP,
				Port:       port,
				TargetPort: intstr.FromInt32(port),
			}},
		},
	}
}

func TestWelcomeService(t *testing.T) {
	tests := []struct {
		name    string
		welcome *authv1.Welcome
		want    *corev1.Service
	}{
		{
			name:    "NodePort on the default port",
			welcome: defaultedWelcome("hello", "demo", 1, 8088, corev1.ServiceTypeNodePort, ""),
			want:    wantService("hello", "demo", corev1.ServiceTypeNodePort, 8088),
		},
		{
			name:    "ClusterIP on port 9000",
			welcome: defaultedWelcome("greeter", "team-a", 2, 9000, corev1.ServiceTypeClusterIP, ""),
			want:    wantService("greeter", "team-a", corev1.ServiceTypeClusterIP, 9000),
		},
		{
			name:    "LoadBalancer with zero replicas and an image override",
			welcome: defaultedWelcome("idle", "demo", 0, 9000, corev1.ServiceTypeLoadBalancer, "registry.example.com/welcome-web:dev"),
			want:    wantService("idle", "demo", corev1.ServiceTypeLoadBalancer, 9000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.welcome.DeepCopy()

			raw, err := json.Marshal(resources.WelcomeService(tt.welcome))
			if err != nil {
				t.Fatalf("marshalling the Service: %v", err)
			}
			got := &corev1.Service{}
			decodeStrict(t, raw, got)

			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Service mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if !equality.Semantic.DeepEqual(before, tt.welcome) {
				t.Errorf("WelcomeService modified the Welcome (-before +after):\n%s", diff.Diff(before, tt.welcome))
			}
			if bytes.Contains(raw, []byte(password)) {
				t.Errorf("the password %q appears in the Service: %s", password, raw)
			}
			// Fields the API server allocates must not be owned by the operator's field manager,
			// and the typed struct cannot tell an absent field from a zero one.
			for _, path := range [][]any{
				{"spec", "ports", 0, "nodePort"},
				{"spec", "clusterIP"},
				{"spec", "clusterIPs"},
				{"spec", "loadBalancerIP"},
				{"spec", "externalTrafficPolicy"},
				{"spec", "healthCheckNodePort"},
				{"metadata", "ownerReferences"},
				{"status"},
			} {
				if v, ok := jsonField(t, raw, path...); ok {
					t.Errorf("%v is set to %v, want it absent", path, v)
				}
			}
			if _, ok := jsonField(t, raw, "spec", "ports", 0, "port"); !ok {
				t.Errorf("spec.ports[0].port is absent; jsonField cannot see the Service's fields: %s", raw)
			}
		})
	}
}

func TestWelcomeServiceURL(t *testing.T) {
	tests := []struct {
		name      string
		crName    string
		namespace string
		port      int32
		nodePort  int32
		want      string
	}{
		{
			name:      "ClusterIP on the default port",
			crName:    "hello",
			namespace: "demo",
			port:      8088,
			want:      "http://hello.demo.svc:8088/hello/",
		},
		{
			name:      "node port is named after the URL",
			crName:    "hello",
			namespace: "demo",
			port:      8088,
			nodePort:  30080,
			want:      "http://hello.demo.svc:8088/hello/ (node port 30080)",
		},
		{
			name:      "other port, namespace and highest node port",
			crName:    "greeter",
			namespace: "team-a",
			port:      9000,
			nodePort:  32767,
			want:      "http://greeter.team-a.svc:9000/hello/ (node port 32767)",
		},
		{
			name:      "port 80 is still written out",
			crName:    "w",
			namespace: "default",
			port:      80,
			want:      "http://w.default.svc:80/hello/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resources.WelcomeServiceURL(tt.crName, tt.namespace, tt.port, tt.nodePort); got != tt.want {
				t.Errorf("WelcomeServiceURL(%q, %q, %d, %d) = %q, want %q",
					tt.crName, tt.namespace, tt.port, tt.nodePort, got, tt.want)
			}
		})
	}
}
