package memcached

import (
	"context"
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// These tests run Reconcile against controller-runtime's fake client (test/reconciletest).

const testImage = "registry.example.test/memcached:1.6"

var key = types.NamespacedName{Namespace: "demo", Name: "cache"}

func newMemcached(size *int32, finalizers ...string) *cachev1.Memcached {
	return &cachev1.Memcached{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace, UID: "5e0d7c7a-1d3e-4a7e-9d51-0c2b8f3a9e42",
			Generation: 1, Finalizers: finalizers,
		},
		Spec: cachev1.MemcachedSpec{Size: size},
	}
}

func newHarness(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *reconciletest.Harness {
	t.Helper()
	return reconciletest.New(t, key, func(c client.Client, rec *events.FakeRecorder) reconcile.Reconciler {
		return &Reconciler{Deps: controller.Deps{Client: c, APIReader: c, Recorder: rec, Guard: guard.Guard{Recorder: rec}}, Image: testImage}
	}, funcs, objs...)
}

func TestReconcileRollsOutAndPutsDriftBack(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil, newMemcached(ptr.To[int32](2)))

	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	h.ExpectEvents(t,
		"Normal Created created Deployment cache with 2 memcached instances and Service cache on port 11211")

	m := reconciletest.Get(t, h, &cachev1.Memcached{})
	if len(m.Finalizers) != 0 {
		t.Errorf("finalizers = %q, want none: nothing needs to happen before a Memcached goes", m.Finalizers)
	}
	if m.Spec.Size == nil || *m.Spec.Size != 2 || m.Spec.ContainerPort != nil {
		t.Errorf("spec = %+v, want the stored spec unchanged (size 2, no containerPort)", m.Spec)
	}
	if m.Status.ObservedGeneration != m.Generation || m.Status.Selector != "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached" {
		t.Errorf("status = %+v, want observedGeneration %d and the pod selector", m.Status, m.Generation)
	}
	reconciletest.ExpectCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable)
	reconciletest.ExpectCondition(t, m, conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling)
	reconciletest.ExpectCondition(t, m, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)

	wantOwner := []metav1.OwnerReference{{
		APIVersion: "cache.seedlabs.dev/v1", Kind: "Memcached", Name: "cache", UID: m.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	d := reconciletest.Get(t, h, &appsv1.Deployment{})
	if ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("Deployment replicas = %v, want 2", d.Spec.Replicas)
	}
	if !reflect.DeepEqual(d.OwnerReferences, wantOwner) {
		t.Errorf("Deployment owner references = %+v, want %+v", d.OwnerReferences, wantOwner)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != testImage {
		t.Errorf("image = %q, want %q", img, testImage)
	}
	svc := &corev1.Service{}
	if err := h.Client.Get(ctx, key, svc); err != nil {
		t.Fatalf("getting the Service: %v", err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].Port != 11211 {
		t.Errorf("Service = %s on %d, want ClusterIP on 11211", svc.Spec.Type, svc.Spec.Ports[0].Port)
	}
	if !reflect.DeepEqual(svc.OwnerReferences, wantOwner) {
		t.Errorf("Service owner references = %+v, want %+v", svc.OwnerReferences, wantOwner)
	}

	// A second reconcile records nothing new.
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	h.ExpectEvents(t)

	// Someone scales the Deployment to 5 by hand.
	d = reconciletest.Get(t, h, &appsv1.Deployment{})
	d.Spec.Replicas = ptr.To[int32](5)
	if err := h.Client.Update(ctx, d, client.FieldOwner("kubectl")); err != nil {
		t.Fatalf("scaling the Deployment: %v", err)
	}
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	if got := ptr.Deref(reconciletest.Get(t, h, &appsv1.Deployment{}).Spec.Replicas, 0); got != 2 {
		t.Errorf("Deployment replicas = %d after the reconcile, want 2", got)
	}
	h.ExpectEvents(t, "Normal Scaled scaled Deployment cache from 5 to 2 memcached instances")

	// The Deployment rolls out; a failed pod and another app's pod are not members.
	d = reconciletest.Get(t, h, &appsv1.Deployment{})
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
	}
	if err := h.Client.Status().Update(ctx, d); err != nil {
		t.Fatalf("updating the Deployment status: %v", err)
	}
	for _, p := range []struct {
		name  string
		phase corev1.PodPhase
		app   string
	}{
		{"cache-7c9-zz", corev1.PodRunning, resources.MemcachedApp},
		{"cache-7c9-aa", corev1.PodRunning, resources.MemcachedApp},
		{"cache-7c9-done", corev1.PodFailed, resources.MemcachedApp},
		{"cache-welcome", corev1.PodRunning, resources.WelcomeApp},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: key.Namespace,
			Labels: map[string]string{resources.LabelName: p.app, resources.LabelInstance: key.Name, resources.LabelManagedBy: resources.ManagedBy},
		}}
		if err := h.Client.Create(ctx, pod); err != nil {
			t.Fatalf("creating pod %s: %v", p.name, err)
		}
		pod.Status.Phase = p.phase
		if err := h.Client.Status().Update(ctx, pod); err != nil {
			t.Fatalf("updating pod %s: %v", p.name, err)
		}
	}
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	m = reconciletest.Get(t, h, &cachev1.Memcached{})
	if want := []string{"cache-7c9-aa", "cache-7c9-zz"}; !reflect.DeepEqual(m.Status.Nodes, want) {
		t.Errorf("status.nodes = %q, want %q", m.Status.Nodes, want)
	}
	if m.Status.Replicas != 2 {
		t.Errorf("status.replicas = %d, want 2", m.Status.Replicas)
	}
	reconciletest.ExpectCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut)
	reconciletest.ExpectCondition(t, m, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut)
	reconciletest.ExpectCondition(t, m, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)
	h.ExpectEvents(t)
}

