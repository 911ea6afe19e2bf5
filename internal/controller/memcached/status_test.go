package memcached

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/seedlabs/webhook-operator/test/conditiontest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// Short names for the shared condition helpers keep the tables readable.
var (
	longAgo          = conditiontest.LongAgo
	cond             = conditiontest.Condition
	assertConditions = conditiontest.Assert
)

func memcachedAt(generation int64, conditions ...metav1.Condition) *cachev1alpha1.Memcached {
	return &cachev1alpha1.Memcached{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "demo", Generation: generation},
		Status: cachev1alpha1.MemcachedStatus{
			ObservedGeneration: 1,
			Conditions:         slices.Clone(conditions),
		},
	}
}

func deploymentCondition(conditionType appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) *appsv1ac.DeploymentConditionApplyConfiguration {
	return appsv1ac.DeploymentCondition().
		WithType(conditionType).
		WithStatus(status).
		WithReason(reason).
		WithMessage(message)
}

const (
	deadlineMessage = `ReplicaSet "cache-6b7d9c8f5" has timed out progressing.`
	quotaMessage    = `pods "cache-6b7d9c8f5-" is forbidden: exceeded quota: compute, requested: memory=64Mi, used: memory=1Gi, limited: memory=1Gi`
)

func TestRolloutOf(t *testing.T) {
	tests := []struct {
		name string
		dep  *appsv1ac.DeploymentApplyConfiguration
		want rollout
	}{
		{
			name: "applied, not yet seen by the Deployment controller",
			dep: appsv1ac.Deployment("cache", "demo").
				WithGeneration(1).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3)),
			want: rollout{desired: 3, generation: 1},
		},
		{
			name: "spec.replicas unset means 1, as the API server defaults it",
			dep: appsv1ac.Deployment("cache", "demo").
				WithGeneration(2).
				WithSpec(appsv1ac.DeploymentSpec()).
				WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2)),
			want: rollout{desired: 1, generation: 2, observedGeneration: 2},
		},
		{
			name: "rolled out",
			dep: appsv1ac.Deployment("cache", "demo").
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
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "cache-6b7d9c8f5" has successfully progressed.`),
					)),
			want: rollout{desired: 2, generation: 5, observedGeneration: 5, replicas: 2, updated: 2, ready: 2, available: 2},
		},
		{
			name: "progress deadline exceeded",
			dep: appsv1ac.Deployment("cache", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithReplicas(2).
					WithUpdatedReplicas(2).
					WithConditions(
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4, replicas: 2, updated: 2,
				failure: "ProgressDeadlineExceeded: " + deadlineMessage},
		},
		{
			name: "replica failure",
			dep: appsv1ac.Deployment("cache", "demo").
				WithGeneration(4).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithConditions(
						deploymentCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", quotaMessage),
					)),
			want: rollout{desired: 2, generation: 4, observedGeneration: 4, failure: "FailedCreate: " + quotaMessage},
		},
		{
			name: "a failure of an older generation is not carried over",
			dep: appsv1ac.Deployment("cache", "demo").
				WithGeneration(5).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
				WithStatus(appsv1ac.DeploymentStatus().
					WithObservedGeneration(4).
					WithReplicas(2).
					WithConditions(
						deploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", deadlineMessage),
					)),
			want: rollout{desired: 2, generation: 5, observedGeneration: 4, replicas: 2},
		},
		{
			name: "ReplicaFailure False and Progressing Unknown are no failure",
			dep: appsv1ac.Deployment("cache", "demo").
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rolloutOf(tt.dep); got != tt.want {
				t.Errorf("rolloutOf() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRolloutComplete(t *testing.T) {
	done := rollout{desired: 3, generation: 4, observedGeneration: 4, replicas: 3, updated: 3, ready: 3, available: 3}
	tests := []struct {
		name   string
		mutate func(*rollout)
		want   bool
	}{
		{name: "every instance updated and available", mutate: func(*rollout) {}, want: true},
		{name: "ready lagging does not matter once available", mutate: func(r *rollout) { r.ready = 2 }, want: true},
		{name: "current generation not observed yet", mutate: func(r *rollout) { r.observedGeneration = 3 }, want: false},
		{name: "not every instance updated", mutate: func(r *rollout) { r.updated = 2 }, want: false},
		{name: "more instances than size: scaled up by hand", mutate: func(r *rollout) { r.replicas = 5; r.available = 5 }, want: false},
		{name: "too few instances", mutate: func(r *rollout) { r.replicas = 2 }, want: false},
		{name: "not every instance available", mutate: func(r *rollout) { r.available = 2 }, want: false},
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

func pod(name string, phase corev1.PodPhase, terminating bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if terminating {
		p.DeletionTimestamp = &longAgo
	}
	return p
}

func TestNodesOf(t *testing.T) {
	tests := []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{name: "no pods", pods: nil, want: nil},
		{
			name: "sorted by name, whatever the list order",
			pods: []corev1.Pod{
				pod("cache-7f9-zq2", corev1.PodRunning, false),
				pod("cache-7f9-a1b", corev1.PodRunning, false),
				pod("cache-7f9-m0x", corev1.PodRunning, false),
			},
			want: []string{"cache-7f9-a1b", "cache-7f9-m0x", "cache-7f9-zq2"},
		},
		{
			name: "pending and unknown pods are members",
			pods: []corev1.Pod{
				pod("cache-b", corev1.PodPending, false),
				pod("cache-a", corev1.PodUnknown, false),
				pod("cache-c", "", false),
			},
			want: []string{"cache-a", "cache-b", "cache-c"},
		},
		{
			name: "terminating, failed and succeeded pods are not",
			pods: []corev1.Pod{
				pod("cache-running", corev1.PodRunning, false),
				pod("cache-terminating", corev1.PodRunning, true),
				pod("cache-failed", corev1.PodFailed, false),
				pod("cache-succeeded", corev1.PodSucceeded, false),
			},
			want: []string{"cache-running"},
		},
		{
			name: "none left is nil, so the field is omitted",
			pods: []corev1.Pod{pod("cache-failed", corev1.PodFailed, false), pod("cache-gone", corev1.PodPending, true)},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodesOf(tt.pods); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodesOf() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestSelectorOf(t *testing.T) {
	const want = "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached"
	if got := selectorOf("cache"); got != want {
		t.Fatalf("selectorOf() = %q, want %q", got, want)
	}
	// What the scale subresource hands to an autoscaler must select the pods the Deployment runs.
	sel, err := labels.Parse(selectorOf("cache"))
	if err != nil {
		t.Fatalf("parsing %q: %v", selectorOf("cache"), err)
	}
	podLabels := labels.Set{
		resources.LabelName: resources.MemcachedApp, resources.LabelInstance: "cache", resources.LabelManagedBy: resources.ManagedBy,
	}
	if !sel.Matches(podLabels) {
		t.Errorf("%q does not match the pod labels %v", sel, podLabels)
	}
	if sel.Matches(labels.Set{resources.LabelName: resources.MemcachedApp, resources.LabelInstance: "cache-2"}) {
		t.Errorf("%q matches the pods of Memcached cache-2", sel)
	}
}

func TestSetRolloutConditions(t *testing.T) {
	const gen = 7
	asExpected := cond(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, cachev1alpha1.ReasonAsExpected, "", gen)
	rolledOut := func(availableMessage, progressingMessage string) []metav1.Condition {
		return []metav1.Condition{
			cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonRolledOut, availableMessage, gen),
			cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolledOut, progressingMessage, gen),
			asExpected,
		}
	}

	tests := []struct {
		name  string
		prior []metav1.Condition
		r     rollout
		want  []metav1.Condition
	}{
		{
			name: "one instance rolled out",
			r:    rollout{desired: 1, generation: 2, observedGeneration: 2, replicas: 1, updated: 1, ready: 1, available: 1},
			want: rolledOut("1 of 1 instances available", "spec.size 1 is rolled out: every instance runs the current spec"),
		},
		{
			name: "three instances rolled out",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 3},
			want: rolledOut("3 of 3 instances available", "spec.size 3 is rolled out: every instance runs the current spec"),
		},
		{
			name: "just applied, no status yet",
			r:    rollout{desired: 2, generation: 1},
			want: []metav1.Condition{
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInstancesUnavailable, "0 of 2 instances available", gen),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
					"bringing the pool to 2 instances: 0 running, 0 updated, 0 available", gen),
				asExpected,
			},
		},
		{
			name: "pods starting",
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 1, available: 1},
			want: []metav1.Condition{
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInstancesUnavailable, "1 of 3 instances available", gen),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
					"bringing the pool to 3 instances: 3 running, 3 updated, 1 available", gen),
				asExpected,
			},
		},
		{
			name: "scaled to 5 by hand and being put back to 2",
			r:    rollout{desired: 2, generation: 3, observedGeneration: 3, replicas: 5, updated: 5, ready: 5, available: 5},
			want: []metav1.Condition{
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling, "5 instances available, 2 requested", gen),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
					"bringing the pool to 2 instances: 5 running, 5 updated, 5 available", gen),
				asExpected,
			},
		},
		{
			name: "new spec not yet observed: the old pods serve",
			r:    rollout{desired: 2, generation: 3, observedGeneration: 2, replicas: 2, updated: 2, ready: 2, available: 2},
			want: []metav1.Condition{
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling, "2 instances available, 2 requested", gen),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
					"bringing the pool to 2 instances: 2 running, 2 updated, 2 available", gen),
				asExpected,
			},
		},
		{
			name: "progress deadline exceeded",
			r: rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 1, available: 1,
				failure: "ProgressDeadlineExceeded: " + deadlineMessage},
			want: []metav1.Condition{
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInstancesUnavailable, "1 of 3 instances available", gen),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
				cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonRolloutFailed, "ProgressDeadlineExceeded: "+deadlineMessage, gen),
			},
		},
		{
			name: "recovery replaces the conditions of an older generation, InvalidSpec included",
			prior: []metav1.Condition{
				cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonInvalidSpec, "spec.size: Invalid value: 5: must be between 1 and 3", 6),
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonInvalidSpec, messageNotRolledOut, 6),
				cond(cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInvalidSpec, messageNothingRolled, 6),
			},
			r:    rollout{desired: 3, generation: 2, observedGeneration: 2, replicas: 3, updated: 3, ready: 3, available: 3},
			want: rolledOut("3 of 3 instances available", "spec.size 3 is rolled out: every instance runs the current spec"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memcachedAt(gen, tt.prior...)
			setRolloutConditions(m, tt.r)
			assertConditions(t, m.Status.Conditions, tt.want)
			if m.Status.ObservedGeneration != 1 {
				t.Errorf("status.observedGeneration = %d, want 1 (setRolloutConditions only sets conditions)", m.Status.ObservedGeneration)
			}
		})
	}
}

// TestSetRolloutStatusFromApplyResponse reads the status the way the reconciler does: the
// controller-runtime client unmarshals the API server's reply to the apply into the applied
// configuration.
func TestSetRolloutStatusFromApplyResponse(t *testing.T) {
	const gen = 4
	m := memcachedAt(gen)
	m.Spec.Size = ptr.To[int32](2)
	m.Status.Replicas = 7
	m.Status.Nodes = []string{"stale"}
	desired := m.DeepCopy()
	desired.Spec.ContainerPort = ptr.To(cachev1alpha1.DefaultContainerPort)
	applied := resources.MemcachedDeployment(desired, "registry.example.test/memcached:1.6")

	reply := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "demo", Generation: 3},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		},
	}
	body, err := json.Marshal(reply)
	if err != nil {
		t.Fatalf("marshalling the reply: %v", err)
	}
	if err := json.Unmarshal(body, applied); err != nil {
		t.Fatalf("unmarshalling the reply into the apply configuration: %v", err)
	}

	pods := []corev1.Pod{
		pod("cache-5d-x2", corev1.PodRunning, false),
		pod("cache-5d-old", corev1.PodRunning, true),
		pod("cache-5d-a7", corev1.PodRunning, false),
	}
	setRolloutStatus(m, applied, pods)

	want := cachev1alpha1.MemcachedStatus{
		Replicas:           2,
		Selector:           "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached",
		ObservedGeneration: gen,
		Nodes:              []string{"cache-5d-a7", "cache-5d-x2"},
	}
	got := m.Status
	got.Conditions = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("status mismatch, conditions aside (-want +got):\n%s", diff.Diff(want, got))
	}
	assertConditions(t, m.Status.Conditions, []metav1.Condition{
		cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonRolledOut, "2 of 2 instances available", gen),
		cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolledOut, "spec.size 2 is rolled out: every instance runs the current spec", gen),
		cond(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, cachev1alpha1.ReasonAsExpected, "", gen),
	})
	if m.Spec.ContainerPort != nil {
		t.Errorf("spec.containerPort = %d, want it unset: the stored spec must not be defaulted", *m.Spec.ContainerPort)
	}
}

func TestSetPoolStatusWithoutDeployment(t *testing.T) {
	m := memcachedAt(2)
	m.Status.Replicas = 3
	m.Status.Nodes = []string{"cache-gone"}
	setPoolStatus(m, 0, nil)
	want := cachev1alpha1.MemcachedStatus{
		ObservedGeneration: 1,
		Selector:           "app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached",
	}
	if !reflect.DeepEqual(m.Status, want) {
		t.Errorf("status mismatch (-want +got):\n%s", diff.Diff(want, m.Status))
	}
}

func TestSetInvalidSpec(t *testing.T) {
	const (
		gen     = 2
		sizeErr = "spec.size: Invalid value: 5: must be between 1 and 3"
		bothErr = "[spec.size: Invalid value: 5: must be between 1 and 3, spec.containerPort: Invalid value: 0: must be between 1 and 65535, inclusive]"
	)
	invalid := func(message string) []metav1.Condition {
		return []metav1.Condition{
			cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonInvalidSpec, message, gen),
			cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonInvalidSpec, messageNotRolledOut, gen),
			cond(cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInvalidSpec, messageNothingRolled, gen),
		}
	}
	servingOld := cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonRolledOut, "2 of 2 instances available", 1)

	tests := []struct {
		name    string
		prior   []metav1.Condition
		message string
		want    []metav1.Condition
		news    bool
	}{
		{name: "first time", message: sizeErr, want: invalid(sizeErr), news: true},
		{name: "same message again", prior: invalid(sizeErr), message: sizeErr, want: invalid(sizeErr), news: false},
		{name: "another message", prior: invalid(sizeErr), message: bothErr, want: invalid(bothErr), news: true},
		{
			name: "the Available condition of an earlier rollout is kept: those pods still serve",
			prior: []metav1.Condition{
				servingOld,
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolledOut, "spec.size 2 is rolled out: every instance runs the current spec", 1),
				cond(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, cachev1alpha1.ReasonAsExpected, "", 1),
			},
			message: sizeErr,
			want: []metav1.Condition{
				servingOld,
				cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonInvalidSpec, messageNotRolledOut, gen),
				cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonInvalidSpec, sizeErr, gen),
			},
			news: true,
		},
		{
			name:    "after an apply failure",
			prior:   []metav1.Condition{cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonApplyFailed, sizeErr, gen)},
			message: sizeErr,
			want:    invalid(sizeErr),
			news:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memcachedAt(gen, tt.prior...)
			if got := setInvalidSpec(m, tt.message); got != tt.news {
				t.Errorf("setInvalidSpec() = %t, want %t", got, tt.news)
			}
			assertConditions(t, m.Status.Conditions, tt.want)
			if m.Status.ObservedGeneration != gen {
				t.Errorf("status.observedGeneration = %d, want %d", m.Status.ObservedGeneration, gen)
			}
		})
	}
}

// TestSetInvalidSpecOnlyOnce replays what the reconciler sees when an invalid spec is requeued:
// the Warning event goes out once, and the status is not rewritten.
func TestSetInvalidSpecOnlyOnce(t *testing.T) {
	const message = "spec.size: Invalid value: 5: must be between 1 and 3"
	m := memcachedAt(5)
	for i, want := range []bool{true, false, false} {
		before := m.DeepCopy()
		if got := setInvalidSpec(m, message); got != want {
			t.Errorf("call %d: setInvalidSpec() = %t, want %t", i+1, got, want)
		}
		if i > 0 && !reflect.DeepEqual(before.Status, m.Status) {
			t.Errorf("call %d changed the status:\n%s", i+1, diff.Diff(before.Status, m.Status))
		}
	}
}

func TestSetApplyFailed(t *testing.T) {
	const (
		gen     = 3
		message = `applying the Service: services "cache" is forbidden: exceeded quota: services`
	)
	available := cond(cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonRolledOut, "1 of 1 instances available", 2)
	progressing := cond(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolledOut, "spec.size 1 is rolled out: every instance runs the current spec", 2)
	failed := cond(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonApplyFailed, message, gen)

	tests := []struct {
		name  string
		prior []metav1.Condition
		want  []metav1.Condition
		news  bool
	}{
		{
			name:  "first failure leaves the other conditions alone",
			prior: []metav1.Condition{available, progressing, cond(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, cachev1alpha1.ReasonAsExpected, "", 2)},
			want:  []metav1.Condition{available, progressing, failed},
			news:  true,
		},
		{name: "no conditions yet", want: []metav1.Condition{failed}, news: true},
		{name: "same failure again", prior: []metav1.Condition{available, progressing, failed}, want: []metav1.Condition{available, progressing, failed}, news: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memcachedAt(gen, tt.prior...)
			if got := setApplyFailed(m, message); got != tt.news {
				t.Errorf("setApplyFailed() = %t, want %t", got, tt.news)
			}
			assertConditions(t, m.Status.Conditions, tt.want)
			if m.Status.ObservedGeneration != 1 {
				t.Errorf("status.observedGeneration = %d, want 1 (unchanged)", m.Status.ObservedGeneration)
			}
		})
	}
}
