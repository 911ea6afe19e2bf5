package status

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

// waitingFor is the status of a container named name that waits for reason.
func waitingFor(name, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func TestCannotStart(t *testing.T) {
	running := corev1.ContainerStatus{Name: "sidecar", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := []struct {
		name    string
		pod     corev1.Pod
		wantFor string // the container that cannot start, "" for none
	}{
		{name: "no status yet", pod: corev1.Pod{}},
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running}}}},
		{name: "being created", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "ContainerCreating", "")}}}},
		{name: "initializing", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "PodInitializing", "")}}}},
		{name: "crash looping", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "CrashLoopBackOff", "back-off 10s")}}}},
		{name: "the runtime failed to create it", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "CreateContainerError", "name in use")}}}},
		{name: "ErrImagePull", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running, waitingFor("shop", "ErrImagePull", "denied")}}}, wantFor: "shop"},
		{name: "ImagePullBackOff", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "ImagePullBackOff", "Back-off")}}}, wantFor: "shop"},
		{name: "InvalidImageName", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "InvalidImageName", "")}}}, wantFor: "shop"},
		{name: "ErrImageNeverPull", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "ErrImageNeverPull", "")}}}, wantFor: "shop"},
		{name: "CreateContainerConfigError", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "CreateContainerConfigError", `secret "db" not found`)}}}, wantFor: "shop"},
		{
			name: "an init container before the others",
			pod: corev1.Pod{Status: corev1.PodStatus{
				InitContainerStatuses: []corev1.ContainerStatus{waitingFor("migrate", "ImagePullBackOff", "")},
				ContainerStatuses:     []corev1.ContainerStatus{waitingFor("shop", "ImagePullBackOff", "")},
			}},
			wantFor: "migrate",
		},
		{
			name: "being deleted",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &longAgo},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "ImagePullBackOff", "")}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CannotStart(&tt.pod)
			switch {
			case tt.wantFor == "" && got != nil:
				t.Errorf("CannotStart() = %+v, want nil", got)
			case tt.wantFor != "" && (got == nil || got.Name != tt.wantFor):
				t.Errorf("CannotStart() = %+v, want the status of %s", got, tt.wantFor)
			}
		})
	}
}

func TestObserveRollout(t *testing.T) {
	const (
		ns         = "demo"
		deployment = types.UID("d1")
		backOff    = `Back-off pulling image "registry.example.test/team/shop:2.4.1": ErrImagePull: failed to pull and unpack image: no basic auth credentials`
	)
	selector := map[string]string{"app.kubernetes.io/name": "deployobject", "app.kubernetes.io/instance": "shop"}
	// dep is the Deployment as applied, or as the cache holds it when the apply could change
	// nothing (no selector): generation 2, observed, two replicas, one available.
	dep := func() *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("shop", ns).WithUID(deployment).WithGeneration(2).
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
			WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2).WithReplicas(2).WithUpdatedReplicas(2).
				WithReadyReplicas(1).WithAvailableReplicas(1))
	}
	replicaSet := func(name string, uid types.UID, revision string, owner types.UID) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: uid, Labels: selector,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop", UID: owner, Controller: ptr.To(true)}},
		}}
	}
	oldSet, currentSet := replicaSet("shop-5f4d", "rs1", "1", deployment), replicaSet("shop-6b7d", "rs2", "2", deployment)
	pod := func(name string, rs types.UID, statuses ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: selector,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "shop", UID: rs, Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: statuses},
		}
	}
	running := corev1.ContainerStatus{Name: "shop", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	backingOff := waitingFor("shop", "ImagePullBackOff", backOff)

	tests := []struct {
		name         string
		dep          func() *appsv1ac.DeploymentApplyConfiguration
		objs         []client.Object
		want         string
		wantSetLists int // how many times the ReplicaSets are listed
	}{
		{
			name:         "a pod of the current template cannot pull its image",
			objs:         []client.Object{oldSet, currentSet, pod("shop-6b7d-aaaaa", "rs2", running), pod("shop-6b7d-bbbbb", "rs2", backingOff)},
			want:         "pod shop-6b7d-bbbbb, container shop: ImagePullBackOff: " + backOff,
			wantSetLists: 1,
		},
		{
			name:         "a pod of an older template cannot pull its image: the rollout replaces it",
			objs:         []client.Object{oldSet, currentSet, pod("shop-5f4d-aaaaa", "rs1", backingOff), pod("shop-6b7d-bbbbb", "rs2", running)},
			want:         "",
			wantSetLists: 1,
		},
		{
			name: "the first pod by name, a message-less reason as it is",
			objs: []client.Object{currentSet, pod("shop-6b7d-ccccc", "rs2", backingOff),
				pod("shop-6b7d-bbbbb", "rs2", waitingFor("shop", "InvalidImageName", ""))},
			want:         "pod shop-6b7d-bbbbb, container shop: InvalidImageName",
			wantSetLists: 1,
		},
		{
			name: "a ReplicaSet of another Deployment of a higher revision does not count",
			objs: []client.Object{currentSet, replicaSet("shop-9a9a", "rs9", "7", "another"),
				pod("shop-6b7d-bbbbb", "rs2", backingOff)},
			want:         "pod shop-6b7d-bbbbb, container shop: ImagePullBackOff: " + backOff,
			wantSetLists: 1,
		},
		{
			name: "a pod of another instance, or in another namespace, does not count",
			objs: []client.Object{currentSet,
				func() *corev1.Pod {
					p := pod("other-6b7d-aaaaa", "rs2", backingOff)
					p.Labels = map[string]string{"app.kubernetes.io/name": "deployobject", "app.kubernetes.io/instance": "other"}
					return p
				}(),
				func() *corev1.Pod {
					p := pod("shop-6b7d-aaaaa", "rs2", backingOff)
					p.Namespace = "elsewhere"
					return p
				}(),
			},
			want:         "",
			wantSetLists: 0,
		},
		{
			name:         "no pod that cannot start: no ReplicaSet is read",
			objs:         []client.Object{oldSet, currentSet, pod("shop-6b7d-bbbbb", "rs2", running)},
			want:         "",
			wantSetLists: 0,
		},
		{
			name: "the Deployment has not observed its template: no pod of it exists yet",
			dep: func() *appsv1ac.DeploymentApplyConfiguration {
				d := dep()
				d.Status.WithObservedGeneration(1)
				return d
			},
			objs:         []client.Object{oldSet, currentSet, pod("shop-6b7d-bbbbb", "rs2", backingOff)},
			want:         "",
			wantSetLists: 0,
		},
		{
			name: "no ReplicaSet yet",
			objs: []client.Object{pod("shop-6b7d-bbbbb", "rs2", backingOff)}, want: "", wantSetLists: 1,
		},
		{
			name:         "a message too long for a condition is cut",
			objs:         []client.Object{currentSet, pod("shop-6b7d-bbbbb", "rs2", waitingFor("shop", "ErrImagePull", strings.Repeat("x", 40000)))},
			want:         message.Truncate("pod shop-6b7d-bbbbb, container shop: ErrImagePull: "+strings.Repeat("x", 40000), message.ConditionLimit),
			wantSetLists: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setLists := 0
			c := reconciletest.NewClient(t, &interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if m, ok := list.(*metav1.PartialObjectMetadataList); ok && m.GroupVersionKind().Kind == "ReplicaSetList" {
						setLists++
					}
					return c.List(ctx, list, opts...)
				},
			}, tt.objs...)
			d := dep
			if tt.dep != nil {
				d = tt.dep
			}
			applied := d()
			r, err := ObserveRollout(context.Background(), c, c, applied, selector)
			if err != nil {
				t.Fatalf("ObserveRollout() error: %v", err)
			}
			if r.PodFailure != tt.want {
				t.Errorf("PodFailure = %q, want %q", r.PodFailure, tt.want)
			}
			if setLists != tt.wantSetLists {
				t.Errorf("the ReplicaSets were listed %d times, want %d", setLists, tt.wantSetLists)
			}
			want := RolloutOf(applied)
			want.PodFailure = tt.want
			if !reflect.DeepEqual(r, want) {
				t.Errorf("ObserveRollout() mismatch (-want +got):\n%s", diff.Diff(want, r))
			}
		})
	}
}

