package resources_test

import (
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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

const memcachedImage = "registry.example.test/memcached:1.6.38-alpine"

// defaultedMemcached is a Memcached as it looks after the mutating webhook.
func defaultedMemcached(name, namespace string, size, port int32) *cachev1.Memcached {
	return &cachev1.Memcached{
		TypeMeta: metav1.TypeMeta{APIVersion: "cache.seedlabs.dev/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  namespace,
			UID:        "0b5c3a57-93a4-4c8e-8a57-3f3b1c1a6e01",
			Generation: 3,
			Labels:     map[string]string{"team": "cache"},
			Finalizers: []string{cachev1.Finalizer},
		},
		Spec: cachev1.MemcachedSpec{Size: ptr.To(size), ContainerPort: ptr.To(port)},
	}
}

func memcachedLabels(instance string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "memcached",
		"app.kubernetes.io/instance":   instance,
		"app.kubernetes.io/managed-by": "webhook-operator",
	}
}

func memcachedSelector(instance string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "memcached",
		"app.kubernetes.io/instance": instance,
	}
}

func tcpProbe(period, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("memcached")}},
		PeriodSeconds:    period,
		FailureThreshold: failureThreshold,
	}
}

func wantMemcachedDeployment(name, namespace string, size, port int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: memcachedLabels(name)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(size),
			Selector: &metav1.LabelSelector{MatchLabels: memcachedSelector(name)},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
					MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: memcachedLabels(name)},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](1001),
						RunAsGroup:     ptr.To[int64](1001),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "memcached",
						Image:   memcachedImage,
						Command: []string{"memcached", "--memory-limit=64", "-o", "modern", "-v"},
						Args:    []string{fmt.Sprintf("--port=%d", port)},
						Ports: []corev1.ContainerPort{
							{Name: "memcached", ContainerPort: port, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: tcpProbe(5, 0),
						LivenessProbe:  tcpProbe(10, 3),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("10m"),
								corev1.ResourceMemory: resource.MustParse("64Mi"),
							},
							Limits: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("500m"),
								corev1.ResourceMemory: resource.MustParse("96Mi"),
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

func TestMemcachedDeployment(t *testing.T) {
	tests := []struct {
		name      string
		memcached *cachev1.Memcached
		want      *appsv1.Deployment
	}{
		{
			name:      "one instance on the default port",
			memcached: defaultedMemcached("cache", "demo", 1, 11211),
			want:      wantMemcachedDeployment("cache", "demo", 1, 11211),
		},
		{
			name:      "three instances on port 9000",
			memcached: defaultedMemcached("sessions", "team-a", 3, 9000),
			want:      wantMemcachedDeployment("sessions", "team-a", 3, 9000),
		},
		{
			name:      "two instances on port 1",
			memcached: defaultedMemcached("tiny", "demo", 2, 1),
			want:      wantMemcachedDeployment("tiny", "demo", 2, 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.memcached.DeepCopy()

			raw, err := json.Marshal(resources.MemcachedDeployment(tt.memcached, memcachedImage))
			if err != nil {
				t.Fatalf("marshalling the Deployment: %v", err)
			}
			got := &appsv1.Deployment{}
			decodeStrict(t, raw, got)

			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Deployment mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if !equality.Semantic.DeepEqual(before, tt.memcached) {
				t.Errorf("MemcachedDeployment modified the Memcached (-before +after):\n%s", diff.Diff(before, tt.memcached))
			}
			if v, ok := jsonField(t, raw, "spec", "replicas"); !ok || v != float64(*tt.memcached.Spec.Size) {
				t.Errorf("spec.replicas = %v (present %t), want %d", v, ok, *tt.memcached.Spec.Size)
			}
			for _, path := range [][]any{
				{"metadata", "ownerReferences"},
				{"metadata", "finalizers"},
				{"status"},
			} {
				if v, ok := jsonField(t, raw, path...); ok {
					t.Errorf("%v is set to %v, want it absent", path, v)
				}
			}
			// The pods must carry the label the manager's cache selects on, or status.nodes
			// never sees them.
			if v, ok := jsonField(t, raw, "spec", "template", "metadata", "labels", "app.kubernetes.io/managed-by"); !ok || v != "webhook-operator" {
				t.Errorf("pod template label app.kubernetes.io/managed-by = %v (present %t), want webhook-operator", v, ok)
			}
		})
	}
}

// TestMemcachedArgv pins the command line memcached is started with: every flag its own argv
// element, the memory limit in the form memcached parses, and the listening port from the spec.
func TestMemcachedArgv(t *testing.T) {
	dep := &appsv1.Deployment{}
	raw, err := json.Marshal(resources.MemcachedDeployment(defaultedMemcached("cache", "demo", 2, 9000), memcachedImage))
	if err != nil {
		t.Fatalf("marshalling the Deployment: %v", err)
	}
	decodeStrict(t, raw, dep)
	c := dep.Spec.Template.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	want := []string{"memcached", "--memory-limit=64", "-o", "modern", "-v", "--port=9000"}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("command and args = %q, want %q", argv, want)
	}
	if !reflect.DeepEqual(resources.MemcachedCommand(), want[:5]) {
		t.Errorf("MemcachedCommand() = %q, want %q", resources.MemcachedCommand(), want[:5])
	}
	for _, a := range argv {
		// getopt reads "-m=64" as -m with the value "=64", which memcached takes for 0 MB.
		if strings.HasPrefix(a, "-m=") {
			t.Errorf("argument %q sets no memory limit memcached understands", a)
		}
	}
	// The memory request covers the cache memcached is told to use.
	cache := resource.MustParse("64Mi")
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(cache) < 0 {
		t.Errorf("memory request %s is below the %s cache", req.String(), cache.String())
	}
	if limit := c.Resources.Limits[corev1.ResourceMemory]; limit.Cmp(cache) <= 0 {
		t.Errorf("memory limit %s leaves no room above the %s cache", limit.String(), cache.String())
	}
}

