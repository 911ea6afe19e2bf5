package deployobject

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// These tests run Reconcile against controller-runtime's fake client (test/reconciletest).

const (
	testImage  = "registry.example.test/team/shop:2.4.1"
	otherImage = "quay.io/team/shop:2.5.0"
)

var key = types.NamespacedName{Namespace: "demo", Name: "shop"}

func newDeployObject(spec appv1.DeployObjectSpec) *appv1.DeployObject {
	return &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace, UID: "3a9f1b0e-7c55-4f1e-9b7a-0d2c4e6f8a10", Generation: 1,
		},
		Spec: spec,
	}
}

// shopSpec is a valid spec as stored without the mutating webhook: no protocols, one
// targetPort left out.
func shopSpec() appv1.DeployObjectSpec {
	return appv1.DeployObjectSpec{
		Replicas: ptr.To[int32](2),
		Image:    testImage,
		Env:      []corev1.EnvVar{{Name: "MODE", Value: "blue"}},
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Port: 9090},
		},
	}
}

func newHarness(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *reconciletest.Harness {
	t.Helper()
	return reconciletest.New(t, key, func(c client.Client, rec *events.FakeRecorder) reconcile.Reconciler {
		return &Reconciler{Deps: controller.Deps{Client: c, APIReader: c, Recorder: rec, Guard: guard.Guard{Recorder: rec}}}
	}, funcs, objs...)
}

// editSpec changes the stored spec and bumps the generation, as the API server does.
func editSpec(t *testing.T, h *reconciletest.Harness, edit func(*appv1.DeployObjectSpec)) {
	t.Helper()
	d := reconciletest.Get(t, h, &appv1.DeployObject{})
	edit(&d.Spec)
	d.Generation++
	if err := h.Client.Update(context.Background(), d); err != nil {
		t.Fatalf("updating the DeployObject: %v", err)
	}
}

func expectPorts(t *testing.T, h *reconciletest.Harness, wantService []corev1.ServicePort, wantContainer []corev1.ContainerPort) {
	t.Helper()
	if got := reconciletest.Get(t, h, &corev1.Service{}).Spec.Ports; !reflect.DeepEqual(got, wantService) {
		t.Errorf("Service ports = %+v, want %+v", got, wantService)
	}
	if got := reconciletest.Get(t, h, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Ports; !reflect.DeepEqual(got, wantContainer) {
		t.Errorf("container ports = %+v, want %+v", got, wantContainer)
	}
}

func TestReconcileRollsOutEveryEditAndPutsDriftBack(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil, newDeployObject(shopSpec()))

	h.MustReconcile(t)
	h.ExpectEvents(t,
		"Normal Created created Deployment shop running "+testImage+" with 2 replicas and Service shop on ports http 80/TCP, metrics 9090/TCP")

	d := reconciletest.Get(t, h, &appv1.DeployObject{})
	if d.Spec.Ports[1].Protocol != "" || d.Spec.Ports[1].TargetPort != (intstr.IntOrString{}) {
		t.Errorf("spec.ports[1] = %+v, want the stored spec left undefaulted", d.Spec.Ports[1])
	}
	if d.Status.ObservedGeneration != 1 {
		t.Errorf("status.observedGeneration = %d, want 1", d.Status.ObservedGeneration)
	}
	reconciletest.ExpectCondition(t, d, conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable)
	reconciletest.ExpectCondition(t, d, conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling)
	reconciletest.ExpectCondition(t, d, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)

	wantOwner := []metav1.OwnerReference{{
		APIVersion: "app.seedlabs.dev/v1", Kind: "DeployObject", Name: "shop", UID: d.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	dep := reconciletest.Get(t, h, &appsv1.Deployment{})
	if !reflect.DeepEqual(dep.OwnerReferences, wantOwner) {
		t.Errorf("Deployment owner references = %+v, want %+v", dep.OwnerReferences, wantOwner)
	}
	if svc := reconciletest.Get(t, h, &corev1.Service{}); !reflect.DeepEqual(svc.OwnerReferences, wantOwner) || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service = %s owned by %+v, want ClusterIP owned by %+v", svc.Spec.Type, svc.OwnerReferences, wantOwner)
	}
	if c := dep.Spec.Template.Spec.Containers[0]; c.Image != testImage || ptr.Deref(dep.Spec.Replicas, -1) != 2 ||
		!reflect.DeepEqual(c.Env, []corev1.EnvVar{{Name: "MODE", Value: "blue"}}) {
		t.Errorf("Deployment runs %s x%d with env %+v, want %s x2 with MODE=blue", c.Image, ptr.Deref(dep.Spec.Replicas, -1), c.Env, testImage)
	}
	expectPorts(t, h,
		[]corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)},
		},
		[]corev1.ContainerPort{
			{ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		})

	// A second reconcile records nothing new.
	h.MustReconcile(t)
	h.ExpectEvents(t)

	// Every edit rolls out: image, replicas, env, a port changed, one removed, one added.
	editSpec(t, h, func(s *appv1.DeployObjectSpec) {
		s.Image = otherImage
		s.Replicas = ptr.To[int32](0)
		s.Env = []corev1.EnvVar{{Name: "COLOR", Value: "green"}}
		s.Ports = []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
			{Name: "syslog", Port: 514, Protocol: corev1.ProtocolUDP},
		}
	})
	h.MustReconcile(t)
	h.ExpectEvents(t)
	dep = reconciletest.Get(t, h, &appsv1.Deployment{})
	if c := dep.Spec.Template.Spec.Containers[0]; c.Image != otherImage || ptr.Deref(dep.Spec.Replicas, -1) != 0 ||
		!reflect.DeepEqual(c.Env, []corev1.EnvVar{{Name: "COLOR", Value: "green"}}) {
		t.Errorf("Deployment runs %s x%d with env %+v, want %s x0 with only COLOR=green", c.Image, ptr.Deref(dep.Spec.Replicas, -1), c.Env, otherImage)
	}
	expectPorts(t, h,
		[]corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
			{Name: "syslog", Protocol: corev1.ProtocolUDP, Port: 514, TargetPort: intstr.FromInt32(514)},
		},
		[]corev1.ContainerPort{
			{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 514, Protocol: corev1.ProtocolUDP},
		})
	d = reconciletest.Get(t, h, &appv1.DeployObject{})
	if d.Status.ObservedGeneration != 2 {
		t.Errorf("status.observedGeneration = %d, want 2", d.Status.ObservedGeneration)
	}
	reconciletest.ExpectCondition(t, d, conditions.Ready, metav1.ConditionTrue, conditions.ReasonScaledToZero)

	// Someone edits fields the operator owns, by hand.
	dep = reconciletest.Get(t, h, &appsv1.Deployment{})
	dep.Spec.Replicas = ptr.To[int32](5)
	dep.Spec.Template.Spec.Containers[0].Image = testImage
	if err := h.Client.Update(ctx, dep, client.FieldOwner("kubectl")); err != nil {
		t.Fatalf("editing the Deployment: %v", err)
	}
	svc := reconciletest.Get(t, h, &corev1.Service{})
	svc.Spec.Ports[1].TargetPort = intstr.FromInt32(1514)
	if err := h.Client.Update(ctx, svc, client.FieldOwner("kubectl")); err != nil {
		t.Fatalf("editing the Service: %v", err)
	}
	h.MustReconcile(t)
	h.ExpectEvents(t)
	dep = reconciletest.Get(t, h, &appsv1.Deployment{})
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != otherImage || ptr.Deref(dep.Spec.Replicas, -1) != 0 {
		t.Errorf("Deployment runs %s x%d after the reconcile, want %s x0", img, ptr.Deref(dep.Spec.Replicas, -1), otherImage)
	}
	if got := reconciletest.Get(t, h, &corev1.Service{}).Spec.Ports[1].TargetPort; got != intstr.FromInt32(514) {
		t.Errorf("Service port syslog targets %s after the reconcile, want 514", got.String())
	}

	// The Deployment controller reports; the DeployObject mirrors it.
	dep = reconciletest.Get(t, h, &appsv1.Deployment{})
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Conditions: []appsv1.DeploymentCondition{
			deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
			deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", progressedMessage),
		},
	}
	if err := h.Client.Status().Update(ctx, dep); err != nil {
		t.Fatalf("updating the Deployment status: %v", err)
	}
	h.MustReconcile(t)
	d = reconciletest.Get(t, h, &appv1.DeployObject{})
	if !reflect.DeepEqual(d.Status.DeploymentConditions, dep.Status.Conditions) {
		t.Errorf("status.deploymentConditions = %+v, want %+v", d.Status.DeploymentConditions, dep.Status.Conditions)
	}
	reconciletest.ExpectCondition(t, d, conditions.Ready, metav1.ConditionTrue, conditions.ReasonScaledToZero)
	reconciletest.ExpectCondition(t, d, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut)
	reconciletest.ExpectCondition(t, d, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)
	h.ExpectEvents(t)
}

