package ownership

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

const owner = "4b1f0e36-0c44-4f53-a7a5-4a9b0d8e2f11"

func service(controller string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop"}}
	if controller != "" {
		s.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "auth.seedlabs.dev/v1alpha1", Kind: "Welcome", Name: "shop", UID: types.UID(controller),
			Controller: ptr.To(true),
		}}
	}
	return s
}

func TestObserve(t *testing.T) {
	reader := func(objs ...client.Object) client.Reader { return reconciletest.NewClient(t, nil, objs...) }
	key := client.ObjectKey{Namespace: "ns", Name: "shop"}
	tests := []struct {
		name         string
		cached, live client.Reader
		wantOurs     bool
		wantConflict string
	}{
		{name: "nothing under the name", cached: reader(), live: reader()},
		{name: "ours, in the cache", cached: reader(service(owner)), live: reader(), wantOurs: true},
		{name: "ours, not yet in the cache", cached: reader(), live: reader(service(owner)), wantOurs: true},
		{
			name: "the user's, which the cache cannot see", cached: reader(), live: reader(service("")),
			wantConflict: "Service shop already exists and is not this Welcome's: it has no controller.",
		},
		{
			name: "an earlier Welcome's of the same name", cached: reader(service("older")), live: reader(),
			wantConflict: "Service shop already exists and is not this Welcome's: it is controlled by Welcome shop (uid older).",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ours, conflict, err := Observe(context.Background(), tc.cached, tc.live, key, &corev1.Service{}, "Service", "Welcome", owner)
			if err != nil {
				t.Fatalf("Observe() error = %v", err)
			}
			if ours != tc.wantOurs || !strings.HasPrefix(conflict, tc.wantConflict) || (tc.wantConflict == "") != (conflict == "") {
				t.Errorf("Observe() = %t, %q; want %t, %q…", ours, conflict, tc.wantOurs, tc.wantConflict)
			}
		})
	}
}
