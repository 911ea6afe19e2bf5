package deployobject

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/seedlabs/webhook-operator/test/conditiontest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

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

func deployObjectAt(generation int64, conditions ...metav1.Condition) *appv1.DeployObject {
	return &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Generation: generation},
		Status: appv1.DeployObjectStatus{
			ObservedGeneration: 1,
			Conditions:         slices.Clone(conditions),
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
)

func TestRolloutOf(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1ac.DeploymentApplyConfiguration
		want rollout
	}{
		{
			name: "applied, not yet seen by the Deployment controller",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(1).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)),
			want: rollout{desired: 3, generation: 1},
		},
		{
			name: "spec.replicas unset means 1, as the API server defaults it",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(2).
				WithSpec(appsv1ac.DeploymentSpec()).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2)),
			want: rollout{desired: 1, generation: 2, status: appsv1.DeploymentStatus{ObservedGeneration: 2}},
		},
		{
			name: "scaled to zero",
			dep: appsv1ac.Deployment("shop", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(0)).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(4)),
			want: rollout{desired: 0, generation: 4, status: appsv1.DeploymentStatus{ObservedGeneration: 4}},
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
			want: rollout{desired: 3, generation: 6, status: appsv1.DeploymentStatus{
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
			if got := rolloutOf(tt.dep); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rolloutOf() mismatch (-want +got):\n%s", diff.Diff(tt.want, got))
			}
		})
	}
}

