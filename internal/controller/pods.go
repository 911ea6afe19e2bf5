package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// WatchPods has b reconcile a custom resource when one of its pods, those the operator labels
// with app (resources.LabelName) and the resource's name (resources.LabelInstance), turns unable
// to start a container, or able again, or goes while unable (status.CannotStart), and on every
// event another of changed passes.
func WatchPods(b *builder.Builder, app string, changed ...predicate.Predicate) *builder.Builder {
	return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(ownerOfPod(app)),
		builder.WithPredicates(predicate.Or(append([]predicate.Predicate{cannotStartChanged}, changed...)...)))
}

// ownerOfPod maps a pod of app to the custom resource it runs for, by its instance label.
func ownerOfPod(app string) handler.MapFunc {
	return func(_ context.Context, pod client.Object) []reconcile.Request {
		l := pod.GetLabels()
		name := l[resources.LabelInstance]
		if l[resources.LabelName] != app || l[resources.LabelManagedBy] != resources.ManagedBy || name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
	}
}

// cannotStartChanged passes the events that change whether a pod has a container that cannot
// start, or why: a pod that can start all of its containers holds nothing back, however its
// status changes.
var cannotStartChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return cannotStartOf(e.Object) != nil },
	DeleteFunc:  func(e event.DeleteEvent) bool { return cannotStartOf(e.Object) != nil },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(cannotStartOf(e.ObjectOld), cannotStartOf(e.ObjectNew))
	},
}

// cannotStartOf is status.CannotStart of obj, a pod, or nil.
func cannotStartOf(obj client.Object) *corev1.ContainerStatus {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	return status.CannotStart(pod)
}
