package status

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/conditiontest"
)

// The tables use a DeployObject; every kind reports through the same functions.

// Short names for the shared condition helpers keep the tables readable.
var (
	longAgo          = conditiontest.LongAgo
	cond             = conditiontest.Condition
	assertConditions = conditiontest.Assert
)

// Times the Deployment controller stamped on its conditions.
var (
	updatedAt    = metav1.NewTime(time.Date(2026, time.March, 4, 10, 11, 12, 0, time.UTC))
	transitionAt = metav1.NewTime(time.Date(2026, time.March, 4, 10, 0, 0, 0, time.UTC))
)

func deployObjectAt(generation int64, conds ...metav1.Condition) *appv1.DeployObject {
	return &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Generation: generation},
		Status: appv1.DeployObjectStatus{
			ObservedGeneration: 1,
			Conditions:         slices.Clone(conds),
		},
	}
}

func appliedCondition(conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) *appsv1ac.DeploymentConditionApplyConfiguration {
	return appsv1ac.DeploymentCondition().
		WithType(conditionType).
		WithStatus(status).
		WithLastUpdateTime(updatedAt).
		WithLastTransitionTime(transitionAt).
		WithReason(reason).
		WithMessage(message)
}

func deploymentCondition(conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               conditionType,
		Status:             status,
		LastUpdateTime:     updatedAt,
		LastTransitionTime: transitionAt,
		Reason:             reason,
		Message:            message,
	}
}

const (
	deadlineMessage   = `ReplicaSet "shop-6b7d9c8f5" has timed out progressing.`
	quotaMessage      = `pods "shop-6b7d9c8f5-" is forbidden: exceeded quota: compute, requested: memory=128Mi, used: memory=1Gi, limited: memory=1Gi`
	progressedMessage = `ReplicaSet "shop-6b7d9c8f5" has successfully progressed.`
	pullFailure       = `pod shop-6b7d9c8f5-x2x7q, container shop: ImagePullBackOff: Back-off pulling image "registry.example.test/team/shop:2.4.1": ErrImagePull: no basic auth credentials`
)

func TestRolloutOf(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1ac.DeploymentApplyConfiguration
		want Rollout
	}{
		{
			name: "no spec, no status: one replica, as the API server defaults it",
			dep:  appsv1ac.Deployment("shop", "demo"),
			want: Rollout{Desired: 1},
		},
		{
			name: "applied, not yet seen by the Deployment controller",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(1).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)),
			want: Rollout{Desired: 3, Generation: 1},
		},
		{
			name: "spec.replicas unset means 1, as the API server defaults it",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(2).
				WithSpec(appsv1ac.DeploymentSpec()).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2)),
			want: Rollout{Desired: 1, Generation: 2, Status: appsv1.DeploymentStatus{ObservedGeneration: 2}},
		},
		{
			name: "scaled to zero",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(0)).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(4)),
			want: Rollout{Desired: 0, Generation: 4, Status: appsv1.DeploymentStatus{ObservedGeneration: 4}},
		},
		{
			name: "every count and condition, with its times",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(6).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(5).
					WithReplicas(4).
					WithUpdatedReplicas(1).
					WithReadyReplicas(3).
					WithAvailableReplicas(2).
					WithUnavailableReplicas(1).
					WithTerminatingReplicas(1).
					WithCollisionCount(2).
					WithConditions(
						appliedCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
						appliedCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "shop-6b7d9c8f5" is progressing.`),
					)),
			want: Rollout{Desired: 3, Generation: 6, Status: appsv1.DeploymentStatus{
				ObservedGeneration: 5, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 2, UnavailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{
					deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
					deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "shop-6b7d9c8f5" is progressing.`),
				},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RolloutOf(tt.dep); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RolloutOf() mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
		})
	}
}