func TestMemcachedDeploymentPodIsRestricted(t *testing.T) {
	raw, err := json.Marshal(resources.MemcachedDeployment(defaultedMemcached("cache", "demo", 3, 11211), memcachedImage))
	if err != nil {
		t.Fatalf("marshalling the Deployment: %v", err)
	}
	got := &appsv1.Deployment{}
	decodeStrict(t, raw, got)
	if violations := restrictedViolations(&got.Spec.Template.Spec); len(violations) > 0 {
		t.Errorf("the pod template breaks the restricted Pod Security Standard:\n%s", strings.Join(violations, "\n"))
	}
}

func wantMemcachedService(name, namespace string, port int32) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: memcachedLabels(name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: memcachedSelector(name),
			Ports: []corev1.ServicePort{{
				Name:       "memcached",
				Protocol:   corev1.ProtocolTCP,
				Port:       port,
				TargetPort: intstr.FromString("memcached"),
			}},
		},
	}
}

func TestMemcachedService(t *testing.T) {
	tests := []struct {
		name      string
		memcached *cachev1.Memcached
		want      *corev1.Service
	}{
		{
			name:      "default port",
			memcached: defaultedMemcached("cache", "demo", 1, 11211),
			want:      wantMemcachedService("cache", "demo", 11211),
		},
		{
			name:      "port 9000",
			memcached: defaultedMemcached("sessions", "team-a", 3, 9000),
			want:      wantMemcachedService("sessions", "team-a", 9000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.memcached.DeepCopy()

			raw, err := json.Marshal(resources.MemcachedService(tt.memcached))
			if err != nil {
				t.Fatalf("marshalling the Service: %v", err)
			}
			got := &corev1.Service{}
			decodeStrict(t, raw, got)

			if !equality.Semantic.DeepEqual(tt.want, got) {
				t.Errorf("Service mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if !equality.Semantic.DeepEqual(before, tt.memcached) {
				t.Errorf("MemcachedService modified the Memcached (-before +after):\n%s", diff.Diff(before, tt.memcached))
			}
			for _, path := range [][]any{
				{"spec", "ports", 0, "nodePort"},
				{"spec", "clusterIP"},
				{"spec", "clusterIPs"},
				{"spec", "sessionAffinity"},
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

// TestMemcachedSelectorsAgree checks that the Service reaches exactly the Deployment's pods and
// that the selector the scale subresource reports matches the pod template.
func TestMemcachedSelectorsAgree(t *testing.T) {
	m := defaultedMemcached("cache", "demo", 2, 11211)
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	for _, x := range []struct {
		ac  any
		out any
	}{{resources.MemcachedDeployment(m, memcachedImage), dep}, {resources.MemcachedService(m), svc}} {
		raw, err := json.Marshal(x.ac)
		if err != nil {
			t.Fatalf("marshalling: %v", err)
		}
		decodeStrict(t, raw, x.out)
	}

	selector := resources.MemcachedSelector("cache")
	if !reflect.DeepEqual(selector, memcachedSelector("cache")) {
		t.Errorf("MemcachedSelector() = %v, want %v", selector, memcachedSelector("cache"))
	}
	if !reflect.DeepEqual(dep.Spec.Selector.MatchLabels, selector) {
		t.Errorf("Deployment selector = %v, want %v", dep.Spec.Selector.MatchLabels, selector)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, selector) {
		t.Errorf("Service selector = %v, want %v", svc.Spec.Selector, selector)
	}
	podLabels := labels.Set(dep.Spec.Template.Labels)
	if !labels.SelectorFromSet(selector).Matches(podLabels) {
		t.Errorf("the selector %v does not match the pod template labels %v", selector, podLabels)
	}
	other := labels.Set(resources.MemcachedSelector("other"))
	if labels.SelectorFromSet(selector).Matches(other) {
		t.Errorf("the selector of cache matches the pods of another Memcached: %v", other)
	}
}
