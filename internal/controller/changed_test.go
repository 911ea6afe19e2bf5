package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
)

func TestSpecOrStatusChanged(t *testing.T) {
	// kept embeds the custom resource, as the cache keeps a DeployObject.
	type kept struct{ cachev1.Memcached }
	memcached := func(change func(*cachev1.Memcached)) *cachev1.Memcached {
		m := &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Generation: 2, ResourceVersion: "10"},
			Spec:       cachev1.MemcachedSpec{Size: ptr.To[int32](2)},
			Status: cachev1.MemcachedStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "RolledOut", Message: "2 of 2 replicas available", ObservedGeneration: 2,
			}}},
		}
		change(m)
		return m
	}
	same := func(*cachev1.Memcached) {}
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{name: "a resync", old: memcached(same), new: memcached(same), want: false},
		{name: "labels and managedFields alone", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.ResourceVersion, m.Labels = "11", map[string]string{"team": "shop"}
			m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		}), want: false},
		{name: "the generation", old: memcached(same), new: memcached(func(m *cachev1.Memcached) { m.Generation = 3 }), want: true},
		{name: "a condition's message", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.Status.Conditions[0].Message = "2 replicas available, 2 requested"
		}), want: true},
		{name: "a status field but the conditions", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.Status.Nodes = []string{"shop-7c9-aa"}
		}), want: true},
		{name: "the status of an object the cache keeps embedded", old: &kept{*memcached(same)}, new: &kept{*memcached(func(m *cachev1.Memcached) {
			m.Status.ObservedGeneration = 1
		})}, want: true},
		{name: "an object kept embedded, unchanged", old: &kept{*memcached(same)}, new: &kept{*memcached(same)}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpecOrStatusChanged.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("Update = %t, want %t", got, tt.want)
			}
		})
	}
	if !SpecOrStatusChanged.Create(event.CreateEvent{Object: memcached(same)}) || !SpecOrStatusChanged.Delete(event.DeleteEvent{Object: memcached(same)}) {
		t.Error("a creation or a deletion is not passed")
	}
}