func TestRolloutFailure(t *testing.T) {
	withConditions := func(generation, observed int64, conditions ...appsv1.DeploymentCondition) Rollout {
		return Rollout{Desired: 2, Generation: generation, Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Conditions: conditions}}
	}
	tests := []struct {
		name string
		r    Rollout
		want string
	}{
		{name: "no conditions", r: withConditions(3, 3), want: ""},
		{
			name: "progressing well",
			r: withConditions(3, 3,
				deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", progressedMessage)),
			want: "",
		},
		{
			name: "progress deadline exceeded",
			r:    withConditions(3, 3, deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage)),
			want: "ProgressDeadlineExceeded: " + deadlineMessage,
		},
		{
			name: "replica failure",
			r:    withConditions(3, 3, deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage)),
			want: "FailedCreate: " + quotaMessage,
		},
		{
			// A message another admission webhook wrote when it refused the pods can be of any length.
			name: "a message too long for a condition is cut",
			r:    withConditions(3, 3, deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", strings.Repeat("x", 40000))),
			want: "FailedCreate: " + strings.Repeat("x", 32725) + "… and 7275 more bytes",
		},
		{
			name: "a failure of an older Deployment generation does not count",
			r:    withConditions(4, 3, deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage)),
			want: "",
		},
		{
			name: "ReplicaFailure False and Progressing Unknown are no failure",
			r: withConditions(3, 3,
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, "Unknown", "not known"),
				deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionFalse, "FailedCreate", quotaMessage)),
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Failure(); got != tt.want {
				t.Errorf("Failure() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRolloutComplete(t *testing.T) {
	done := Rollout{Desired: 3, Generation: 4, Status: appsv1.DeploymentStatus{
		ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
	}}
	tests := []struct {
		name   string
		mutate func(*Rollout)
		want   bool
	}{
		{name: "every replica updated and available", mutate: func(*Rollout) {}, want: true},
		{name: "not every replica ready", mutate: func(r *Rollout) { r.Status.ReadyReplicas = 2 }, want: false},
		{name: "scaled to zero and no pod left", mutate: func(r *Rollout) { r.Desired = 0; r.Status = appsv1.DeploymentStatus{ObservedGeneration: 4} }, want: true},
		{name: "current generation not observed yet", mutate: func(r *Rollout) { r.Status.ObservedGeneration = 3 }, want: false},
		{name: "not every replica updated", mutate: func(r *Rollout) { r.Status.UpdatedReplicas = 2 }, want: false},
		{name: "an old pod still running", mutate: func(r *Rollout) { r.Status.Replicas = 4; r.Status.AvailableReplicas = 4 }, want: false},
		{name: "too few replicas", mutate: func(r *Rollout) { r.Status.Replicas = 2 }, want: false},
		{name: "not every replica available", mutate: func(r *Rollout) { r.Status.AvailableReplicas = 2 }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := done
			tt.mutate(&r)
			if got := r.Complete(); got != tt.want {
				t.Errorf("%+v.Complete() = %t, want %t", r, got, tt.want)
			}
		})
	}
}