const invalidSpecEvent = `Warning InvalidSpec spec is not rolled out: [spec.image: Invalid value: "shop": has no tag or digest, ` +
	`so the container runtime would pull docker.io/library/shop:latest, whatever latest is that day; pin a version tag such as shop:1.2.3, or a digest ` +
	`(rule deployobject.image.pinned), spec.replicas: Invalid value: -1: must be 0 or more (rule deployobject.replicas.non-negative)]`

func TestReconcileRefusesInvalidSpec(t *testing.T) {
	spec := shopSpec()
	spec.Image = "shop"
	spec.Replicas = ptr.To[int32](-1)
	h := newHarness(t, nil, newDeployObject(spec))
	for i := range 2 {
		if err := h.ReconcileNow(t); err != nil {
			t.Fatalf("Reconcile() #%d = %v", i+1, err)
		}
	}
	// One Warning, though the controller looked twice.
	h.ExpectEvents(t, invalidSpecEvent)

	d := reconciletest.Get(t, h, &appv1.DeployObject{})
	reconciletest.ExpectCondition(t, d, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, d, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, d, conditions.Ready, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	if d.Status.ObservedGeneration != d.Generation {
		t.Errorf("status.observedGeneration = %d, want %d", d.Status.ObservedGeneration, d.Generation)
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := h.Client.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("getting the %T: %v, want NotFound: nothing may be applied for an invalid spec", obj, err)
		}
	}
}