func TestReconcileRefusesInvalidSpec(t *testing.T) {
	h := newHarness(t, nil, newMemcached(ptr.To[int32](5)))
	for i := range 2 {
		if err := h.ReconcileNow(t); err != nil {
			t.Fatalf("Reconcile() #%d = %v", i+1, err)
		}
	}
	// One Warning, though the controller looked twice.
	h.ExpectEvents(t, "Warning InvalidSpec spec is not rolled out: spec.size: Invalid value: 5: must be between 1 and 3 (rule memcached.size.range)")

	m := reconciletest.Get(t, h, &cachev1.Memcached{})
	reconciletest.ExpectCondition(t, m, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, m, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	if c := meta.FindStatusCondition(m.Status.Conditions, conditions.Stalled); c != nil &&
		c.Message != "spec.size: Invalid value: 5: must be between 1 and 3 (rule memcached.size.range)" {
		t.Errorf("Stalled message = %q", c.Message)
	}
	if len(m.Finalizers) != 0 {
		t.Errorf("finalizers = %q, want none: nothing was created for an invalid spec", m.Finalizers)
	}
	if m.Status.Replicas != 0 || m.Status.Nodes != nil || m.Status.Selector == "" {
		t.Errorf("status = %+v, want no replicas, no nodes and the selector", m.Status)
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := h.Client.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("getting the %T: %v, want NotFound: nothing may be applied for an invalid spec", obj, err)
		}
	}
}

func deleting(m *cachev1.Memcached) *cachev1.Memcached {
	m.DeletionTimestamp = ptr.To(metav1.Now())
	// The API server bumps the generation when it sets deletionTimestamp.
	m.Generation++
	return m
}

// TestReconcileDeletionRemovesTheFinalizer: the finalizer an earlier version put on a Memcached
// comes off, so the object goes.
func TestReconcileDeletionRemovesTheFinalizer(t *testing.T) {
	h := newHarness(t, nil, deleting(newMemcached(ptr.To[int32](2), cachev1.Finalizer)))
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	h.ExpectEvents(t)
	if err := h.Client.Get(context.Background(), key, &cachev1.Memcached{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the Memcached: %v, want NotFound: the finalizer should have come off", err)
	}

	// The delete event of the object reconciles it once more.
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() after the object went = %v", err)
	}
	h.ExpectEvents(t)
}