func TestSetRollout(t *testing.T) {
	const gen = 7
	notStalled := cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", gen)
	counts := func(observed int64, replicas, updated, available int32) appsv1.DeploymentStatus {
		return appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available}
	}
	failed := func(st appsv1.DeploymentStatus, c appsv1.DeploymentCondition) appsv1.DeploymentStatus {
		st.Conditions = []appsv1.DeploymentCondition{c}
		return st
	}
	// rolloutFailed are the three conditions of a rollout that failed, each saying message.
	rolloutFailed := func(message string) []metav1.Condition {
		return []metav1.Condition{
			cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutFailed, message, gen),
			cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolloutFailed, message, gen),
			cond(conditions.Stalled, metav1.ConditionTrue, conditions.ReasonRolloutFailed, message, gen),
		}
	}

	// cannotStart are the three conditions of a rollout one of whose pods cannot start, each
	// saying message.
	cannotStart := func(message string) []metav1.Condition {
		return []metav1.Condition{
			cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonContainerCannotStart, message, gen),
			cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonContainerCannotStart, message, gen),
			cond(conditions.Stalled, metav1.ConditionTrue, conditions.ReasonContainerCannotStart, message, gen),
		}
	}

	tests := []struct {
		name  string
		prior []metav1.Condition
		r     Rollout
		want  []metav1.Condition
	}{
		{
			name: "rolled out",
			r:    Rollout{Desired: 3, Generation: 2, Status: counts(2, 3, 3, 3)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "3 of 3 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 3 replicas", gen),
				notStalled,
			},
		},
		{
			name: "just applied, no status yet",
			r:    Rollout{Desired: 2, Generation: 1},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable, "0 of 2 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 0 running, 0 updated, 0 available", gen),
				notStalled,
			},
		},
		{
			name: "pods starting",
			r:    Rollout{Desired: 3, Generation: 2, Status: counts(2, 3, 3, 1)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 3 replicas: 3 running, 3 updated, 1 available", gen),
				notStalled,
			},
		},
		{
			name: "every pod available but one not ready: not done",
			r: Rollout{Desired: 2, Generation: 2, Status: appsv1.DeploymentStatus{
				ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 2,
			}},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "2 replicas available, 2 requested", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 2 running, 2 updated, 2 available", gen),
				notStalled,
			},
		},
		{
			name: "new image rolling out with a surge: the old pods serve, but the spec is not rolled out",
			r:    Rollout{Desired: 2, Generation: 3, Status: counts(3, 3, 1, 2)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "2 replicas available, 2 requested", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 3 running, 1 updated, 2 available", gen),
				notStalled,
			},
		},
		{
			name: "more replicas than requested: scaled up by hand, being put back",
			r:    Rollout{Desired: 2, Generation: 3, Status: counts(3, 5, 5, 5)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "5 replicas available, 2 requested", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 5 running, 5 updated, 5 available", gen),
				notStalled,
			},
		},
		{
			name: "new spec not yet observed by the Deployment controller",
			r:    Rollout{Desired: 2, Generation: 4, Status: counts(3, 2, 2, 2)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "2 replicas available, 2 requested", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 2 replicas: 2 running, 2 updated, 2 available", gen),
				notStalled,
			},
		},
		{
			name: "scaled to zero, the last pod terminating",
			r:    Rollout{Desired: 0, Generation: 5, Status: counts(5, 1, 1, 1)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReconciling, "1 replica available, 0 requested", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 0 replicas: 1 running, 1 updated, 1 available", gen),
				notStalled,
			},
		},
		{
			name: "scaled to zero",
			r:    Rollout{Desired: 0, Generation: 5, Status: counts(5, 0, 0, 0)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonScaledToZero, "no replica is requested", gen),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 0 replicas", gen),
				notStalled,
			},
		},
		{
			name: "progress deadline exceeded",
			r: Rollout{Desired: 3, Generation: 2, Status: failed(counts(2, 3, 3, 1),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage))},
			want: rolloutFailed("ProgressDeadlineExceeded: " + deadlineMessage),
		},
		{
			name: "replica failure",
			r: Rollout{Desired: 2, Generation: 2, Status: failed(counts(2, 0, 0, 0),
				deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage))},
			want: rolloutFailed("FailedCreate: " + quotaMessage),
		},
		{
			name: "a failure the Deployment still reports once every replica is available is not Ready",
			r: Rollout{Desired: 2, Generation: 2, Status: failed(counts(2, 2, 2, 2),
				deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage))},
			want: rolloutFailed("FailedCreate: " + quotaMessage),
		},
		{
			name: "a pod that cannot pull its image, within the progress deadline",
			r:    Rollout{Desired: 2, Generation: 2, Status: counts(2, 2, 2, 1), PodFailure: pullFailure},
			want: cannotStart(pullFailure),
		},
		{
			name: "a pod that cannot pull its image, past the progress deadline: the pod says why",
			r: Rollout{Desired: 2, Generation: 2, PodFailure: pullFailure, Status: failed(counts(2, 2, 2, 1),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage))},
			want: cannotStart(pullFailure),
		},
		{
			name:  "the pod pulls its image: Stalled clears",
			prior: cannotStart(pullFailure),
			r:     Rollout{Desired: 2, Generation: 2, Status: counts(2, 2, 2, 2)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "2 of 2 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", gen),
				notStalled,
			},
		},
		{
			name: "the deadline of the old image is not held against the fixed one",
			r: Rollout{Desired: 3, Generation: 3, Status: failed(counts(2, 3, 3, 1),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage))},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, "rolling out 3 replicas: 3 running, 3 updated, 1 available", gen),
				notStalled,
			},
		},
		{
			name: "recovery replaces the conditions of an older generation, InvalidSpec included",
			prior: []metav1.Condition{
				cond(conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec, "spec.image: Required value", 6),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec, messageNotRolledOut, 6),
				cond(conditions.Ready, metav1.ConditionFalse, conditions.ReasonInvalidSpec, messageNotRolledOut, 6),
			},
			r: Rollout{Desired: 1, Generation: 1, Status: counts(1, 1, 1, 1)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "1 of 1 replica available", gen),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 1 replica", gen),
				notStalled,
			},
		},
		{
			name: "the conditions an earlier commit reported are removed; Compliant stays",
			prior: []metav1.Condition{
				cond("Available", metav1.ConditionTrue, conditions.ReasonRolledOut, "1 of 1 replicas available", 6),
				cond("Progressing", metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 1 replicas", 6),
				cond("Degraded", metav1.ConditionFalse, conditions.ReasonAsExpected, "", 6),
				cond(conditions.Compliant, metav1.ConditionTrue, conditions.ReasonAsExpected, "", 6),
			},
			r: Rollout{Desired: 1, Generation: 1, Status: counts(1, 1, 1, 1)},
			want: []metav1.Condition{
				cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "1 of 1 replica available", gen),
				cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 1 replica", gen),
				notStalled,
				cond(conditions.Compliant, metav1.ConditionTrue, conditions.ReasonAsExpected, "", 6),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			SetRollout(d, tt.r)
			assertConditions(t, d.Status.Conditions, tt.want)
			if d.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d: the generation is applied", d.Status.ObservedGeneration, gen)
			}
			if !Applied(d) {
				t.Errorf("Applied() = false after SetRollout, want true")
			}
			assertAtMostOneTrue(t, d.Status.Conditions)
			assertReadySaysWhyStalled(t, d.Status.Conditions)
		})
	}
}