// TestObserveRolloutReadsNothingOnceComplete: a complete rollout has every pod ready, so no pod
// is read, however the cache could answer.
func TestObserveRolloutReadsNothingOnceComplete(t *testing.T) {
	refused, selector := errors.New("no List expected"), map[string]string{"a": "b"}
	c := reconciletest.NewClient(t, &interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return refused },
	})
	done := appsv1ac.Deployment("shop", "demo").WithUID("d1").WithGeneration(2).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
		WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2).WithReplicas(2).WithUpdatedReplicas(2).WithReadyReplicas(2).WithAvailableReplicas(2))
	if _, err := ObserveRollout(context.Background(), c, c, done, selector); err != nil {
		t.Errorf("ObserveRollout() of a complete rollout: %v, want no read", err)
	}

	rolling := done.WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2).WithReplicas(2))
	if _, err := ObserveRollout(context.Background(), c, c, rolling, selector); !errors.Is(err, refused) {
		t.Errorf("ObserveRollout() of a rollout under way: %v, want the error of the pods' List", err)
	}
}

// TestObserveRolloutReturnsTheErrorOfTheReplicaSets: a pod that cannot start, whose template
// cannot be told, is retried, not reported either way.
func TestObserveRolloutReturnsTheErrorOfTheReplicaSets(t *testing.T) {
	forbidden := errors.New(`replicasets.apps is forbidden: User "system:serviceaccount:ops:manager" cannot list resource "replicasets"`)
	selector := map[string]string{"a": "b"}
	c := reconciletest.NewClient(t, &interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*metav1.PartialObjectMetadataList); ok {
				return forbidden
			}
			return c.List(ctx, list, opts...)
		},
	}, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-6b7d-aaaaa", Namespace: "demo", Labels: selector},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waitingFor("shop", "ErrImagePull", "")}}})
	rolling := appsv1ac.Deployment("shop", "demo").WithUID("d1").WithGeneration(2).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2)).
		WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(2).WithReplicas(2))
	r, err := ObserveRollout(context.Background(), c, c, rolling, selector)
	if !errors.Is(err, forbidden) || !strings.Contains(err.Error(), "listing the ReplicaSets of Deployment demo/shop") {
		t.Errorf("ObserveRollout() error = %v, want the ReplicaSets' error, naming the Deployment", err)
	}
	if r.PodFailure != "" {
		t.Errorf("PodFailure = %q, want none while the template cannot be told", r.PodFailure)
	}
}