func TestReconcileDeletionKeepsOtherFinalizers(t *testing.T) {
	const other = "example.com/backup"
	h := newHarness(t, nil, deleting(newMemcached(ptr.To[int32](2), other, cachev1.Finalizer)))
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	h.ExpectEvents(t)
	m := reconciletest.Get(t, h, &cachev1.Memcached{})
	if !reflect.DeepEqual(m.Finalizers, []string{other}) {
		t.Errorf("finalizers = %q, want only %q", m.Finalizers, other)
	}

	// Another finalizer holds the object; reconciling it again changes and records nothing.
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	h.ExpectEvents(t)
	if got := reconciletest.Get(t, h, &cachev1.Memcached{}); !reflect.DeepEqual(got.Status, m.Status) || !reflect.DeepEqual(got.Finalizers, m.Finalizers) {
		t.Errorf("the second reconcile changed the Memcached")
	}
}

// TestReconcileRemovesTheFinalizerOfALiveMemcached: an object an earlier version finalized loses
// the finalizer on its first reconcile, and is rolled out as usual.
func TestReconcileRemovesTheFinalizerOfALiveMemcached(t *testing.T) {
	h := newHarness(t, nil, newMemcached(ptr.To[int32](2), cachev1.Finalizer))
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
	if m := reconciletest.Get(t, h, &cachev1.Memcached{}); len(m.Finalizers) != 0 {
		t.Errorf("finalizers = %q, want none", m.Finalizers)
	}
	if d := reconciletest.Get(t, h, &appsv1.Deployment{}); ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("Deployment replicas = %v, want 2", d.Spec.Replicas)
	}
}

func TestReconcileApplyFailure(t *testing.T) {
	applyErr := apierrors.NewForbidden(appsv1.Resource("deployments"), "cache", errors.New("exceeded quota: count/deployments.apps"))
	h := newHarness(t, &interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if _, ok := obj.(*appsv1ac.DeploymentApplyConfiguration); ok {
				return applyErr
			}
			return c.Apply(ctx, obj, opts...)
		},
	}, newMemcached(ptr.To[int32](1)))

	for i := range 2 {
		if err := h.ReconcileNow(t); !errors.Is(err, applyErr) {
			t.Errorf("Reconcile() #%d = %v, want it to return %v for the work queue", i+1, err, applyErr)
		}
	}
	h.ExpectEvents(t, "Warning ApplyFailed applying the Deployment: "+applyErr.Error())
	m := reconciletest.Get(t, h, &cachev1.Memcached{})
	reconciletest.ExpectCondition(t, m, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonApplyFailed)
	if err := h.Client.Get(context.Background(), key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the Service: %v, want NotFound: nothing is applied after a failure", err)
	}
}

func TestPoolMembershipChanged(t *testing.T) {
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cache-7c9-aa", Namespace: "demo", Labels: map[string]string{resources.LabelInstance: "cache"}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   bool
	}{
		{name: "readiness flips", mutate: func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, want: false},
		{name: "pending to running", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, want: false},
		{name: "starts terminating", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) }, want: true},
		{name: "fails", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, want: true},
		{name: "relabelled", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{resources.LabelInstance: "other"} }, want: true},
	}
	p := poolMembershipChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updated := running.DeepCopy()
			tt.mutate(updated)
			// Pending and Running are both members, so the direction of the update does not matter.
			if got := p.Update(event.UpdateEvent{ObjectOld: running, ObjectNew: updated}); got != tt.want {
				t.Errorf("Update(old, new) = %t, want %t", got, tt.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: running}) || !p.Delete(event.DeleteEvent{Object: running}) {
		t.Errorf("pod creations and deletions must pass")
	}
}