func TestRolloutFailure(t *testing.T) {
	withConditions := func(generation, observed int64, conditions ...appsv1.DeploymentCondition) rollout {
		return rollout{desired: 2, generation: generation, status: appsv1.DeploymentStatus{ObservedGeneration: observed, Conditions: conditions}}
	}
	tests := []struct {
		name string
		r    rollout
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
			if got := tt.r.failure(); got != tt.want {
				t.Errorf("failure() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRolloutComplete(t *testing.T) {
	done := rollout{desired: 3, generation: 4, status: appsv1.DeploymentStatus{
		ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
	}}
	tests := []struct {
		name   string
		mutate func(*rollout)
		want   bool
	}{
		{name: "every replica updated and available", mutate: func(*rollout) {}, want: true},
		{name: "ready lagging does not matter once available", mutate: func(r *rollout) { r.status.ReadyReplicas = 2 }, want: true},
		{name: "scaled to zero and no pod left", mutate: func(r *rollout) { r.desired = 0; r.status = appsv1.DeploymentStatus{ObservedGeneration: 4} }, want: true},
		{name: "current generation not observed yet", mutate: func(r *rollout) { r.status.ObservedGeneration = 3 }, want: false},
		{name: "not every replica updated", mutate: func(r *rollout) { r.status.UpdatedReplicas = 2 }, want: false},
		{name: "an old pod still running", mutate: func(r *rollout) { r.status.Replicas = 4; r.status.AvailableReplicas = 4 }, want: false},
		{name: "too few replicas", mutate: func(r *rollout) { r.status.Replicas = 2 }, want: false},
		{name: "not every replica available", mutate: func(r *rollout) { r.status.AvailableReplicas = 2 }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := done
			tt.mutate(&r)
			if got := r.complete(); got != tt.want {
				t.Errorf("%+v.complete() = %t, want %t", r, got, tt.want)
			}
		})
	}
}

func TestSetRolloutStatusMirrorsTheDeployment(t *testing.T) {
	const gen = 9
	conditions := []appsv1.DeploymentCondition{
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "shop-6b7d9c8f5" is progressing.`),
	}
	tests := []struct {
		name   string
		prior  appv1.DeployObjectStatus
		r      rollout
		want   appv1.DeployObjectStatus
		reason string
	}{
		{
			name: "counts and conditions of a rollout under way",
			r: rollout{desired: 3, generation: 2, status: appsv1.DeploymentStatus{
				// The Deployment's generations are its own: status.observedGeneration is ours.
				ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 2,
				TerminatingReplicas: ptr.To[int32](1), Conditions: conditions,
			}},
			want: appv1.DeployObjectStatus{
				ObservedGeneration: gen, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 2,
				DeploymentConditions: conditions,
			},
		},
		{
			name: "scaled to zero clears the counts and conditions of before",
			prior: appv1.DeployObjectStatus{
				ObservedGeneration: 8, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 1,
				DeploymentConditions: conditions,
			},
			r:    rollout{desired: 0, generation: 3, status: appsv1.DeploymentStatus{ObservedGeneration: 3}},
			want: appv1.DeployObjectStatus{ObservedGeneration: gen},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen)
			d.Status = tt.prior
			setRolloutStatus(d, tt.r)
			got := d.Status
			got.Conditions = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("status mismatch, conditions aside (-want +got):\n%s", diff.Diff(tt.want, got))
			}
			if len(d.Status.Conditions) != 3 {
				t.Errorf("conditions = %+v, want Available, Progressing and Degraded", d.Status.Conditions)
			}
		})
	}
}

func TestSetRolloutConditions(t *testing.T) {
	const gen = 7
	asExpected := cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "", gen)
	counts := func(observed int64, replicas, updated, available int32) appsv1.DeploymentStatus {
		return appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available}
	}
	failed := func(st appsv1.DeploymentStatus, c appsv1.DeploymentCondition) appsv1.DeploymentStatus {
		st.Conditions = []appsv1.DeploymentCondition{c}
		return st
	}

	tests := []struct {
		name  string
		prior []metav1.Condition
		r     rollout
		want  []metav1.Condition
	}{
		{
			name: "rolled out",
			r:    rollout{desired: 3, generation: 2, status: counts(2, 3, 3, 3)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut, "3 of 3 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 3 replicas", gen),
				asExpected,
			},
		},
		{
			name: "just applied, no status yet",
			r:    rollout{desired: 2, generation: 1},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable, "0 of 2 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 2 replicas: 0 running, 0 updated, 0 available", gen),
				asExpected,
			},
		},
		{
			name: "pods starting",
			r:    rollout{desired: 3, generation: 2, status: counts(2, 3, 3, 1)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 3 replicas: 3 running, 3 updated, 1 available", gen),
				asExpected,
			},
		},
		{
			name: "new image rolling out with a surge: the old pods serve",
			r:    rollout{desired: 2, generation: 3, status: counts(3, 3, 1, 2)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonReconciling, "2 replicas available, 2 requested", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 2 replicas: 3 running, 1 updated, 2 available", gen),
				asExpected,
			},
		},
		{
			name: "new spec not yet observed by the Deployment controller",
			r:    rollout{desired: 2, generation: 4, status: counts(3, 2, 2, 2)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonReconciling, "2 replicas available, 2 requested", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 2 replicas: 2 running, 2 updated, 2 available", gen),
				asExpected,
			},
		},
		{
			name: "scaled to zero, the last pod terminating",
			r:    rollout{desired: 0, generation: 5, status: counts(5, 1, 1, 1)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonScaledToZero, messageScaledToZero, gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 0 replicas: 1 running, 1 updated, 1 available", gen),
				asExpected,
			},
		},
		{
			name: "scaled to zero",
			r:    rollout{desired: 0, generation: 5, status: counts(5, 0, 0, 0)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonScaledToZero, messageScaledToZero, gen),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 0 replicas", gen),
				asExpected,
			},
		},
		{
			name: "progress deadline exceeded",
			r: rollout{desired: 3, generation: 2, status: failed(counts(2, 3, 3, 1),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage))},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
				cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
			},
		},
		{
			name: "replica failure",
			r: rollout{desired: 2, generation: 2, status: failed(counts(2, 0, 0, 0),
				deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage))},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable, "0 of 2 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolloutFailed, "FailedCreate: "+quotaMessage, gen),
				cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonRolloutFailed, "FailedCreate: "+quotaMessage, gen),
			},
		},
		{
			name: "the deadline of the old image is not held against the fixed one",
			r: rollout{desired: 3, generation: 3, status: failed(counts(2, 3, 3, 1),
				deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage))},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionTrue, appv1.ReasonReconciling, "rolling out 3 replicas: 3 running, 3 updated, 1 available", gen),
				asExpected,
			},
		},
		{
			name: "recovery replaces the conditions of an older generation, InvalidSpec included",
			prior: []metav1.Condition{
				cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonInvalidSpec, "spec.image: Required value", 6),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonInvalidSpec, messageNotRolledOut, 6),
				cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonInvalidSpec, messageNothingRolled, 6),
			},
			r: rollout{desired: 1, generation: 1, status: counts(1, 1, 1, 1)},
			want: []metav1.Condition{
				cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut, "1 of 1 replicas available", gen),
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 1 replicas", gen),
				asExpected,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			setRolloutConditions(d, tt.r)
			assertConditions(t, d.Status.Conditions, tt.want)
		})
	}
}

// TestSetRolloutConditionsKeepsTransitionTimes checks that a condition whose status does not
// change keeps its lastTransitionTime, and one whose status changes gets a new one.
func TestSetRolloutConditionsKeepsTransitionTimes(t *testing.T) {
	const gen = 4
	d := deployObjectAt(gen,
		cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut, "2 of 2 replicas available", 3),
		cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", 3),
		cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "", 3),
	)
	setRolloutConditions(d, rollout{desired: 2, generation: 5, status: appsv1.DeploymentStatus{
		ObservedGeneration: 5, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
	}})
	for conditionType, kept := range map[string]bool{appv1.ConditionAvailable: true, appv1.ConditionProgressing: false, appv1.ConditionDegraded: true} {
		c := meta.FindStatusCondition(d.Status.Conditions, conditionType)
		if got := c.LastTransitionTime.Equal(&longAgo); got != kept {
			t.Errorf("%s kept lastTransitionTime: %t, want %t (%+v)", conditionType, got, kept, c)
		}
	}
}

func TestSetInvalidSpec(t *testing.T) {
	const (
		gen      = 4
		imageErr = "spec.image: Invalid value: \"shop\": has no tag or digest"
		bothErr  = "[" + imageErr + ", spec.replicas: Invalid value: -1: must be 0 or more]"
	)
	invalid := func(message string) []metav1.Condition {
		return []metav1.Condition{
			cond(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonInvalidSpec, messageNothingRolled, gen),
			cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonInvalidSpec, messageNotRolledOut, gen),
			cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonInvalidSpec, message, gen),
		}
	}
	servingOld := cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut, "2 of 2 replicas available", 1)

	tests := []struct {
		name    string
		prior   []metav1.Condition
		message string
		want    []metav1.Condition
		news    bool
	}{
		{name: "first time", message: imageErr, want: invalid(imageErr), news: true},
		{name: "same message again", prior: invalid(imageErr), message: imageErr, want: invalid(imageErr), news: false},
		{name: "another message", prior: invalid(imageErr), message: bothErr, want: invalid(bothErr), news: true},
		{
			name: "the Available condition of an earlier rollout is kept: those pods still serve",
			prior: []metav1.Condition{
				servingOld,
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 2 replicas", 1),
				cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "", 1),
			},
			message: imageErr,
			want: []metav1.Condition{
				servingOld,
				cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonInvalidSpec, messageNotRolledOut, gen),
				cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonInvalidSpec, imageErr, gen),
			},
			news: true,
		},
		{
			name:    "after an apply failure",
			prior:   []metav1.Condition{cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonApplyFailed, imageErr, gen)},
			message: imageErr,
			want:    invalid(imageErr),
			news:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			if got := setInvalidSpec(d, tt.message); got != tt.news {
				t.Errorf("setInvalidSpec() = %t, want %t", got, tt.news)
			}
			assertConditions(t, d.Status.Conditions, tt.want)
			if d.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", d.Status.ObservedGeneration, gen)
			}
		})
	}
}

func TestSetApplyFailed(t *testing.T) {
	const (
		gen     = 3
		message = `applying the Service: services "shop" is forbidden: exceeded quota: services`
	)
	available := cond(appv1.ConditionAvailable, metav1.ConditionTrue, appv1.ReasonRolledOut, "1 of 1 replicas available", 2)
	progressing := cond(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonRolledOut, "the Deployment runs the current spec with 1 replicas", 2)
	failed := cond(appv1.ConditionDegraded, metav1.ConditionTrue, appv1.ReasonApplyFailed, message, gen)

	tests := []struct {
		name  string
		prior []metav1.Condition
		want  []metav1.Condition
		news  bool
	}{
		{
			name:  "first failure leaves the other conditions alone",
			prior: []metav1.Condition{available, progressing, cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "", 2)},
			want:  []metav1.Condition{available, progressing, failed},
			news:  true,
		},
		{name: "no conditions yet", want: []metav1.Condition{failed}, news: true},
		{name: "same failure again", prior: []metav1.Condition{available, progressing, failed}, want: []metav1.Condition{available, progressing, failed}, news: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployObjectAt(gen, tt.prior...)
			if got := setApplyFailed(d, message); got != tt.news {
				t.Errorf("setApplyFailed() = %t, want %t", got, tt.news)
			}
			assertConditions(t, d.Status.Conditions, tt.want)
			if d.Status.ObservedGeneration != 1 {
				t.Errorf("status.observedGeneration = %d, want 1 (unchanged)", d.Status.ObservedGeneration)
			}
		})
	}
}
