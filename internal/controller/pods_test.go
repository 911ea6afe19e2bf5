package controller

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/seedlabs/webhook-operator/internal/resources"
)

func TestOwnerOfPod(t *testing.T) {
	podWith := func(labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-7c9-aa", Namespace: "demo", Labels: labels}}
	}
	ours := func(app, instance string) map[string]string {
		return map[string]string{resources.LabelName: app, resources.LabelInstance: instance, resources.LabelManagedBy: resources.ManagedBy}
	}
	shop := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "demo", Name: "shop"}}}
	tests := []struct {
		name string
		app  string
		pod  *corev1.Pod
		want []reconcile.Request
	}{
		{name: "a memcached pod", app: resources.MemcachedApp, pod: podWith(ours(resources.MemcachedApp, "shop")), want: shop},
		{name: "a Welcome pod", app: resources.WelcomeApp, pod: podWith(ours(resources.WelcomeApp, "shop")), want: shop},
		{name: "a DeployObject pod", app: resources.DeployObjectApp, pod: podWith(ours(resources.DeployObjectApp, "shop")), want: shop},
		{name: "a Welcome pod, to the DeployObjects", app: resources.DeployObjectApp, pod: podWith(ours(resources.WelcomeApp, "shop")), want: nil},
		{name: "no instance label", app: resources.MemcachedApp, pod: podWith(ours(resources.MemcachedApp, "")), want: nil},
		{
			name: "not managed by the operator", app: resources.MemcachedApp,
			pod: podWith(map[string]string{resources.LabelName: resources.MemcachedApp, resources.LabelInstance: "shop"}), want: nil,
		},
		{name: "no labels", app: resources.MemcachedApp, pod: podWith(nil), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownerOfPod(tt.app)(context.Background(), tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ownerOfPod(%q) = %v, want %v", tt.app, got, tt.want)
			}
		})
	}
}

func TestCannotStartChanged(t *testing.T) {
	waiting := func(reason, message string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-7c9-aa", Namespace: "demo"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "shop", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
			}}},
		}
	}
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-7c9-aa", Namespace: "demo"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "shop", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	pullFailed, backingOff := waiting("ErrImagePull", "no basic auth credentials"), waiting("ImagePullBackOff", `Back-off pulling image "shop:1"`)
	deleting := backingOff.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	tests := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{name: "created", old: waiting("ContainerCreating", ""), new: pullFailed, want: true},
		{name: "backing off", old: pullFailed, new: backingOff, want: true},
		{name: "a new message", old: backingOff, new: waiting("ImagePullBackOff", `Back-off pulling image "shop:2"`), want: true},
		{name: "pulled and running", old: backingOff, new: running, want: true},
		{name: "being deleted", old: backingOff, new: deleting, want: true},
		{name: "still backing off", old: backingOff, new: backingOff.DeepCopy(), want: false},
		{name: "turns ready", old: waiting("ContainerCreating", ""), new: running, want: false},
		{name: "crash looping", old: running, new: waiting("CrashLoopBackOff", "back-off 10s"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cannotStartChanged.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("Update(old, new) = %t, want %t", got, tt.want)
			}
		})
	}
	if !cannotStartChanged.Create(event.CreateEvent{Object: backingOff}) || !cannotStartChanged.Delete(event.DeleteEvent{Object: backingOff}) {
		t.Errorf("a pod that cannot start, created (as the cache fills) or deleted, must pass")
	}
	if cannotStartChanged.Create(event.CreateEvent{Object: running}) || cannotStartChanged.Delete(event.DeleteEvent{Object: running}) {
		t.Errorf("a pod whose containers start, created or deleted, must not pass")
	}
}
