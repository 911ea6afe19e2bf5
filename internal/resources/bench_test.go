package resources_test

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seedlabs/webhook-operator/internal/resources"
)

// BenchmarkBuilders builds, and marshals as the apply request does, the Deployment and Service of
// each kind, so that `benchstat` compares a change to the builders.
func BenchmarkBuilders(b *testing.B) {
	w := defaultedWelcome("web", "default", 2, 8088, corev1.ServiceTypeNodePort, "")
	m := defaultedMemcached("cache", "default", 3, 11211)
	d := deployObject(3,
		[]corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
		},
		[]corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
		}}},
		corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		})
	for _, bc := range []struct {
		name  string
		build func() any
	}{
		{"Welcome/Deployment", func() any { return resources.WelcomeDeployment(w, defaultImage) }},
		{"Welcome/Service", func() any { return resources.WelcomeService(w) }},
		{"Memcached/Deployment", func() any { return resources.MemcachedDeployment(m, memcachedImage) }},
		{"Memcached/Service", func() any { return resources.MemcachedService(m) }},
		{"DeployObject/Deployment", func() any { return resources.DeployObjectDeployment(d) }},
		{"DeployObject/Service", func() any { return resources.DeployObjectService(d) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(bc.build()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
