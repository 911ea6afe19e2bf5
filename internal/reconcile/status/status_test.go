package status

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

const (
	messageNotRolledOut = "the spec is not rolled out until it is fixed"
	messageNoConflict   = "nothing is applied until the name conflict is resolved"
	messageRetried      = "the apply is retried with backoff"
)

// notAppliedConditions are the conditions of generation gen not applied for reason: Stalled with the
// message, Ready and Reconciling False saying what would unblock it.
func notAppliedConditions(gen int64, reason, message, unblock string) []metav1.Condition {
	return []metav1.Condition{
		cond(conditions.Ready, metav1.ConditionFalse, reason, unblock, gen),
		cond(conditions.Reconciling, metav1.ConditionFalse, reason, unblock, gen),
		cond(conditions.Stalled, metav1.ConditionTrue, reason, message, gen),
	}
}

// recorded drains the events recorded so far, as "type reason note".
func recorded(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func expectEvents(t *testing.T, rec *events.FakeRecorder, want ...string) {
	t.Helper()
	if got := recorded(rec); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestInvalidSpec(t *testing.T) {
	const gen = 4
	imageErr := field.Invalid(field.NewPath("spec", "image"), "shop", "has no tag or digest")
	replicasErr := field.Invalid(field.NewPath("spec", "replicas"), -1, "must be 0 or more")
	imageMsg := `spec.image: Invalid value: "shop": has no tag or digest`
	bothMsg := "[" + imageMsg + ", spec.replicas: Invalid value: -1: must be 0 or more]"
	invalid := func(message string) []metav1.Condition {
		return notAppliedConditions(gen, conditions.ReasonInvalidSpec, message, messageNotRolledOut)
	}

	tests := []struct {
		name  string
		prior []metav1.Condition
		errs  field.ErrorList
		want  []metav1.Condition
		event string
	}{
		{name: "first time", errs: field.ErrorList{imageErr}, want: invalid(imageMsg),
			event: "Warning InvalidSpec spec is not rolled out: " + imageMsg},
		{name: "same violations again: no Event", prior: invalid(imageMsg), errs: field.ErrorList{imageErr}, want: invalid(imageMsg)},
		{name: "other violations", prior: invalid(imageMsg), errs: field.ErrorList{imageErr, replicasErr}, want: invalid(bothMsg),
			event: "Warning InvalidSpec spec is not rolled out: " + bothMsg},
		{
			name: "an earlier rollout's Ready is replaced: the current spec is not rolled out",
			prior: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "2 of 2 replicas available", 1),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", 1),
				cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", 1),
			},
			errs:  field.ErrorList{imageErr},
			want:  invalid(imageMsg),
			event: "Warning InvalidSpec spec is not rolled out: " + imageMsg,
		},
		{
			name:  "after an apply failure",
			prior: notAppliedConditions(gen, conditions.ReasonApplyFailed, imageMsg, messageRetried),
			errs:  field.ErrorList{imageErr},
			want:  invalid(imageMsg),
			event: "Warning InvalidSpec spec is not rolled out: " + imageMsg,
		},
		{
			name: "the conditions an earlier commit reported are removed",
			prior: []metav1.Condition{
				cond("Available", metav1.ConditionTrue, conditions.ReasonRolledOut, "2 of 2 replicas available", 1),
				cond("Degraded", metav1.ConditionFalse, conditions.ReasonAsExpected, "", 1),
			},
			errs:  field.ErrorList{imageErr},
			want:  invalid(imageMsg),
			event: "Warning InvalidSpec spec is not rolled out: " + imageMsg,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			rec := events.NewFakeRecorder(10)
			InvalidSpec(rec, d, tt.errs)
			assertConditions(t, d.Status.Conditions, tt.want)
			if d.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", d.Status.ObservedGeneration, gen)
			}
			if Applied(d) {
				t.Errorf("Applied() = true for a spec held back, want false")
			}
			var want []string
			if tt.event != "" {
				want = []string{tt.event}
			}
			expectEvents(t, rec, want...)
		})
	}
}

