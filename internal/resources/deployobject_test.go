package resources_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const shopImage = "registry.example.test/team/shop:2.4.1"

// deployObject is a DeployObject as stored, with metadata the builders must not copy; it is
// defaulted as the mutating webhook does.
func deployObject(replicas int32, ports []corev1.ServicePort, env []corev1.EnvVar, res corev1.ResourceRequirements) *appv1.DeployObject {
	d := &appv1.DeployObject{
		TypeMeta: metav1.TypeMeta{APIVersion: "app.seedlabs.dev/v1", Kind: "DeployObject"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "shop",
			Namespace:   "demo",
			UID:         "3a9f1b0e-7c55-4f1e-9b7a-0d2c4e6f8a10",
			Generation:  5,
			Labels:      map[string]string{"team": "shop"},
			Annotations: map[string]string{"note": "not copied"},
		},
		Spec: appv1.DeployObjectSpec{
			Replicas:  ptr.To(replicas),
			Image:     shopImage,
			Resources: res,
			Env:       env,
			Ports:     ports,
		},
	}
	webhooks.DefaultDeployObject(d)
	return d
}

func deployObjectLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "deployobject",
		"app.kubernetes.io/instance":   "shop",
		"app.kubernetes.io/managed-by": "webhook-operator",
	}
}

func deployObjectSelector() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "deployobject",
		"app.kubernetes.io/instance": "shop",
	}
}

func servicePort(name string, protocol corev1.Protocol, port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: protocol, Port: port, TargetPort: target}
}

func containerPort(name string, port int32, protocol corev1.Protocol) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: protocol}
}

// shopEnv has a plain value, an empty value and every source the controller converts.
func shopEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "debug"},
		{Name: "EMPTY"},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "shop-db"}, Key: "password", Optional: ptr.To(false),
		}}},
		{Name: "FEATURES", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "shop-config"}, Key: "features", Optional: ptr.To(true),
		}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "MEMORY_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi"),
		}}},
		{Name: "CPU_REQUEST", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}},
	}
}

func shopResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("250m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory:                    resource.MustParse("256Mi"),
			corev1.ResourceName("example.com/gpu"):   resource.MustParse("1"),
			corev1.ResourceName("ephemeral-storage"): resource.MustParse("1Gi"),
		},
	}
}

// shopPorts cover an int targetPort, a named one, and every protocol.
func shopPorts() []corev1.ServicePort {
	return []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr.To("http")},
		servicePort("metrics", corev1.ProtocolTCP, 9090, intstr.FromString("metrics")),
		servicePort("dns", corev1.ProtocolUDP, 53, intstr.FromInt32(5353)),
		servicePort("sig", corev1.ProtocolSCTP, 3868, intstr.FromString("diameter")),
	}
}

func wantShopDeployment(replicas int32, env []corev1.EnvVar, res corev1.ResourceRequirements, ports ...corev1.ContainerPort) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Labels: deployObjectLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: deployObjectSelector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: deployObjectLabels()},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:      "app",
						Image:     shopImage,
						Env:       env,
						Ports:     ports,
						Resources: res,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
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

// buildDeployment marshals the Deployment built for d and decodes it strictly, as the API server
// would read it, checking that d is left alone.
func buildDeployment(t *testing.T, d *appv1.DeployObject) (*appsv1.Deployment, []byte) {
	t.Helper()
	before := d.DeepCopy()
	raw, err := json.Marshal(resources.DeployObjectDeployment(d))
	if err != nil {
		t.Fatalf("marshalling the Deployment: %v", err)
	}
	got := &appsv1.Deployment{}
	decodeStrict(t, raw, got)
	if !equality.Semantic.DeepEqual(before, d) {
		t.Errorf("DeployObjectDeployment modified the DeployObject (-before +after):\n%s", diff.Diff(before, d))
	}
	return got, raw
}

