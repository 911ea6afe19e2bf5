package apply

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// BenchmarkHeld times Held of a Welcome's Deployment as the fake client's server-side apply
// stores it, with its managedFields: the manager's cache computes it for every watch event of a
// child.
func BenchmarkHeld(b *testing.B) {
	ctx := context.Background()
	c := reconciletest.NewClient(&testing.T{}, nil)
	w := &authv1.Welcome{Spec: authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2), Port: ptr.To[int32](8088)}}
	w.Name, w.Namespace = "hello", "default"
	if err := Apply(ctx, c, nil, resources.WelcomeDeployment(w, "registry.local/welcome-web:1"), Options()...); err != nil {
		b.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, d); err != nil {
		b.Fatal(err)
	}
	if len(d.ManagedFields) == 0 {
		b.Fatal("the stored Deployment has no managedFields")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Held(d); err != nil {
			b.Fatal(err)
		}
	}
}
