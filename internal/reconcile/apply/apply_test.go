package apply

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, have string
		holds      bool
	}{
		{"equal", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, true},
		{"have has more keys", `{"a":1}`, `{"a":1,"b":2}`, true},
		{"nested extra keys", `{"spec":{"ports":[{"port":80}]}}`, `{"spec":{"ports":[{"port":80,"nodePort":30000,"protocol":"TCP"}]}}`, true},
		{"missing key", `{"a":1,"b":2}`, `{"a":1}`, false},
		{"different value", `{"a":1}`, `{"a":2}`, false},
		{"different type", `{"a":"1"}`, `{"a":1}`, false},
		{"list longer in have", `{"l":[1]}`, `{"l":[1,2]}`, false},
		{"list shorter in have", `{"l":[1,2]}`, `{"l":[1]}`, false},
		{"list order", `{"l":[1,2]}`, `{"l":[2,1]}`, false},
		{"empty map left out", `{"a":1,"labels":{}}`, `{"a":1}`, true},
		{"empty list left out", `{"a":1,"env":[]}`, `{"a":1}`, true},
		{"null left out", `{"a":1,"b":null}`, `{"a":1}`, true},
		{"object where scalar", `{"a":{"b":1}}`, `{"a":1}`, false},
		{"list where scalar", `{"a":[1]}`, `{"a":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Subset(decode(t, tc.want), decode(t, tc.have)); got != tc.holds {
				t.Errorf("Subset(%s, %s) = %v, want %v", tc.want, tc.have, got, tc.holds)
			}
		})
	}
}

// countingClient counts applies and answers each as the API server would for desired, without
// storing anything.
func countingClient(t *testing.T, applies *int) client.Client {
	t.Helper()
	return reconciletest.NewClient(t, &interceptor.Funcs{
		Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
			*applies++
			return nil
		},
	})
}

func desiredService() *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service("shop", "default").
		WithLabels(map[string]string{"app": "shop"}).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(map[string]string{"app": "shop"}).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80)))
}

// stored is the Service as the API server stores desired: with the hash annotation Apply adds,
// defaults and fields of its own.
func stored(t *testing.T, desired *corev1ac.ServiceApplyConfiguration) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	data, err := json.Marshal(desired)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, svc); err != nil {
		t.Fatal(err)
	}
	svc.ResourceVersion = "7"
	svc.Spec.ClusterIP = "10.0.0.7"
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc.Spec.Ports[0].Protocol = corev1.ProtocolTCP
	return svc
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	// The stored Service of a first apply.
	var applies int
	first := desiredService()
	if err := Apply(ctx, countingClient(t, &applies), (*corev1.Service)(nil), first); err != nil || applies != 1 {
		t.Fatalf("with nothing cached: %d applies, %v; want one apply", applies, err)
	}
	if first.Annotations[AnnotationDesired] == "" {
		t.Fatalf("the apply does not carry the %s annotation: %v", AnnotationDesired, first.Annotations)
	}
	live := stored(t, first)

	for _, tc := range []struct {
		name    string
		live    func() *corev1.Service
		desired func() *corev1ac.ServiceApplyConfiguration
		applied bool
	}{
		{"unchanged", func() *corev1.Service { return live.DeepCopy() }, desiredService, false},
		{"someone else's label added", func() *corev1.Service {
			l := live.DeepCopy()
			l.Labels["team"] = "web"
			return l
		}, desiredService, false},
		{"a field it sets changed by hand", func() *corev1.Service {
			l := live.DeepCopy()
			l.Spec.Selector["app"] = "other"
			return l
		}, desiredService, true},
		{"a field it sets removed by hand", func() *corev1.Service {
			l := live.DeepCopy()
			delete(l.Labels, "app")
			return l
		}, desiredService, true},
		{"a port added by hand", func() *corev1.Service {
			l := live.DeepCopy()
			l.Spec.Ports = append(l.Spec.Ports, corev1.ServicePort{Name: "extra", Port: 81})
			return l
		}, desiredService, true},
		{"a field it no longer sets", func() *corev1.Service { return live.DeepCopy() }, func() *corev1ac.ServiceApplyConfiguration {
			d := desiredService()
			d.Labels = nil
			return d
		}, true},
		{"a new value", func() *corev1.Service { return live.DeepCopy() }, func() *corev1ac.ServiceApplyConfiguration {
			return desiredService().WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8080)))
		}, true},
		{"applied by an earlier version, without the annotation", func() *corev1.Service {
			l := live.DeepCopy()
			delete(l.Annotations, AnnotationDesired)
			return l
		}, desiredService, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var applies int
			desired := tc.desired()
			if err := Apply(ctx, countingClient(t, &applies), tc.live(), desired); err != nil {
				t.Fatal(err)
			}
			if applied := applies == 1; applied != tc.applied || applies > 1 {
				t.Fatalf("%d applies, want applied %v", applies, tc.applied)
			}
			if !tc.applied && (ptr.Deref(desired.ResourceVersion, "") != "7" || ptr.Deref(desired.Spec.ClusterIP, "") != "10.0.0.7") {
				t.Errorf("a skipped apply must leave the stored object in desired, as the reply to an apply does: %+v", desired.Spec)
			}
		})
	}
}

// TestHashOf: configurations that differ hash differently, so an edit is never skipped.
func TestHashOf(t *testing.T) {
	hash := func(d *appsv1ac.DeploymentApplyConfiguration) string {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return hashOf(data)
	}
	a := hash(appsv1ac.Deployment("d", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1)))
	b := hash(appsv1ac.Deployment("d", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)))
	if a == b {
		t.Errorf("two configurations hash alike: %s", a)
	}
}