func buildService(t *testing.T, d *appv1.DeployObject) (*corev1.Service, []byte) {
	t.Helper()
	before := d.DeepCopy()
	raw, err := json.Marshal(resources.DeployObjectService(d))
	if err != nil {
		t.Fatalf("marshalling the Service: %v", err)
	}
	got := &corev1.Service{}
	decodeStrict(t, raw, got)
	if !equality.Semantic.DeepEqual(before, d) {
		t.Errorf("DeployObjectService modified the DeployObject (-before +after):\n%s", diff.Diff(before, d))
	}
	return got, raw
}

// withFieldRefAPIVersion is env with the apiVersion the API server gives a fieldRef without one,
// v1: the operator applies it, since it owns fieldRef as a whole.
func withFieldRefAPIVersion(env []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion == "" {
			e.ValueFrom.FieldRef.APIVersion = "v1"
		}
	}
	return env
}

func TestDeployObjectDeployment(t *testing.T) {
	onePort := []corev1.ServicePort{{Port: 8080}}
	tests := []struct {
		name string
		d    *appv1.DeployObject
		want *appsv1.Deployment
	}{
		{
			name: "env, resources and ports of every kind",
			d:    deployObject(3, shopPorts(), shopEnv(), shopResources()),
			want: wantShopDeployment(3, withFieldRefAPIVersion(shopEnv()), shopResources(),
				containerPort("", 8080, corev1.ProtocolTCP),
				containerPort("metrics", 9090, corev1.ProtocolTCP),
				containerPort("", 5353, corev1.ProtocolUDP),
				containerPort("diameter", 3868, corev1.ProtocolSCTP)),
		},
		{
			name: "scaled to zero, one defaulted port, no env, no resources",
			d:    deployObject(0, onePort, nil, corev1.ResourceRequirements{}),
			want: wantShopDeployment(0, nil, corev1.ResourceRequirements{}, containerPort("", 8080, corev1.ProtocolTCP)),
		},
		{
			name: "a repeated variable keeps its last value, at the last place",
			d: deployObject(1, onePort, []corev1.EnvVar{
				{Name: "MODE", Value: "first"}, {Name: "A", Value: "a"}, {Name: "MODE", Value: "second"}, {Name: "B", Value: "b"},
			}, corev1.ResourceRequirements{}),
			want: wantShopDeployment(1, []corev1.EnvVar{
				{Name: "A", Value: "a"}, {Name: "MODE", Value: "second"}, {Name: "B", Value: "b"},
			}, corev1.ResourceRequirements{}, containerPort("", 8080, corev1.ProtocolTCP)),
		},
		{
			name: "a command, args and pull secrets, in their order",
			d: func() *appv1.DeployObject {
				d := deployObject(1, onePort, nil, corev1.ResourceRequirements{})
				d.Spec.Command, d.Spec.Args = []string{"/app", "serve"}, []string{"--port", "$(PORT)"}
				d.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-b"}, {Name: "registry-a"}}
				return d
			}(),
			want: func() *appsv1.Deployment {
				want := wantShopDeployment(1, nil, corev1.ResourceRequirements{}, containerPort("", 8080, corev1.ProtocolTCP))
				pod := &want.Spec.Template.Spec
				pod.Containers[0].Command, pod.Containers[0].Args = []string{"/app", "serve"}, []string{"--port", "$(PORT)"}
				pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-b"}, {Name: "registry-a"}}
				return want
			}(),
		},
		{
			name: "probes of every handler, with exactly the fields they set",
			d: func() *appv1.DeployObject {
				d := deployObject(1, onePort, nil, corev1.ResourceRequirements{})
				d.Spec.ReadinessProbe, d.Spec.LivenessProbe, d.Spec.StartupProbe = testProbes()
				return d
			}(),
			want: func() *appsv1.Deployment {
				want := wantShopDeployment(1, nil, corev1.ResourceRequirements{}, containerPort("", 8080, corev1.ProtocolTCP))
				c := &want.Spec.Template.Spec.Containers[0]
				c.ReadinessProbe, c.LivenessProbe, c.StartupProbe = testProbes()
				return want
			}(),
		},
		{
			name: "a gRPC and an exec probe",
			d: func() *appv1.DeployObject {
				d := deployObject(1, onePort, nil, corev1.ResourceRequirements{})
				d.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}}}
				d.Spec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
				return d
			}(),
			want: func() *appsv1.Deployment {
				want := wantShopDeployment(1, nil, corev1.ResourceRequirements{}, containerPort("", 8080, corev1.ProtocolTCP))
				c := &want.Spec.Template.Spec.Containers[0]
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}}}
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
				return want
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, raw := buildDeployment(t, tt.d)
			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Deployment mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			// Zero replicas must be applied, not left out for the API server to default to 1.
			if v, ok := jsonField(t, raw, "spec", "replicas"); !ok || v != float64(*tt.d.Spec.Replicas) {
				t.Errorf("spec.replicas = %v (present %t), want %d", v, ok, *tt.d.Spec.Replicas)
			}
			for _, path := range [][]any{
				{"metadata", "ownerReferences"},
				{"metadata", "annotations"},
				{"spec", "strategy"},
				{"spec", "template", "spec", "securityContext", "runAsUser"},
				{"spec", "template", "spec", "securityContext", "runAsGroup"},
				{"spec", "template", "spec", "containers", 0, "securityContext", "readOnlyRootFilesystem"},
				{"spec", "template", "spec", "containers", 0, "securityContext", "runAsUser"},
				{"status"},
			} {
				if v, ok := jsonField(t, raw, path...); ok {
					t.Errorf("%v is set to %v, want it absent", path, v)
				}
			}
			// Unset, they are left out: the hash of what is applied to the objects of before
			// the fields existed stays what it was, and nothing is applied again on upgrade.
			if tt.d.Spec.Command == nil {
				for _, path := range [][]any{
					{"spec", "template", "spec", "imagePullSecrets"},
					{"spec", "template", "spec", "containers", 0, "command"},
					{"spec", "template", "spec", "containers", 0, "args"},
				} {
					if v, ok := jsonField(t, raw, path...); ok {
						t.Errorf("%v is set to %v, want it absent", path, v)
					}
				}
			}
		})
	}
}

