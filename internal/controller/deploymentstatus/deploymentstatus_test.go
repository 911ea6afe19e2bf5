package deploymentstatus

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name           string
		dep            *appsv1ac.DeploymentApplyConfiguration
		wantDesired    int32
		wantGeneration int64
		wantStatus     appsv1.DeploymentStatus
	}{
		{name: "no spec, no status: one replica, as the API server defaults it", dep: appsv1ac.Deployment("d", "ns"), wantDesired: 1},
		{
			name: "replicas, generation and status",
			dep: appsv1ac.Deployment("d", "ns").WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(4).WithReplicas(3).WithUpdatedReplicas(2).
					WithReadyReplicas(2).WithAvailableReplicas(1).WithUnavailableReplicas(2).
					WithConditions(appsv1ac.DeploymentCondition().WithType(appsv1.DeploymentAvailable).
						WithStatus(corev1.ConditionFalse).WithReason("MinimumReplicasUnavailable").WithMessage("waiting"))),
			wantDesired: 3, wantGeneration: 4,
			wantStatus: appsv1.DeploymentStatus{
				ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "waiting",
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired, generation, status := Read(tt.dep)
			if desired != tt.wantDesired || generation != tt.wantGeneration || !reflect.DeepEqual(status, tt.wantStatus) {
				t.Errorf("Read() = %d, %d, %+v; want %d, %d, %+v", desired, generation, status, tt.wantDesired, tt.wantGeneration, tt.wantStatus)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	stalled := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: "timed out"}
	quota := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: "exceeded quota"}
	// A message another admission webhook wrote when it refused the pods can be of any length.
	refusedAtLength := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: strings.Repeat("x", 40000)}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	tests := []struct {
		name       string
		generation int64
		status     appsv1.DeploymentStatus
		want       string
	}{
		{name: "progressing", generation: 2, status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{progressing}}},
		{name: "progress deadline exceeded", generation: 2,
			status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{stalled}},
			want:   "ProgressDeadlineExceeded: timed out"},
		{name: "replica failure", generation: 2,
			status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{quota}},
			want:   "FailedCreate: exceeded quota"},
		{name: "a message too long for a condition is cut", generation: 2,
			status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{refusedAtLength}},
			want:   "FailedCreate: " + strings.Repeat("x", 32725) + "… and 7275 more bytes"},
		{name: "a failure of an older generation does not count", generation: 3,
			status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{stalled}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Failure(tt.generation, tt.status); got != tt.want {
				t.Errorf("Failure() = %.200q (%d bytes), want %.200q (%d bytes)", got, len(got), tt.want, len(tt.want))
			}
		})
	}
}
