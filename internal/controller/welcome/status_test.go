package welcome

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/seedlabs/webhook-operator/test/conditiontest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// Short names for the shared condition helpers keep the tables readable.
var (
	longAgo          = conditiontest.LongAgo
	cond             = conditiontest.Condition
	assertConditions = conditiontest.Assert
)

func deploymentCondition(conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) *appsv1ac.DeploymentConditionApplyConfiguration {
	return appsv1ac.DeploymentCondition().
		WithType(conditionType).
		WithStatus(status).
		WithReason(reason).
		WithMessage(message)
}

const (
	deadlineMessage = `ReplicaSet "hello-5d8f9c7b6" has timed out progressing.`
	quotaMessage    = `pods "hello-5d8f9c7b6-" is forbidden: exceeded quota: compute, requested: cpu=10m, used: cpu=1, limited: cpu=1`
)

func TestRolloutOf(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1ac.DeploymentApplyConfiguration
		want rollout
	}{
		{
			name: "applied, not yet seen by the Deployment controller",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(1).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)),
			want: rollout{desired: 3, generation: 1},
		},
		{
			name: "spec.replicas unset means 1, as the API server defaults it",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(2).
				WithSpec(appsv1ac.DeploymentSpec()).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2)),
			want: rollout{desired: 1, generation: 2, observedGeneration: 2},
		},
		{
			name: "rolled out with healthy conditions",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(5).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(5).
					WithReplicas(2).
					WithUpdatedReplicas(2).
					WithReadyReplicas(2).
					WithAvailableReplicas(2).
					WithConditions(
						deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "hello-5d8f9c7b6" has successfully progressed.`),
					)),
			want: rollout{desired: 2, generation: 5, observedGeneration: 5, replicas: 2, updated: 2, ready: 2, available: 2},
		},
		{
			name: "scaled to zero",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(3).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(0)).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(3)),
			want: rollout{desired: 0, generation: 3, observedGeneration: 3},
		},
		{
			name: "surge: old and new replica sets both run pods",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(6).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(6).
					WithReplicas(3).
					WithUpdatedReplicas(1).
					WithReadyReplicas(2).
					WithAvailableReplicas(2).
					WithConditions(
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "hello-5d8f9c7b6" is progressing.`),
					)),
			want: rollout{desired: 2, generation: 6, observedGeneration: 6, replicas: 3, updated: 1, ready: 2, available: 2},
		},
		{
			name: "progress deadline exceeded",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithReplicas(2).
					WithUpdatedReplicas(2).
					WithConditions(
						deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4, replicas: 2, updated: 2,
				failure: "ProgressDeadlineExceeded: " + deadlineMessage},
		},
		{
			name: "replica failure",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithConditions(
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "hello-5d8f9c7b6" is progressing.`),
						deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4,
				failure: "FailedCreate: " + quotaMessage},
		},
		{
			name: "ReplicaFailure False and Progressing Unknown are no failure",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithConditions(
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, "Unknown", "not known"),
						deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionFalse, "FailedCreate", quotaMessage),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4},
		},
		{
			name: "Available False alone is no failure",
			dep: appsv1ac.Deployment("hello", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithConditions(
						deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rolloutOf(tt.dep); got != tt.want {
				t.Errorf("rolloutOf() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRolloutOfApplyResponse reads a rollout the way the reconciler does: the controller-runtime
// client unmarshals the API server's reply to the apply into the applied configuration.
func TestRolloutOfApplyResponse(t *testing.T) {
	desired := &authv1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: 2},
		Spec:       authv1alpha1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](3), Port: ptr.To[int32](8088), ServiceType: corev1.ServiceTypeNodePort},
	}
	applied := resources.WelcomeDeployment(desired, "ghcr.io/seedlabs/welcome-web:v1.0.0")

	reply := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: 9, UID: "b7c1"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 8,
			Replicas:           4,
			UpdatedReplicas:    2,
			ReadyReplicas:      3,
			AvailableReplicas:  3,
			Conditions: []appsv1.DeploymentCondition{{
				Type:    appsv1.DeploymentReplicaFailure,
				Status:  corev1.ConditionTrue,
				Reason:  "FailedCreate",
				Message: quotaMessage,
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

	// The Deployment has not observed generation 9 yet, so the failure it reports belongs to an
	// older template and is not carried over.
	want := rollout{desired: 3, generation: 9, observedGeneration: 8, replicas: 4, updated: 2, ready: 3, available: 3}
	if got := rolloutOf(applied); got != want {
		t.Errorf("rolloutOf() = %+v, want %+v", got, want)
	}
}

func TestRolloutComplete(t *testing.T) {
	done := rollout{desired: 3, generation: 4, observedGeneration: 4, replicas: 3, updated: 3, ready: 3, available: 3}
	tests := []struct {
		name   string
		mutate func(*rollout)
		want   bool
	}{
		{name: "every replica updated and available", mutate: func(*rollout) {}, want: true},
		{name: "observed generation ahead", mutate: func(r *rollout) { r.observedGeneration = 5 }, want: true},
		{name: "ready lagging does not matter once available", mutate: func(r *rollout) { r.ready = 2 }, want: true},
		{name: "current generation not observed yet", mutate: func(r *rollout) { r.observedGeneration = 3 }, want: false},
		{name: "not every replica updated", mutate: func(r *rollout) { r.updated = 2 }, want: false},
		{name: "old replicas left", mutate: func(r *rollout) { r.replicas = 4 }, want: false},
		{name: "too few replicas", mutate: func(r *rollout) { r.replicas = 2 }, want: false},
		{name: "not every replica available", mutate: func(r *rollout) { r.available = 2 }, want: false},
		{name: "more available than desired while scaling down", mutate: func(r *rollout) { r.available = 4 }, want: false},
		{
			name:   "scaled to zero and every pod gone",
			mutate: func(r *rollout) { *r = rollout{generation: 4, observedGeneration: 4} },
			want:   true,
		},
		{
			name:   "scaled to zero with pods left",
			mutate: func(r *rollout) { *r = rollout{generation: 4, observedGeneration: 4, replicas: 1, available: 1} },
			want:   false,
		},
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

func TestNodePortOf(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1ac.ServiceApplyConfiguration
		want int32
	}{
		{name: "no spec", svc: corev1ac.Service("hello", "demo"), want: 0},
		{name: "no ports", svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().WithType(corev1.ServiceTypeNodePort)), want: 0},
		{
			name: "ClusterIP port without node port",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeClusterIP).
				WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8088))),
			want: 0,
		},
		{
			name: "allocated node port",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeNodePort).
				WithPorts(corev1ac.ServicePort().WithName("http").WithPort(8088).WithNodePort(30080))),
			want: 30080,
		},
		{
			name: "only the first port counts",
			svc: corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().
				WithType(corev1.ServiceTypeNodePort).
				WithPorts(
					corev1ac.ServicePort().WithName("http").WithPort(8088).WithNodePort(31000),
					corev1ac.ServicePort().WithName("metrics").WithPort(9090).WithNodePort(32000),
				)),
			want: 31000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodePortOf(tt.svc); got != tt.want {
				t.Errorf("nodePortOf() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSetRolloutConditions(t *testing.T) {
	const gen = 7
	rolledOut := func(m string) metav1.Condition {
		return cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolledOut, m, gen)
	}
	asExpected := cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", gen)
	const runsCurrentSpec = "the Deployment runs the current spec"

	tests := []struct {
		name  string
		prior []metav1.Condition
		r     rollout
		want  []metav1.Condition
	}{
		{
			name: "rolled out",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 3},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "3 of 3 replicas available", gen),
				rolledOut(runsCurrentSpec),
				asExpected,
			},
		},
		{
			name: "scaled to zero",
			r:    rollout{desired: 0, generation: 2, observedGeneration: 2},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonScaledToZero, "spec.replicas is 0: no web server runs", gen),
				rolledOut(runsCurrentSpec),
				asExpected,
			},
		},
		{
			name: "scaling to zero while pods terminate",
			r:    rollout{desired: 0, generation: 3, observedGeneration: 3, replicas: 2, ready: 2, available: 2},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonScaledToZero, "spec.replicas is 0: no web server runs", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 0 of 0 replicas updated, 2 available", gen),
				asExpected,
			},
		},
		{
			name: "pods starting",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 1, available: 1},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 3 of 3 replicas updated, 1 available", gen),
				asExpected,
			},
		},
		{
			name: "just applied, no status yet",
			r:    rollout{desired: 1, generation: 1},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "0 of 1 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 0 of 1 replicas updated, 0 available", gen),
				asExpected,
			},
		},
		{
			name: "ready but not yet available",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 2},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "2 of 3 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 3 of 3 replicas updated, 2 available", gen),
				asExpected,
			},
		},
		{
			name: "available counts, not ready",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 2, available: 3},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "3 of 3 replicas available", gen),
				rolledOut(runsCurrentSpec),
				asExpected,
			},
		},
		{
			name: "new generation not yet observed: old pods serve",
			r:    rollout{desired: 3, generation: 3, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 3},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "3 of 3 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 3 of 3 replicas updated, 3 available", gen),
				asExpected,
			},
		},
		{
			name: "surge: old replica set still has pods",
			r:    rollout{desired: 3, generation: 3, observedGeneration: 3, replicas: 4, updated: 2, ready: 4, available: 4},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "4 of 3 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 2 of 3 replicas updated, 4 available", gen),
				asExpected,
			},
		},
		{
			name: "progress deadline exceeded",
			r: rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 1, available: 1,
				failure: "ProgressDeadlineExceeded: " + deadlineMessage},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "1 of 3 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
			},
		},
		{
			name: "replica failure with every wanted replica available",
			r: rollout{desired: 2, generation: 2, observedGeneration: 2, replicas: 2, updated: 2, ready: 2, available: 2,
				failure: "FailedCreate: " + quotaMessage},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "2 of 2 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolloutFailed, "FailedCreate: "+quotaMessage, gen),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonRolloutFailed, "FailedCreate: "+quotaMessage, gen),
			},
		},
		{
			name: "recovery replaces the conditions of an older generation",
			prior: []metav1.Condition{
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonApplyFailed, "applying the Deployment: connection refused", 6),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 1 of 3 replicas updated, 1 available", 6),
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "1 of 3 replicas available", 6),
			},
			r: rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 3},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "3 of 3 replicas available", gen),
				rolledOut(runsCurrentSpec),
				asExpected,
			},
		},
		{
			name: "a fixed spec clears InvalidSpec",
			prior: []metav1.Condition{
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonInvalidSpec, "spec.port: Invalid value: 0: must be between 1 and 65535", 6),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, "the spec is not rolled out until it is fixed", 6),
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, "nothing was rolled out", 6),
			},
			r: rollout{desired: 1, generation: 1},
			want: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "0 of 1 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 0 of 1 replicas updated, 0 available", gen),
				asExpected,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &authv1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: gen},
				Status:     authv1alpha1.WelcomeStatus{ObservedGeneration: 6, Conditions: slices.Clone(tt.prior)},
			}
			setRolloutConditions(w, tt.r)
			assertConditions(t, w.Status.Conditions, tt.want)
			if w.Status.ObservedGeneration != 6 {
				t.Errorf("status.observedGeneration = %d, want 6 (setRolloutConditions only sets conditions)", w.Status.ObservedGeneration)
			}
		})
	}
}

// TestSetRolloutConditionsTransitionTimes checks that lastTransitionTime moves only when a
// condition's status does.
func TestSetRolloutConditionsTransitionTimes(t *testing.T) {
	w := &authv1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: 3},
		Status: authv1alpha1.WelcomeStatus{Conditions: []metav1.Condition{
			cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "2 of 2 replicas available", 2),
			cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 1 of 3 replicas updated, 2 available", 2),
			cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", 2),
		}},
	}
	setRolloutConditions(w, rollout{desired: 3, generation: 3, observedGeneration: 3, replicas: 3, updated: 3, ready: 3, available: 3})

	for _, tc := range []struct {
		conditionType string
		moved         bool
	}{
		{authv1alpha1.ConditionAvailable, false},
		{authv1alpha1.ConditionProgressing, true},
		{authv1alpha1.ConditionDegraded, false},
	} {
		c := meta.FindStatusCondition(w.Status.Conditions, tc.conditionType)
		if c == nil {
			t.Fatalf("condition %s is missing: %+v", tc.conditionType, w.Status.Conditions)
		}
		if moved := !c.LastTransitionTime.Equal(&longAgo); moved != tc.moved {
			t.Errorf("%s lastTransitionTime = %s, moved %t, want moved %t", tc.conditionType, c.LastTransitionTime, moved, tc.moved)
		}
	}
}

func TestSetRolloutStatus(t *testing.T) {
	const gen = 4
	runningDeployment := func(ready int32) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("hello", "demo").
			WithGeneration(2).
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
			WithStatus(appsv1ac.DeploymentStatus().
				WithObservedGeneration(2).
				WithReplicas(2).
				WithUpdatedReplicas(2).
				WithReadyReplicas(ready).
				WithAvailableReplicas(ready))
	}
	service := func(serviceType corev1.ServiceType, port, nodePort int32) *corev1ac.ServiceApplyConfiguration {
		p := corev1ac.ServicePort().WithName("http").WithPort(port)
		if nodePort != 0 {
			p = p.WithNodePort(nodePort)
		}
		return corev1ac.Service("hello", "demo").WithSpec(corev1ac.ServiceSpec().WithType(serviceType).WithPorts(p))
	}
	rolledOut := []metav1.Condition{
		cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "2 of 2 replicas available", gen),
		cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolledOut, "the Deployment runs the current spec", gen),
		cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", gen),
	}

	tests := []struct {
		name        string
		specPort    *int32
		desiredPort int32
		dep         *appsv1ac.DeploymentApplyConfiguration
		svc         *corev1ac.ServiceApplyConfiguration
		wantReady   int32
		wantURL     string
		wantConds   []metav1.Condition
	}{
		{
			name:        "NodePort: the URL names the node port; the port comes from the defaulted copy",
			specPort:    nil,
			desiredPort: 8088,
			dep:         runningDeployment(2),
			svc:         service(corev1.ServiceTypeNodePort, 8088, 30080),
			wantReady:   2,
			wantURL:     "http://hello.demo.svc:8088/hello/ (node port 30080)",
			wantConds:   rolledOut,
		},
		{
			name:        "ClusterIP on port 9000",
			specPort:    ptr.To[int32](9000),
			desiredPort: 9000,
			dep:         runningDeployment(2),
			svc:         service(corev1.ServiceTypeClusterIP, 9000, 0),
			wantReady:   2,
			wantURL:     "http://hello.demo.svc:9000/hello/",
			wantConds:   rolledOut,
		},
		{
			name:        "ready replicas drop to 0",
			specPort:    ptr.To[int32](9000),
			desiredPort: 9000,
			dep:         runningDeployment(0),
			svc:         service(corev1.ServiceTypeLoadBalancer, 9000, 31555),
			wantReady:   0,
			wantURL:     "http://hello.demo.svc:9000/hello/ (node port 31555)",
			wantConds: []metav1.Condition{
				cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "0 of 2 replicas available", gen),
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionTrue, authv1alpha1.ReasonReconciling, "rolling out: 2 of 2 replicas updated, 0 available", gen),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", gen),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &authv1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: gen},
				Spec:       authv1alpha1.WelcomeSpec{Name: "Ada", Port: tt.specPort},
				Status: authv1alpha1.WelcomeStatus{
					ObservedGeneration: 3,
					ReadyReplicas:      1,
					ServiceURL:         "http://stale.demo.svc:1/hello/",
				},
			}
			desired := w.DeepCopy()
			desired.Spec.Port = ptr.To(tt.desiredPort)
			desired.Spec.Replicas = ptr.To[int32](2)
			desired.Spec.ServiceType = corev1.ServiceTypeNodePort

			setRolloutStatus(w, desired, tt.dep, tt.svc)

			if w.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", w.Status.ObservedGeneration, gen)
			}
			if w.Status.ReadyReplicas != tt.wantReady {
				t.Errorf("status.readyReplicas = %d, want %d", w.Status.ReadyReplicas, tt.wantReady)
			}
			if w.Status.ServiceURL != tt.wantURL {
				t.Errorf("status.serviceURL = %q, want %q", w.Status.ServiceURL, tt.wantURL)
			}
			assertConditions(t, w.Status.Conditions, tt.wantConds)
			if !reflect.DeepEqual(w.Spec.Port, tt.specPort) {
				t.Errorf("spec.port = %v, want %v: setRolloutStatus must not default the stored spec", w.Spec.Port, tt.specPort)
			}
		})
	}
}

func TestSetInvalidSpec(t *testing.T) {
	const (
		gen      = 2
		portErr  = "spec.port: Invalid value: 0: must be between 1 and 65535"
		emailErr = `spec.email: Invalid value: "ada": must be a bare email address such as user@example.com`
		notFixed = "the spec is not rolled out until it is fixed"
	)
	invalid := func(message string) []metav1.Condition {
		return []metav1.Condition{
			cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonInvalidSpec, message, gen),
			cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, notFixed, gen),
			cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, "nothing was rolled out", gen),
		}
	}
	servingOld := cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "2 of 2 replicas available", 1)
	unavailableOld := cond(authv1alpha1.ConditionAvailable, metav1.ConditionFalse, authv1alpha1.ReasonReplicasUnavailable, "0 of 2 replicas available", 1)

	tests := []struct {
		name    string
		prior   []metav1.Condition
		message string
		want    []metav1.Condition
		news    bool
	}{
		{
			name:    "first time",
			message: portErr,
			want:    invalid(portErr),
			news:    true,
		},
		{
			name:    "same message again",
			prior:   invalid(portErr),
			message: portErr,
			want:    invalid(portErr),
			news:    false,
		},
		{
			name:    "another message",
			prior:   invalid(portErr),
			message: emailErr,
			want:    invalid(emailErr),
			news:    true,
		},
		{
			name: "an Available condition from a rollout is kept as it is",
			prior: []metav1.Condition{
				servingOld,
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolledOut, "the Deployment runs the current spec", 1),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", 1),
			},
			message: portErr,
			want: []metav1.Condition{
				servingOld,
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, notFixed, gen),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonInvalidSpec, portErr, gen),
			},
			news: true,
		},
		{
			name:    "an unavailable rollout is kept as it is",
			prior:   []metav1.Condition{unavailableOld},
			message: portErr,
			want: []metav1.Condition{
				unavailableOld,
				cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonInvalidSpec, notFixed, gen),
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonInvalidSpec, portErr, gen),
			},
			news: true,
		},
		{
			name: "after an apply failure with the same message text",
			prior: []metav1.Condition{
				cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonApplyFailed, portErr, gen),
			},
			message: portErr,
			want:    invalid(portErr),
			news:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &authv1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: gen},
				Status:     authv1alpha1.WelcomeStatus{ObservedGeneration: 1, Conditions: slices.Clone(tt.prior)},
			}
			if got := setInvalidSpec(w, tt.message); got != tt.news {
				t.Errorf("setInvalidSpec() = %t, want %t", got, tt.news)
			}
			assertConditions(t, w.Status.Conditions, tt.want)
			if w.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", w.Status.ObservedGeneration, gen)
			}
		})
	}
}

// TestSetInvalidSpecOnlyOnce replays what the reconciler sees when an invalid spec is requeued.
func TestSetInvalidSpecOnlyOnce(t *testing.T) {
	const message = "spec.name: Required value: the name to greet must not be empty"
	w := &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: 5}}
	for i, want := range []bool{true, false, false} {
		before := w.DeepCopy()
		if got := setInvalidSpec(w, message); got != want {
			t.Errorf("call %d: setInvalidSpec() = %t, want %t", i+1, got, want)
		}
		if i > 0 && !reflect.DeepEqual(before.Status, w.Status) {
			t.Errorf("call %d changed the status:\n%s", i+1, diff.Diff(before.Status, w.Status))
		}
	}
}

func TestSetApplyFailed(t *testing.T) {
	const (
		gen     = 3
		message = "applying the Service: services \"hello\" is forbidden: exceeded quota: services.nodeports"
	)
	available := cond(authv1alpha1.ConditionAvailable, metav1.ConditionTrue, authv1alpha1.ReasonRolledOut, "1 of 1 replicas available", 2)
	progressing := cond(authv1alpha1.ConditionProgressing, metav1.ConditionFalse, authv1alpha1.ReasonRolledOut, "the Deployment runs the current spec", 2)
	failed := cond(authv1alpha1.ConditionDegraded, metav1.ConditionTrue, authv1alpha1.ReasonApplyFailed, message, gen)

	tests := []struct {
		name  string
		prior []metav1.Condition
		want  []metav1.Condition
		news  bool
	}{
		{
			name:  "first failure leaves the other conditions alone",
			prior: []metav1.Condition{available, progressing, cond(authv1alpha1.ConditionDegraded, metav1.ConditionFalse, authv1alpha1.ReasonAsExpected, "", 2)},
			want:  []metav1.Condition{available, progressing, failed},
			news:  true,
		},
		{
			name:  "no conditions yet",
			prior: nil,
			want:  []metav1.Condition{failed},
			news:  true,
		},
		{
			name:  "same failure again",
			prior: []metav1.Condition{available, progressing, failed},
			want:  []metav1.Condition{available, progressing, failed},
			news:  false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &authv1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "demo", Generation: gen},
				Status:     authv1alpha1.WelcomeStatus{ObservedGeneration: 2, Conditions: slices.Clone(tt.prior)},
			}
			if got := setApplyFailed(w, message); got != tt.news {
				t.Errorf("setApplyFailed() = %t, want %t", got, tt.news)
			}
			assertConditions(t, w.Status.Conditions, tt.want)
			if w.Status.ObservedGeneration != 2 {
				t.Errorf("status.observedGeneration = %d, want 2 (unchanged)", w.Status.ObservedGeneration)
			}
		})
	}
}