// TestDeployObjectEnvJSON pins the JSON of the variable sources, so a source is applied with
// exactly the fields the user gave and no zero value of another.
func TestDeployObjectEnvJSON(t *testing.T) {
	_, raw := buildDeployment(t, deployObject(1, shopPorts(), shopEnv(), corev1.ResourceRequirements{}))
	env, ok := jsonField(t, raw, "spec", "template", "spec", "containers", 0, "env")
	if !ok {
		t.Fatalf("no env in %s", raw)
	}
	got, err := json.Marshal(env)
	if err != nil {
		t.Fatalf("marshalling env: %v", err)
	}
	want := `[{"name":"LOG_LEVEL","value":"debug"},{"name":"EMPTY"},` +
		`{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"key":"password","name":"shop-db","optional":false}}},` +
		`{"name":"FEATURES","valueFrom":{"configMapKeyRef":{"key":"features","name":"shop-config","optional":true}}},` +
		`{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},` +
		`{"name":"POD_IP","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"status.podIP"}}},` +
		`{"name":"MEMORY_LIMIT_MI","valueFrom":{"resourceFieldRef":{"containerName":"app","divisor":"1Mi","resource":"limits.memory"}}},` +
		`{"name":"CPU_REQUEST","valueFrom":{"resourceFieldRef":{"resource":"requests.cpu"}}}]`
	if string(got) != want {
		t.Errorf("env =\n%s\nwant\n%s", got, want)
	}
}