func TestInvalidSpecFitsTheLimits(t *testing.T) {
	var errs field.ErrorList
	for range 400 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "env").Index(len(errs)).Child("name"), strings.Repeat("n", 300), "must be a C identifier"))
	}
	d := deployObjectAt(2)
	rec := events.NewFakeRecorder(10)
	InvalidSpec(rec, d, errs)
	for _, c := range d.Status.Conditions {
		if len(c.Message) > 32768 {
			t.Errorf("condition %s message is %d bytes, over the API's 32768", c.Type, len(c.Message))
		}
	}
	for _, e := range recorded(rec) {
		if note := strings.TrimPrefix(e, "Warning InvalidSpec "); len(note) > 1024 {
			t.Errorf("Event note is %d bytes, over the API's 1024", len(note))
		}
	}
}

func TestNameConflict(t *testing.T) {
	const (
		gen      = 2
		conflict = "Service shop already exists and is not this DeployObject's: it has no controller"
	)
	want := notAppliedConditions(gen, conditions.ReasonNameConflict, conflict, messageNoConflict)
	d := deployObjectAt(gen)
	rec := events.NewFakeRecorder(10)
	NameConflict(rec, d, conflict)
	assertConditions(t, d.Status.Conditions, want)
	expectEvents(t, rec, "Warning NameConflict "+conflict)
	if d.Status.ObservedGeneration != gen {
		t.Errorf("status.observedGeneration = %d, want %d", d.Status.ObservedGeneration, gen)
	}

	NameConflict(rec, d, conflict)
	assertConditions(t, d.Status.Conditions, want)
	expectEvents(t, rec)
	if Applied(d) {
		t.Errorf("Applied() = true for a spec held back, want false")
	}
}

func TestApplyFailed(t *testing.T) {
	const gen = 3
	err := errors.New(`applying the Service: services "shop" is forbidden: exceeded quota: services`)
	failed := notAppliedConditions(gen, conditions.ReasonApplyFailed, err.Error(), messageRetried)

	tests := []struct {
		name  string
		prior []metav1.Condition
		want  []metav1.Condition
		news  bool
	}{
		{
			name: "a failure after a rollout replaces its conditions",
			prior: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "1 of 1 replicas available", 2),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 1 replicas", 2),
				cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", 2),
			},
			want: failed,
			news: true,
		},
		{
			name: "a failure while rolling out: Reconciling turns False, never True beside Stalled",
			prior: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable, "0 of 1 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 1 replicas: 1 running, 1 updated, 0 available", gen),
				cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", gen),
			},
			want: failed,
			news: true,
		},
		{name: "no conditions yet", want: failed, news: true},
		{name: "same failure again: no Event", prior: failed, want: failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			rec := events.NewFakeRecorder(10)
			if got := ApplyFailed(rec, d, err); !errors.Is(got, err) {
				t.Errorf("ApplyFailed() = %v, want the apply's error for the work queue", got)
			}
			assertConditions(t, d.Status.Conditions, tt.want)
			assertAtMostOneTrue(t, d.Status.Conditions)
			assertReadySaysWhyStalled(t, d.Status.Conditions)
			if d.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d: the generation is observed, and Stalled describes it", d.Status.ObservedGeneration, gen)
			}
			if Applied(d) {
				t.Errorf("Applied() = true after a failed apply, want false: the next try starts over")
			}
			var want []string
			if tt.news {
				want = []string{"Warning ApplyFailed " + err.Error()}
			}
			expectEvents(t, rec, want...)
		})
	}
}

// TestSetKeepsTheConditionsWithinTheSchema drops conditions other writers set, the last first,
// where the operator's would not fit beside them in what the CRD's schema allows.
func TestSetKeepsTheConditionsWithinTheSchema(t *testing.T) {
	const gen = 2
	var prior []metav1.Condition
	for i := range conditions.MaxItems - 1 {
		prior = append(prior, cond(fmt.Sprintf("example.com/Other%d", i), metav1.ConditionTrue, "Set", "by another writer", gen))
	}
	prior = append(prior[:1], append([]metav1.Condition{cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "", gen)}, prior[1:]...)...)
	obj := deployObjectAt(gen, prior...)
	Set(obj, conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "")
	Set(obj, conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "")
	got := obj.GetConditions()
	if len(got) != conditions.MaxItems {
		t.Fatalf("%d conditions, want the schema's %d", len(got), conditions.MaxItems)
	}
	for _, conditionType := range []string{conditions.Ready, conditions.Reconciling, conditions.Stalled} {
		if !slices.ContainsFunc(got, func(c metav1.Condition) bool { return c.Type == conditionType }) {
			t.Errorf("the operator's %s condition is missing", conditionType)
		}
	}
	for i := range conditions.MaxItems - 3 {
		if !slices.ContainsFunc(got, func(c metav1.Condition) bool { return c.Type == fmt.Sprintf("example.com/Other%d", i) }) {
			t.Errorf("example.com/Other%d was dropped, want only the last others dropped", i)
		}
	}
}

