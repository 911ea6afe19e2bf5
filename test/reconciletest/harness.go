// Package reconciletest runs a controller's Reconcile against controller-runtime's fake client:
// server-side apply with real field management, but no API server, no admission, no defaulting,
// no garbage collector and no Deployment controller. The controllers' unit tests pin with it what
// a reconcile applies, writes and records; the envtest suite checks the same against a real API
// server.
package reconciletest

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// Harness is one reconciler, the fake client it reads and writes, and the Events it records.
type Harness struct {
	Client     client.Client
	Events     *events.FakeRecorder
	Reconciler reconcile.Reconciler
	// Key is the object every Reconcile is asked for.
	Key types.NamespacedName
}

// New stores objs in a fake client with the operator's scheme and the status subresource of its
// kinds, and builds the reconciler under test with that client (as its cache and its API reader)
// and a recorder. funcs, when set, intercept the client's calls; an apply is intercepted anyway
// so that a dry run persists nothing, as with the API server.
func New(t *testing.T, key types.NamespacedName, reconciler func(c client.Client, events *events.FakeRecorder) reconcile.Reconciler,
	funcs *interceptor.Funcs, objs ...client.Object,
) *Harness {
	t.Helper()
	c := NewClient(t, funcs, objs...)
	rec := events.NewFakeRecorder(50)
	return &Harness{Client: c, Events: rec, Reconciler: reconciler(c, rec), Key: key}
}

// NewClient is the fake client of New, for the tests of a helper that reads or writes objects
// without reconciling.
func NewClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	if funcs == nil {
		funcs = &interceptor.Funcs{}
	}
	if funcs.Apply == nil {
		funcs.Apply = ApplyUnlessDryRun
	}
	return fake.NewClientBuilder().
		WithScheme(scheme.New()).
		WithObjects(objs...).
		WithStatusSubresource(&authv1.Welcome{}, &cachev1.Memcached{}, &appv1.DeployObject{}, &policyv1.AdmissionPolicy{}).
		WithInterceptorFuncs(*funcs).
		// The controllers read what the operator's field manager holds of an object from its
		// managedFields (apply.Held), as the manager's cache keeps it.
		WithReturnManagedFields().
		Build()
}

// ApplyUnlessDryRun applies as the API server does: the fake client would persist a dry run.
func ApplyUnlessDryRun(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	applyOpts := &client.ApplyOptions{}
	applyOpts.ApplyOptions(opts)
	if len(applyOpts.DryRun) > 0 {
		return nil
	}
	return c.Apply(ctx, obj, opts...)
}

// Reconcile reconciles Key once and returns its result.
func (h *Harness) Reconcile(t *testing.T) (ctrl.Result, error) {
	t.Helper()
	return h.Reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.Key})
}

// ReconcileNow reconciles Key once, failing t when the reconcile asks for a timed requeue:
// nothing but a name conflict needs one.
func (h *Harness) ReconcileNow(t *testing.T) error {
	t.Helper()
	res, err := h.Reconcile(t)
	if res != (ctrl.Result{}) {
		t.Errorf("Reconcile() result = %+v, want none: nothing here needs a timed requeue", res)
	}
	return err
}

// MustReconcile reconciles Key once and fails t unless it succeeds without a timed requeue.
func (h *Harness) MustReconcile(t *testing.T) {
	t.Helper()
	if err := h.ReconcileNow(t); err != nil {
		t.Fatalf("Reconcile() = %v", err)
	}
}

// Recorded drains the Events recorded so far, as "type reason note".
func (h *Harness) Recorded() []string {
	var out []string
	for {
		select {
		case e := <-h.Events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// ExpectEvents fails t unless the Events recorded since the last look are want, in order.
func (h *Harness) ExpectEvents(t *testing.T, want ...string) {
	t.Helper()
	if got := h.Recorded(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// Get reads the object named Key into obj, failing t when it cannot, and returns obj.
func Get[T client.Object](t *testing.T, h *Harness, obj T) T {
	t.Helper()
	if err := h.Client.Get(context.Background(), h.Key, obj); err != nil {
		t.Fatalf("getting the %T %s: %v", obj, h.Key, err)
	}
	return obj
}

// Object is a custom resource with status conditions.
type Object interface {
	GetGeneration() int64
	GetConditions() []metav1.Condition
}

// ExpectCondition fails t unless obj has the condition with status and reason, set for obj's
// generation.
func ExpectCondition(t *testing.T, obj Object, conditionType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(obj.GetConditions(), conditionType)
	if c == nil {
		t.Errorf("condition %s is missing: %+v", conditionType, obj.GetConditions())
		return
	}
	if c.Status != status || c.Reason != reason || c.ObservedGeneration != obj.GetGeneration() {
		t.Errorf("condition %s = %s/%s at generation %d, want %s/%s at %d",
			conditionType, c.Status, c.Reason, c.ObservedGeneration, status, reason, obj.GetGeneration())
	}
}