func TestDeployObjectContainerPorts(t *testing.T) {
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  []corev1.ContainerPort
	}{
		{
			name:  "a defaulted port targets its own number",
			ports: []corev1.ServicePort{{Port: 8080}},
			want:  []corev1.ContainerPort{containerPort("", 8080, corev1.ProtocolTCP)},
		},
		{
			name: "a named targetPort is declared on the Service port's number",
			ports: []corev1.ServicePort{
				servicePort("web", corev1.ProtocolTCP, 80, intstr.FromString("http")),
				servicePort("syslog", corev1.ProtocolUDP, 514, intstr.FromString("syslog")),
			},
			want: []corev1.ContainerPort{
				containerPort("http", 80, corev1.ProtocolTCP),
				containerPort("syslog", 514, corev1.ProtocolUDP),
			},
		},
		{
			name: "two Service ports to one container port declare it once",
			ports: []corev1.ServicePort{
				servicePort("http", corev1.ProtocolTCP, 80, intstr.FromInt32(8080)),
				servicePort("alt", corev1.ProtocolTCP, 8000, intstr.FromInt32(8080)),
			},
			want: []corev1.ContainerPort{containerPort("", 8080, corev1.ProtocolTCP)},
		},
		{
			name: "one number over TCP and UDP is two container ports",
			ports: []corev1.ServicePort{
				servicePort("dns-tcp", corev1.ProtocolTCP, 53, intstr.FromInt32(1053)),
				servicePort("dns-udp", corev1.ProtocolUDP, 53, intstr.FromInt32(1053)),
			},
			want: []corev1.ContainerPort{
				containerPort("", 1053, corev1.ProtocolTCP),
				containerPort("", 1053, corev1.ProtocolUDP),
			},
		},
		{
			name: "a named port first keeps its name over a later int targetPort",
			ports: []corev1.ServicePort{
				servicePort("web", corev1.ProtocolTCP, 8080, intstr.FromString("http")),
				servicePort("alt", corev1.ProtocolTCP, 80, intstr.FromInt32(8080)),
			},
			want: []corev1.ContainerPort{containerPort("http", 8080, corev1.ProtocolTCP)},
		},
		{
			name: "an int targetPort first takes the name of a later named one, so it resolves",
			ports: []corev1.ServicePort{
				servicePort("alt", corev1.ProtocolTCP, 80, intstr.FromInt32(8080)),
				servicePort("web", corev1.ProtocolTCP, 8080, intstr.FromString("http")),
				servicePort("other", corev1.ProtocolTCP, 81, intstr.FromInt32(8080)),
			},
			want: []corev1.ContainerPort{containerPort("http", 8080, corev1.ProtocolTCP)},
		},
		{
			name: "a name is given once: container port names are unique",
			ports: []corev1.ServicePort{
				servicePort("dns-tcp", corev1.ProtocolTCP, 53, intstr.FromString("dns")),
				servicePort("dns-udp", corev1.ProtocolUDP, 53, intstr.FromString("dns")),
			},
			want: []corev1.ContainerPort{
				containerPort("dns", 53, corev1.ProtocolTCP),
				containerPort("", 53, corev1.ProtocolUDP),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := buildDeployment(t, deployObject(1, tt.ports, nil, corev1.ResourceRequirements{}))
			if ports := got.Spec.Template.Spec.Containers[0].Ports; !reflect.DeepEqual(ports, tt.want) {
				t.Errorf("container ports = %+v, want %+v", ports, tt.want)
			}
		})
	}
}

func TestDeployObjectPodIsRestricted(t *testing.T) {
	got, _ := buildDeployment(t, deployObject(2, shopPorts(), shopEnv(), shopResources()))
	if violations := restrictedViolations(&got.Spec.Template.Spec); len(violations) > 0 {
		t.Errorf("the pod template breaks the restricted Pod Security Standard:\n%s", strings.Join(violations, "\n"))
	}
}