// assertReadySaysWhyStalled fails t when Stalled is True and Ready does not carry its reason,
// which kubectl get shows in the Reason column.
func assertReadySaysWhyStalled(t *testing.T, got []metav1.Condition) {
	t.Helper()
	stalled, ready := meta.FindStatusCondition(got, conditions.Stalled), meta.FindStatusCondition(got, conditions.Ready)
	if stalled != nil && stalled.Status == metav1.ConditionTrue && (ready == nil || ready.Reason != stalled.Reason) {
		t.Errorf("Stalled is True with reason %s, Ready is %+v: want Ready False with the same reason", stalled.Reason, ready)
	}
}

// assertAtMostOneTrue fails t when more than one of Ready, Reconciling and Stalled is True:
// kstatus reads the first of Reconciling and Stalled it finds True, so both True would leave
// the verdict to the order of the list.
func assertAtMostOneTrue(t *testing.T, got []metav1.Condition) {
	t.Helper()
	var trueOnes []string
	for _, conditionType := range []string{conditions.Ready, conditions.Reconciling, conditions.Stalled} {
		if meta.IsStatusConditionTrue(got, conditionType) {
			trueOnes = append(trueOnes, conditionType)
		}
	}
	if len(trueOnes) > 1 {
		t.Errorf("%v are all True, want at most one of Ready, Reconciling and Stalled", trueOnes)
	}
}

// TestSetRolloutKeepsTransitionTimes checks that a condition whose status does not
// change keeps its lastTransitionTime, and one whose status changes gets a new one.
func TestSetRolloutKeepsTransitionTimes(t *testing.T) {
	const gen = 4
	d := deployObjectAt(gen,
		cond(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, "2 of 2 replicas available", 3),
		cond(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", 3),
		cond(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, "", 3),
	)
	SetRollout(d, Rollout{Desired: 2, Generation: 5, Status: appsv1.DeploymentStatus{
		ObservedGeneration: 5, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
	}})
	for conditionType, kept := range map[string]bool{conditions.Ready: false, conditions.Reconciling: false, conditions.Stalled: true} {
		c := meta.FindStatusCondition(d.Status.Conditions, conditionType)
		if got := c.LastTransitionTime.Equal(&longAgo); got != kept {
			t.Errorf("%s kept lastTransitionTime: %t, want %t (%+v)", conditionType, got, kept, c)
		}
	}
}

// TestRolloutOfApplyResponse reads a rollout the way the reconcilers do: the controller-runtime
// client unmarshals the API server's reply to the apply into the applied configuration.
func TestRolloutOfApplyResponse(t *testing.T) {
	applied := appsv1ac.Deployment("hello", "demo").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
	reply := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: 9, UID: "b7c1"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 8, Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 3, AvailableReplicas: 3,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: quotaMessage,
			}},
		},
	}
	body, err := json.Marshal(reply)
	if err != nil {
		t.Fatalf("marshalling the reply: %v", err)
	}
	if err := json.Unmarshal(body, applied); err != nil {
		t.Fatalf("unmarshalling the reply into the apply configuration: %v", err)
	}

	want := Rollout{Desired: 3, Generation: 9, Status: reply.Status}
	if got := RolloutOf(applied); !reflect.DeepEqual(got, want) {
		t.Errorf("RolloutOf() mismatch (-want +got):\n%s", diff.Diff(want, got))
	}
	// The Deployment has not observed generation 9 yet, so the failure it reports belongs to an
	// older template and is not carried over.
	if f := RolloutOf(applied).Failure(); f != "" {
		t.Errorf("Failure() = %q, want none", f)
	}
}