func TestApplied(t *testing.T) {
	const gen = 5
	tests := []struct {
		name  string
		prior []metav1.Condition
		want  bool
	}{
		{name: "never reported on"},
		{name: "reported on by an earlier commit", prior: []metav1.Condition{cond("Progressing", metav1.ConditionFalse, conditions.ReasonRolledOut, "", gen)}},
		{name: "rolled out", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "", gen)}, want: true},
		{name: "rolling out", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "", gen)}, want: true},
		{name: "rollout failed", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolloutFailed, "", gen)}, want: true},
		{name: "an earlier generation rolled out", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "", gen-1)}},
		{name: "apply failed", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonApplyFailed, "", gen)}},
		{name: "invalid spec", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec, "", gen)}},
		{name: "name conflict", prior: []metav1.Condition{cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonNameConflict, "", gen)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Applied(deployObjectAt(gen, tt.prior...)); got != tt.want {
				t.Errorf("Applied() = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestPatch(t *testing.T) {
	ctx := context.Background()
	reconcileErr := errors.New("applying the Deployment: boom")
	tests := []struct {
		name string
		// change edits the object as a reconcile would.
		change func(*appv1.DeployObject)
		// patchErr, when set, is what the API server answers the status patch.
		patchErr     error
		reconcileErr error
		wantPatches  int
		wantErr      []error
		wantStored   int32
	}{
		{name: "nothing changed: no request", change: func(*appv1.DeployObject) {}},
		{name: "nothing changed, the reconcile's error is returned", change: func(*appv1.DeployObject) {},
			reconcileErr: reconcileErr, wantErr: []error{reconcileErr}},
		{name: "a change is patched", change: func(d *appv1.DeployObject) { d.Status.ReadyReplicas = 2 },
			wantPatches: 1, wantStored: 2},
		{name: "a change is patched when the reconcile failed too", change: func(d *appv1.DeployObject) { d.Status.ReadyReplicas = 2 },
			reconcileErr: reconcileErr, wantPatches: 1, wantStored: 2, wantErr: []error{reconcileErr}},
		{name: "an object deleted meanwhile is no error", change: func(d *appv1.DeployObject) { d.Status.ReadyReplicas = 2 },
			patchErr: apierrors.NewNotFound(schema.GroupResource{Group: "app.seedlabs.dev", Resource: "deployobjects"}, "shop"), wantPatches: 1},
		{name: "a failed patch is an error of a reconcile that succeeded", change: func(d *appv1.DeployObject) { d.Status.ReadyReplicas = 2 },
			patchErr: errTimeout, wantPatches: 1, wantErr: []error{errTimeout}},
		{name: "a failed patch joins the reconcile's error", change: func(d *appv1.DeployObject) { d.Status.ReadyReplicas = 2 },
			patchErr: errTimeout, reconcileErr: reconcileErr, wantPatches: 1, wantErr: []error{reconcileErr, errTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patches := 0
			c := reconciletest.NewClient(t, &interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					patches++
					if tt.patchErr != nil {
						return tt.patchErr
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			}, deployObjectAt(1))
			d := &appv1.DeployObject{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "shop"}, d); err != nil {
				t.Fatal(err)
			}
			p := NewPatch(c, d)
			tt.change(d)
			err := p.Apply(ctx, d, tt.reconcileErr)

			if patches != tt.wantPatches {
				t.Errorf("status patches = %d, want %d", patches, tt.wantPatches)
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Errorf("Apply() = %v, want nil", err)
			}
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("Apply() = %v, want it to hold %v", err, want)
				}
			}
			if tt.patchErr != nil && tt.reconcileErr != nil && !strings.Contains(err.Error(), "updating the status of DeployObject demo/shop") {
				t.Errorf("Apply() = %q, want it to name the object whose status failed", err)
			}
			stored := &appv1.DeployObject{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "shop"}, stored); err != nil {
				t.Fatal(err)
			}
			if stored.Status.ReadyReplicas != tt.wantStored {
				t.Errorf("stored status.readyReplicas = %d, want %d", stored.Status.ReadyReplicas, tt.wantStored)
			}
		})
	}
}

var errTimeout = apierrors.NewTimeoutError("request did not complete", 1)