func TestDeployObjectService(t *testing.T) {
	wantService := func(ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Labels: deployObjectLabels()},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: deployObjectSelector(),
				Ports:    ports,
			},
		}
	}
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  *corev1.Service
	}{
		{
			name:  "one unnamed port, defaulted",
			ports: []corev1.ServicePort{{Port: 8080}},
			want:  wantService(servicePort("", corev1.ProtocolTCP, 8080, intstr.FromInt32(8080))),
		},
		{
			name:  "every port as given, in order, with every protocol",
			ports: shopPorts(),
			want: wantService(
				corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr.To("http")},
				servicePort("metrics", corev1.ProtocolTCP, 9090, intstr.FromString("metrics")),
				servicePort("dns", corev1.ProtocolUDP, 53, intstr.FromInt32(5353)),
				servicePort("sig", corev1.ProtocolSCTP, 3868, intstr.FromString("diameter")),
			),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, raw := buildService(t, deployObject(1, tt.ports, nil, corev1.ResourceRequirements{}))
			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Service mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			// What the operator applies it owns; the API server allocates the cluster IP once
			// and keeps it only while nobody applies it.
			for _, path := range [][]any{
				{"spec", "clusterIP"},
				{"spec", "clusterIPs"},
				{"spec", "sessionAffinity"},
				{"spec", "ipFamilies"},
				{"spec", "ipFamilyPolicy"},
				{"metadata", "ownerReferences"},
				{"metadata", "annotations"},
				{"status"},
			} {
				if v, ok := jsonField(t, raw, path...); ok {
					t.Errorf("%v is set to %v, want it absent", path, v)
				}
			}
			for i, p := range tt.ports {
				if _, ok := jsonField(t, raw, "spec", "ports", i, "port"); !ok {
					t.Errorf("spec.ports[%d].port is absent: %s", i, raw)
				}
				absent := []string{"nodePort"}
				if p.Name == "" {
					absent = append(absent, "name")
				}
				if p.AppProtocol == nil {
					absent = append(absent, "appProtocol")
				}
				for _, field := range absent {
					if v, ok := jsonField(t, raw, "spec", "ports", i, field); ok {
						t.Errorf("spec.ports[%d].%s is set to %v, want it absent", i, field, v)
					}
				}
			}
		})
	}
}

// TestDeployObjectSelectorsAgree checks that the Service reaches exactly the Deployment's pods,
// and that each named targetPort of the Service resolves to a container port of the pods.
func TestDeployObjectSelectorsAgree(t *testing.T) {
	d := deployObject(2, shopPorts(), nil, corev1.ResourceRequirements{})
	dep, _ := buildDeployment(t, d)
	svc, _ := buildService(t, d)

	selector := resources.DeployObjectSelector("shop")
	if !reflect.DeepEqual(selector, deployObjectSelector()) {
		t.Errorf("DeployObjectSelector() = %v, want %v", selector, deployObjectSelector())
	}
	if !reflect.DeepEqual(dep.Spec.Selector.MatchLabels, selector) || !reflect.DeepEqual(svc.Spec.Selector, selector) {
		t.Errorf("selectors: Deployment %v, Service %v, want %v", dep.Spec.Selector.MatchLabels, svc.Spec.Selector, selector)
	}
	if !labels.SelectorFromSet(selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the selector %v does not match the pod template labels %v", selector, dep.Spec.Template.Labels)
	}
	if labels.SelectorFromSet(selector).Matches(labels.Set(resources.DeployObjectSelector("shop-2"))) {
		t.Errorf("the selector of shop matches the pods of DeployObject shop-2")
	}

	for _, sp := range svc.Spec.Ports {
		resolved := int32(0)
		for _, cp := range dep.Spec.Template.Spec.Containers[0].Ports {
			switch {
			case sp.TargetPort.Type == intstr.Int && cp.ContainerPort == sp.TargetPort.IntVal && cp.Protocol == sp.Protocol,
				sp.TargetPort.Type == intstr.String && cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol:
				resolved = cp.ContainerPort
			}
		}
		if resolved == 0 {
			t.Errorf("Service port %s (%d/%s -> %s) has no container port", sp.Name, sp.Port, sp.Protocol, sp.TargetPort.String())
		}
	}
}

// testProbes are a readiness, a liveness and a startup probe that set every field of their
// handlers (httpGet, tcpSocket) and numbers.
func testProbes() (readiness, liveness, startup *corev1.Probe) {
	readiness = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/ready", Port: intstr.FromString("http"), Host: "127.0.0.1", Scheme: corev1.URISchemeHTTPS,
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: ""}},
		}},
		InitialDelaySeconds: 1, TimeoutSeconds: 2, PeriodSeconds: 3, SuccessThreshold: 4, FailureThreshold: 5,
	}
	liveness = &corev1.Probe{
		ProbeHandler:                  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080), Host: "::1"}},
		TerminationGracePeriodSeconds: ptr.To[int64](7),
	}
	startup = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, FailureThreshold: 30}
	return readiness, liveness, startup
}
