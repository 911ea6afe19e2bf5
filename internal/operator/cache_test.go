package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/seedlabs/webhook-operator/internal/resources"
)

func TestTheCacheKeepsChildrenWholeAndOfAnythingElseWhatIdentifiesIt(t *testing.T) {
	controller := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "u0"},
			{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u1", Controller: ptr.To(true)},
		}
	}
	deployment := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3,
				Labels:          map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: "welcome", "padding": "x"},
				Annotations:     map[string]string{"padding": "x"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				OwnerReferences: owners,
			},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		}
	}
	skeletonOf := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		m := metav1.ObjectMeta{
			Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: "welcome"},
		}
		if ref := metav1.GetControllerOf(&metav1.ObjectMeta{OwnerReferences: owners}); ref != nil {
			m.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return &appsv1.Deployment{ObjectMeta: m}
	}
	whole := func(owners []metav1.OwnerReference) *appsv1.Deployment {
		d := deployment(owners)
		d.ManagedFields = nil
		return d
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"a Welcome's", deployment(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "shop")), whole(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "shop"))},
		{"a Memcached's", deployment(controller("cache.seedlabs.dev/v1alpha1", "Memcached", "shop")), whole(controller("cache.seedlabs.dev/v1alpha1", "Memcached", "shop"))},
		{"a DeployObject's, of another version", deployment(controller("app.seedlabs.dev/v2", "DeployObject", "shop")), whole(controller("app.seedlabs.dev/v2", "DeployObject", "shop"))},
		{"without a controller", deployment(nil), skeletonOf(nil)},
		{"controlled by a Welcome of another name", deployment(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "cart")), skeletonOf(controller("auth.seedlabs.dev/v1alpha1", "Welcome", "cart"))},
		{"controlled by a kind of that name in another group", deployment(controller("example.com/v1", "Welcome", "shop")), skeletonOf(controller("example.com/v1", "Welcome", "shop"))},
		{"controlled by a ReplicaSet", deployment(controller("apps/v1", "ReplicaSet", "shop")), skeletonOf(controller("apps/v1", "ReplicaSet", "shop"))},
		{"not a Deployment or Service", "tombstone", "tombstone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keepChildren(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keepChildren() (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a Service of no custom resource", func(t *testing.T) {
		got, err := keepChildren(&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Annotations: map[string]string{"padding": "x"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, got); diff != "" {
			t.Errorf("keepChildren() (-want +got):\n%s", diff)
		}
	})
}

func TestTheCacheKeepsOfAPodItsNameLabelsAndPhase(t *testing.T) {
	deleted := metav1.Now()
	got, err := keepPoolMember(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cache-1", Namespace: "ns", DeletionTimestamp: &deleted,
			Labels:      map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache", "pod-template-hash": "abc"},
			Annotations: map[string]string{"padding": "x"},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "memcached"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cache-1", Namespace: "ns", DeletionTimestamp: &deleted,
			Labels: map[string]string{resources.LabelName: "memcached", resources.LabelInstance: "cache"},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keepPoolMember() (-want +got):\n%s", diff)
	}
}
