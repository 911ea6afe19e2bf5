package deployobject

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
)

// Times the Deployment controller stamped on its conditions.
var (
	updatedAt    = metav1.NewTime(time.Date(2026, time.March, 4, 10, 11, 12, 0, time.UTC))
	transitionAt = metav1.NewTime(time.Date(2026, time.March, 4, 10, 0, 0, 0, time.UTC))
)

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

const progressedMessage = `ReplicaSet "shop-6b7d9c8f5" has successfully progressed.`

func TestMirrorDeploymentStatus(t *testing.T) {
	conditions := []appsv1.DeploymentCondition{
		deploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
		deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "shop-6b7d9c8f5" is progressing.`),
	}
	tests := []struct {
		name  string
		prior appv1.DeployObjectStatus
		st    appsv1.DeploymentStatus
		want  appv1.DeployObjectStatus
	}{
		{
			name: "counts and conditions of a rollout under way",
			st: appsv1.DeploymentStatus{
				// The Deployment's generations are its own: status.observedGeneration is ours.
				ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 2,
				TerminatingReplicas: ptr.To[int32](1), Conditions: conditions,
			},
			prior: appv1.DeployObjectStatus{ObservedGeneration: 9},
			want: appv1.DeployObjectStatus{
				ObservedGeneration: 9, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, UnavailableReplicas: 2,
				DeploymentConditions: conditions,
			},
		},
		{
			name: "no Deployment, or scaled to zero, clears the counts and conditions of before",
			prior: appv1.DeployObjectStatus{
				ObservedGeneration: 8, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 1,
				DeploymentConditions: conditions,
			},
			st:   appsv1.DeploymentStatus{ObservedGeneration: 3},
			want: appv1.DeployObjectStatus{ObservedGeneration: 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appv1.DeployObject{Status: tt.prior}
			mirrorDeploymentStatus(d, tt.st)
			if !reflect.DeepEqual(d.Status, tt.want) {
				t.Errorf("status mismatch (-want +got):\n%s", diff.Diff(tt.want, d.Status))
			}
		})
	}
}

// TestMirrorDeploymentStatusFitsTheSchema cuts what a Deployment's status holds beyond the CRD's
// schema (more conditions, longer strings) to fit, so that the status write is never refused, and
// keeps what fits as it is.
func TestMirrorDeploymentStatusFitsTheSchema(t *testing.T) {
	long := func(n int) string { return strings.Repeat("€", n) } // 3 bytes, 1 character each
	var conditions []appsv1.DeploymentCondition
	for i := range appv1.MaxDeploymentConditionsItems + 2 {
		conditions = append(conditions, deploymentCondition(appsv1.DeploymentConditionType(fmt.Sprintf("Type%d%s", i, long(appv1.MaxConditionTypeLength))),
			corev1.ConditionStatus(long(appv1.MaxConditionStatusLength+1)), long(appv1.MaxConditionReasonLength), long(appv1.MaxConditionMessageLength+1)))
	}
	conditions[0] = deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", progressedMessage)
	d := &appv1.DeployObject{}
	mirrorDeploymentStatus(d, appsv1.DeploymentStatus{Conditions: conditions})
	got := d.Status.DeploymentConditions
	if len(got) != appv1.MaxDeploymentConditionsItems {
		t.Fatalf("mirrored %d conditions, want the schema's %d", len(got), appv1.MaxDeploymentConditionsItems)
	}
	if !reflect.DeepEqual(got[0], conditions[0]) {
		t.Errorf("a condition that fits was changed (-want +got):\n%s", diff.Diff(conditions[0], got[0]))
	}
	for i, c := range got {
		for _, f := range []struct {
			name  string
			value string
			limit int
		}{
			{"type", string(c.Type), appv1.MaxConditionTypeLength},
			{"status", string(c.Status), appv1.MaxConditionStatusLength},
			{"reason", c.Reason, appv1.MaxConditionReasonLength},
			{"message", c.Message, appv1.MaxConditionMessageLength},
		} {
			if n := len([]rune(f.value)); n > f.limit {
				t.Errorf("condition %d: %s has %d characters, more than the schema's %d", i, f.name, n, f.limit)
			}
		}
		if i > 0 && !strings.HasPrefix(string(c.Type), fmt.Sprintf("Type%d", i)) {
			t.Errorf("condition %d: type %.20q…, want the beginning of the Deployment's, Type%d", i, c.Type, i)
		}
	}
}
