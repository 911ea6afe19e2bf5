package apply

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

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

// kept is the Service as the manager's cache keeps it after desiredService() was applied: with the values
// the API server set, and held, the hash of what the operator's field manager holds of it.
func kept(t *testing.T, held string) *corev1.Service {
	t.Helper()
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", ResourceVersion: "7", UID: "u-1",
			Annotations: map[string]string{AnnotationHeld: held}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.7",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
}

// heldOf is what Apply compares a cached object's AnnotationHeld with: the fingerprint of desired
// as Apply applies it, with its AnnotationDesired.
func heldOf(t *testing.T, desired *corev1ac.ServiceApplyConfiguration) string {
	t.Helper()
	d := desired
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	d.WithAnnotations(map[string]string{AnnotationDesired: hashOf(data)})
	held, err := fingerprint(d)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// TestApply leaves out an apply when the cached object holds the desired configuration, and
// makes it otherwise. What the object holds is the server's to say (its managedFields):
// test/integration's held_test.go holds Held to it through the API server.
func TestApply(t *testing.T) {
	ctx := context.Background()
	var applies int
	if err := Apply(ctx, countingClient(t, &applies), (*corev1.Service)(nil), desiredService()); err != nil || applies != 1 {
		t.Fatalf("with nothing cached: %d applies, %v; want one apply", applies, err)
	}
	held := heldOf(t, desiredService())

	for _, tc := range []struct {
		name    string
		live    *corev1.Service
		desired func() *corev1ac.ServiceApplyConfiguration
		applied bool
	}{
		{"holds it", kept(t, held), desiredService, false},
		{"holds something else", kept(t, "0123456789abcdef0123456789abcdef"), desiredService, true},
		{"read past the cache, with nothing held", func() *corev1.Service {
			s := kept(t, held)
			s.Annotations = nil
			return s
		}(), desiredService, true},
		{"a field it no longer sets", kept(t, held), func() *corev1ac.ServiceApplyConfiguration {
			d := desiredService()
			d.Labels = nil
			return d
		}, true},
		{"a new value", kept(t, held), func() *corev1ac.ServiceApplyConfiguration {
			return desiredService().WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8080)))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var applies int
			desired := tc.desired()
			if err := Apply(ctx, countingClient(t, &applies), tc.live, desired); err != nil {
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

// TestAppliesCountsEachResult: webhook_operator_applies_total tells an object created from one
// applied over, a refused apply from both, and an apply left out.
func TestAppliesCountsEachResult(t *testing.T) {
	ctx := context.Background()
	refusing := reconciletest.NewClient(t, &interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return apierrors.NewForbidden(corev1.Resource("services"), "shop", errors.New("port 7777 is reserved"))
		},
	})
	var n int
	held := heldOf(t, desiredService())
	for _, tc := range []struct {
		result string
		c      client.Client
		live   *corev1.Service
	}{
		{"created", countingClient(t, &n), nil},
		{"applied", countingClient(t, &n), kept(t, "0123456789abcdef0123456789abcdef")},
		{"skipped", countingClient(t, &n), kept(t, held)},
		{"failed", refusing, nil},
		{"failed", refusing, kept(t, "0123456789abcdef0123456789abcdef")},
	} {
		before := testutil.ToFloat64(applies.WithLabelValues("Service", tc.result))
		err := Apply(ctx, tc.c, tc.live, desiredService())
		if (tc.result == "failed") != (err != nil) {
			t.Errorf("%s: %v", tc.result, err)
		}
		if got := testutil.ToFloat64(applies.WithLabelValues("Service", tc.result)) - before; got != 1 {
			t.Errorf("%s counted %v times, want once", tc.result, got)
		}
	}
}

// TestFingerprintLeavesOutEmptyValues: a configuration that sets a list or map to empty holds the
// same as one that leaves it out, as the API server stores neither.
func TestFingerprintLeavesOutEmptyValues(t *testing.T) {
	a, err := fingerprint(desiredService())
	if err != nil {
		t.Fatal(err)
	}
	b, err := fingerprint(desiredService().WithAnnotations(map[string]string{}).
		WithSpec(corev1ac.ServiceSpec().WithSelector(map[string]string{"app": "shop"}).WithExternalIPs().
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80))))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("empty values change the fingerprint: %s, %s", a, b)
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