// TestReconcileKeepsTheLastGoodRollout shows that a spec broken after a rollout leaves the
// Deployment as it is and still mirrors it, though the object is no longer Ready (its current spec
// is not rolled out), and that fixing the spec rolls out again.
func TestReconcileKeepsTheLastGoodRollout(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil, newDeployObject(shopSpec()))
	h.MustReconcile(t)
	h.Recorded()

	dep := reconciletest.Get(t, h, &appsv1.Deployment{})
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := h.Client.Status().Update(ctx, dep); err != nil {
		t.Fatalf("updating the Deployment status: %v", err)
	}
	h.MustReconcile(t)
	reconciletest.ExpectCondition(t, reconciletest.Get(t, h, &appv1.DeployObject{}), conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut)

	editSpec(t, h, func(s *appv1.DeployObjectSpec) { s.Image = "shop"; s.Replicas = ptr.To[int32](-1) })
	h.MustReconcile(t)
	h.ExpectEvents(t, invalidSpecEvent)
	if img := reconciletest.Get(t, h, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Image; img != testImage {
		t.Errorf("Deployment image = %s, want %s: an invalid spec is not rolled out", img, testImage)
	}
	d := reconciletest.Get(t, h, &appv1.DeployObject{})
	if d.Status.ReadyReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.ObservedGeneration != 2 {
		t.Errorf("status = %+v, want the running Deployment's 2 ready replicas at generation 2", d.Status)
	}
	reconciletest.ExpectCondition(t, d, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, d, conditions.Ready, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	reconciletest.ExpectCondition(t, d, conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec)

	editSpec(t, h, func(s *appv1.DeployObjectSpec) { s.Image = otherImage; s.Replicas = ptr.To[int32](2) })
	h.MustReconcile(t)
	h.ExpectEvents(t)
	if img := reconciletest.Get(t, h, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Image; img != otherImage {
		t.Errorf("Deployment image = %s, want %s", img, otherImage)
	}
	reconciletest.ExpectCondition(t, reconciletest.Get(t, h, &appv1.DeployObject{}), conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected)
}

func TestReconcileApplyFailure(t *testing.T) {
	applyErr := apierrors.NewForbidden(appsv1.Resource("deployments"), "shop", errors.New("exceeded quota: count/deployments.apps"))
	h := newHarness(t, &interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if _, ok := obj.(*appsv1ac.DeploymentApplyConfiguration); ok {
				return applyErr
			}
			return reconciletest.ApplyUnlessDryRun(ctx, c, obj, opts...)
		},
	}, newDeployObject(shopSpec()))

	for i := range 2 {
		if err := h.ReconcileNow(t); !errors.Is(err, applyErr) {
			t.Errorf("Reconcile() #%d = %v, want it to return %v for the work queue", i+1, err, applyErr)
		}
	}
	h.ExpectEvents(t, "Warning ApplyFailed applying the Deployment: "+applyErr.Error())
	reconciletest.ExpectCondition(t, reconciletest.Get(t, h, &appv1.DeployObject{}), conditions.Stalled, metav1.ConditionTrue, conditions.ReasonApplyFailed)
	if err := h.Client.Get(context.Background(), key, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the Service: %v, want NotFound: nothing is applied after a failure", err)
	}
}

