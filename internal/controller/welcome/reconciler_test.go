package welcome

import (
	"context"
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/reconcile/ownership"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// These tests run Reconcile against controller-runtime's fake client (test/reconciletest).

const testImage = "registry.example.test/welcome-web:v1.0.0"

var key = types.NamespacedName{Namespace: "demo", Name: "hello"}

// newWelcome is a Welcome as stored without the CRD's defaults: the controller defaults a copy.
func newWelcome() *authv1.Welcome {
	return &authv1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, UID: "9b2f4c1e-0a6d-4e8b-8c3f-5d7e9a1b2c3d", Generation: 1},
		Spec:       authv1.WelcomeSpec{Name: "Ada"},
	}
}

func newHarness(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *reconciletest.Harness {
	t.Helper()
	return reconciletest.New(t, key, func(c client.Client, rec *events.FakeRecorder) reconcile.Reconciler {
		return &Reconciler{Deps: controller.Deps{Client: c, APIReader: c, Recorder: rec, Guard: guard.Guard{Recorder: rec}}, Image: testImage}
	}, funcs, objs...)
}

func TestReconcileRollsOut(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil, newWelcome())

	h.MustReconcile(t)
	h.ExpectEvents(t, "Normal Created created Deployment hello running "+testImage+" with 1 replica and Service hello of type NodePort on port 8088")
	w := reconciletest.Get(t, h, &authv1.Welcome{})
	if w.Spec.Port != nil || w.Spec.Replicas != nil {
		t.Errorf("spec = %+v, want the stored spec left undefaulted", w.Spec)
	}
	if w.Status.ObservedGeneration != 1 || w.Status.ReadyReplicas != 0 || w.Status.ServiceURL != "http://hello.demo.svc:8088/hello/" {
		t.Errorf("status = %+v, want generation 1, no ready replica and the Service's URL", w.Status)
	}
	reconciletest.ExpectCondition(t, w, conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable)
	reconciletest.ExpectCondition(t, w, conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling)
	reconciletest.ExpectCondition(t, w, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)
	reconciletest.ExpectCondition(t, w, conditions.Compliant, metav1.ConditionTrue, conditions.ReasonAsExpected)

	wantOwner := []metav1.OwnerReference{{
		APIVersion: "auth.seedlabs.dev/v1", Kind: "Welcome", Name: "hello", UID: w.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	dep := reconciletest.Get(t, h, &appsv1.Deployment{})
	svc := reconciletest.Get(t, h, &corev1.Service{})
	if !reflect.DeepEqual(dep.OwnerReferences, wantOwner) || !reflect.DeepEqual(svc.OwnerReferences, wantOwner) {
		t.Errorf("owner references = %+v and %+v, want %+v", dep.OwnerReferences, svc.OwnerReferences, wantOwner)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != testImage || svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("Deployment runs %s behind a %s Service, want %s behind a NodePort", img, svc.Spec.Type, testImage)
	}

	// A second reconcile records nothing new.
	h.MustReconcile(t)
	h.ExpectEvents(t)

	// The Deployment controller reports the pod ready.
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := h.Client.Status().Update(ctx, dep); err != nil {
		t.Fatalf("updating the Deployment status: %v", err)
	}
	h.MustReconcile(t)
	h.ExpectEvents(t)
	w = reconciletest.Get(t, h, &authv1.Welcome{})
	if w.Status.ReadyReplicas != 1 {
		t.Errorf("status.readyReplicas = %d, want 1", w.Status.ReadyReplicas)
	}
	reconciletest.ExpectCondition(t, w, conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut)
	reconciletest.ExpectCondition(t, w, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut)
}

// TestReconcileRefusesInvalidSpec: a spec that never passed admission is not rolled out, and the
// pods of an earlier spec are still counted.
func TestReconcileRefusesInvalidSpec(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil, newWelcome())
	h.MustReconcile(t)
	h.Recorded()
	dep := reconciletest.Get(t, h, &appsv1.Deployment{})
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := h.Client.Status().Update(ctx, dep); err != nil {
		t.Fatalf("updating the Deployment status: %v", err)
	}

	w := reconciletest.Get(t, h, &authv1.Welcome{})
	w.Spec.Port = ptr.To[int32](70000)
	w.Generation++
	if err := h.Client.Update(ctx, w); err != nil {
		t.Fatalf("updating the Welcome: %v", err)
	}
	for i := range 2 {
		if err := h.ReconcileNow(t); err != nil {
			t.Fatalf("Reconcile() #%d = %v", i+1, err)
		}
	}
	// One Warning, though the controller looked twice.
	h.ExpectEvents(t, "Warning InvalidSpec spec is not rolled out: spec.port: Invalid value: 70000: must be between 1 and 65535 (rule welcome.port.range)")
	w = reconciletest.Get(t, h, &authv1.Welcome{})
	reconciletest.ExpectCondition(t, w, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, w, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	if w.Status.ObservedGeneration != 2 || w.Status.ReadyReplicas != 1 {
		t.Errorf("status = %+v, want generation 2 and the running pod counted", w.Status)
	}
	if port := reconciletest.Get(t, h, &corev1.Service{}).Spec.Ports[0].Port; port != 8088 {
		t.Errorf("Service port = %d, want 8088: an invalid spec is not rolled out", port)
	}
}

// TestReconcileLeavesAUsersServiceAlone: a Service of the Welcome's name that someone else made is
// neither taken over nor changed, and nothing is applied until it goes.
func TestReconcileLeavesAUsersServiceAlone(t *testing.T) {
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	h := newHarness(t, nil, newWelcome(), theirs)
	res, err := h.Reconcile(t)
	if err != nil || res.RequeueAfter != ownership.RecheckAfter {
		t.Fatalf("Reconcile() = %+v, %v, want a recheck after %s", res, err, ownership.RecheckAfter)
	}
	h.ExpectEvents(t, "Warning NameConflict Service hello already exists and is not this Welcome's: it has no controller. "+
		"Nothing is applied until it is deleted or renamed, or this Welcome is created under another name")
	reconciletest.ExpectCondition(t, reconciletest.Get(t, h, &authv1.Welcome{}), conditions.Stalled, metav1.ConditionTrue, conditions.ReasonNameConflict)
	if err := h.Client.Get(context.Background(), key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the Deployment: %v, want NotFound: nothing is applied beside a foreign object", err)
	}
	if svc := reconciletest.Get(t, h, &corev1.Service{}); len(svc.OwnerReferences) != 0 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("their Service = %+v, want it untouched", svc)
	}
}

func TestReconcileApplyFailure(t *testing.T) {
	applyErr := apierrors.NewForbidden(corev1.Resource("services"), "hello", errors.New("exceeded quota: services.nodeports"))
	h := newHarness(t, &interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if _, ok := obj.(*corev1ac.ServiceApplyConfiguration); ok {
				return applyErr
			}
			return reconciletest.ApplyUnlessDryRun(ctx, c, obj, opts...)
		},
	}, newWelcome())
	for i := range 2 {
		if err := h.ReconcileNow(t); !errors.Is(err, applyErr) {
			t.Errorf("Reconcile() #%d = %v, want it to return %v for the work queue", i+1, err, applyErr)
		}
	}
	h.ExpectEvents(t, "Warning ApplyFailed applying the Service: "+applyErr.Error())
	w := reconciletest.Get(t, h, &authv1.Welcome{})
	reconciletest.ExpectCondition(t, w, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonApplyFailed)
	reconciletest.ExpectCondition(t, w, conditions.Ready, metav1.ConditionFalse, conditions.ReasonApplyFailed)
	reconciletest.ExpectCondition(t, w, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonApplyFailed)
	if w.Status.ObservedGeneration != w.Generation {
		t.Errorf("status.observedGeneration = %d, want %d: Stalled describes the current generation", w.Status.ObservedGeneration, w.Generation)
	}
}
