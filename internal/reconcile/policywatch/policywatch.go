// Package policywatch has the controllers look at objects of their kind again when what the
// admission policy does about them may have changed: every object when the policy changes, and the
// objects of a namespace when its labels change while the policy has namespace overrides. A rule
// the policy now only Warns about or Audits may let a spec held back as InvalidSpec roll out, and
// one it now Enforces holds back the next change of a spec that breaks it.
package policywatch

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/seedlabs/webhook-operator/webhooks"
)

// Watch adds to b a source that enqueues every object of the list's kind, read from c, each time
// changes fires, and one that enqueues the objects of a namespace whose labels change while the
// policy in force has namespace overrides. A nil changes or policy adds nothing.
func Watch(b *builder.Builder, c client.Reader, changes <-chan event.GenericEvent, policy webhooks.PolicySource, list client.ObjectList) *builder.Builder {
	if changes == nil || policy == nil {
		return b
	}
	return b.WatchesRawSource(source.Channel(changes, handler.EnqueueRequestsFromMapFunc(objects(c, list)))).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(objects(c, list)),
			builder.WithPredicates(labelsChangeUnder(policy)))
}

// labelsChangeUnder passes the updates of a namespace's labels while policy has namespace
// overrides, which may move the namespace into or out of one. A new namespace has no objects yet,
// and a deleted one keeps none.
func labelsChangeUnder(policy webhooks.PolicySource) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) && policy.Current().SelectsNamespaces()
		},
	}
}

// objects maps an event to a request for every object of the list's kind: in the namespace, when
// the event is a Namespace's, or everywhere.
func objects(c client.Reader, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		l, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return nil
		}
		var opts []client.ListOption
		if _, ok := o.(*corev1.Namespace); ok {
			opts = append(opts, client.InNamespace(o.GetName()))
		}
		if err := c.List(ctx, l, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the objects to look at again under the admission policy")
			return nil
		}
		var requests []reconcile.Request
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}})
			}
			return nil
		})
		return requests
	}
}