// TestReconcileTriesANewSpecsServiceFirst: a new spec's Service that the API server refuses stops
// the reconcile before the Deployment rolls the new pods out.
func TestReconcileTriesANewSpecsServiceFirst(t *testing.T) {
	refused := apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), "shop", nil)
	var applied []string
	h := newHarness(t, &interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applyOpts := &client.ApplyOptions{}
			applyOpts.ApplyOptions(opts)
			kind := fmt.Sprintf("%T", obj)
			if len(applyOpts.DryRun) > 0 {
				applied = append(applied, "dry run "+kind)
				return refused
			}
			applied = append(applied, kind)
			return reconciletest.ApplyUnlessDryRun(ctx, c, obj, opts...)
		},
	}, newDeployObject(shopSpec()))

	// The retry, at the same generation, which the failure recorded as observed, tries the
	// Service first again.
	for i := range 2 {
		if err := h.ReconcileNow(t); !errors.Is(err, refused) {
			t.Errorf("Reconcile() #%d = %v, want %v", i+1, err, refused)
		}
	}
	dryRun := "dry run *v1.ServiceApplyConfiguration"
	if want := []string{dryRun, dryRun}; !reflect.DeepEqual(applied, want) {
		t.Errorf("applied %q, want only %q", applied, want)
	}
	d := reconciletest.Get(t, h, &appv1.DeployObject{})
	reconciletest.ExpectCondition(t, d, conditions.Stalled, metav1.ConditionTrue, conditions.ReasonApplyFailed)
	if d.Status.ObservedGeneration != d.Generation {
		t.Errorf("status.observedGeneration = %d, want %d: Stalled describes the current generation", d.Status.ObservedGeneration, d.Generation)
	}
}

func TestReconcileIgnoresDeletedAndDeleting(t *testing.T) {
	h := newHarness(t, nil)
	h.MustReconcile(t)

	d := newDeployObject(shopSpec())
	d.Finalizers = []string{"example.com/backup"}
	d.DeletionTimestamp = ptr.To(metav1.Now())
	h = newHarness(t, nil, d)
	h.MustReconcile(t)
	h.ExpectEvents(t)
	if err := h.Client.Get(context.Background(), key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the Deployment: %v, want NotFound: nothing is applied for an object being deleted", err)
	}
}

// TestReconcileAppliesARepeatedVariable shows that a variable set twice, which admission allows
// with a warning, is applied with its last value: server-side apply refuses a list map with a
// key twice.
func TestReconcileAppliesARepeatedVariable(t *testing.T) {
	spec := shopSpec()
	spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "blue"}, {Name: "LEVEL", Value: "info"}, {Name: "MODE", Value: "green"}}
	h := newHarness(t, nil, newDeployObject(spec))
	h.MustReconcile(t)
	want := []corev1.EnvVar{{Name: "LEVEL", Value: "info"}, {Name: "MODE", Value: "green"}}
	if got := reconciletest.Get(t, h, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %+v, want %+v", got, want)
	}
}

// TestReconcileTwiceWritesNothing: a reconcile that finds everything as the last one left it, as a
// resync or the watch event of the operator's own apply does, makes no write at all.
func TestReconcileTwiceWritesNothing(t *testing.T) {
	var writes []string
	count := func(what string) { writes = append(writes, what) }
	funcs := &interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count(fmt.Sprintf("apply %T", obj))
			return reconciletest.ApplyUnlessDryRun(ctx, c, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count(fmt.Sprintf("patch %T", obj))
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			count(fmt.Sprintf("patch %T/%s", obj, sub))
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
	h := newHarness(t, funcs, newDeployObject(shopSpec()))
	h.MustReconcile(t)
	if len(writes) == 0 {
		t.Fatal("the first reconcile wrote nothing")
	}
	writes = nil
	h.MustReconcile(t)
	if len(writes) > 0 {
		t.Errorf("a reconcile with nothing to change wrote %q", writes)
	}

	// A field it sets, changed by hand, is put back with one apply.
	dep := &appsv1.Deployment{}
	if err := h.Client.Get(context.Background(), key, dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To[int32](5)
	if err := h.Client.Update(context.Background(), dep); err != nil {
		t.Fatal(err)
	}
	writes = nil
	h.MustReconcile(t)
	if want := []string{"apply *v1.DeploymentApplyConfiguration"}; !reflect.DeepEqual(writes, want) {
		t.Errorf("after a hand edit: writes %q, want %q", writes, want)
	}
	if err := h.Client.Get(context.Background(), key, dep); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas after the reconcile = %v (%v), want 2 put back", dep.Spec.Replicas, err)
	}
}
