package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
)

func TestStatusChanged(t *testing.T) {
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
		{name: "the generation (For sees it)", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.Generation, m.Status.ObservedGeneration = 3, 3
		}), want: false},
		{name: "a condition's message", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.Status.Conditions[0].Message = "2 replicas available, 2 requested"
		}), want: true},
		{name: "a status field other than the conditions", old: memcached(same), new: memcached(func(m *cachev1.Memcached) {
			m.Status.Nodes = []string{"shop-7c9-aa"}
		}), want: true},
		{name: "the status of an object the cache keeps embedded", old: &kept{*memcached(same)}, new: &kept{*memcached(func(m *cachev1.Memcached) {
			m.Status.ObservedGeneration = 1
		})}, want: true},
		{name: "an object kept embedded, unchanged", old: &kept{*memcached(same)}, new: &kept{*memcached(same)}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusChanged.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("Update = %t, want %t", got, tt.want)
			}
		})
	}
	if statusChanged.Create(event.CreateEvent{Object: memcached(same)}) || statusChanged.Delete(event.DeleteEvent{Object: memcached(same)}) {
		t.Error("a creation or a deletion is passed: For sees them")
	}
}

// TestRecheckLeavesFailingObjectsToTheirBackOff: a status change enqueues the object at once,
// unless the rate limiter counts failed reconciles of it since its last success.
func TestRecheckLeavesFailingObjectsToTheirBackOff(t *testing.T) {
	// A back-off of an hour: nothing the limiter delays is ready while the test runs.
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Hour, time.Hour))
	defer q.ShutDown()
	m := &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo"}}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)}
	update := event.UpdateEvent{ObjectOld: m, ObjectNew: m}

	recheck.Update(t.Context(), update, q)
	if q.Len() != 1 {
		t.Fatalf("a healthy object: %d queued, want 1", q.Len())
	}
	item, _ := q.Get()
	q.Done(item)

	q.AddRateLimited(req) // as the controller does when the reconcile fails
	recheck.Update(t.Context(), update, q)
	if q.Len() != 0 {
		t.Errorf("an object whose reconcile failed: %d queued at once, want 0 (its retry waits out the back-off)", q.Len())
	}

	q.Forget(req) // as the controller does when a reconcile succeeds
	recheck.Update(t.Context(), update, q)
	if q.Len() != 1 {
		t.Errorf("after a success: %d queued, want 1", q.Len())
	}
}
