// Package policywatch has the controllers look at every object of their kind again when the
// admission policy changes: a rule it now only Warns about or Audits may let a spec held back as
// InvalidSpec roll out, and one it now Enforces holds back the next change of a spec that breaks it.
package policywatch

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watch adds to b a source that enqueues every object of the list's kind, read from c, each time
// changes fires. A nil changes adds nothing.
func Watch(b *builder.Builder, c client.Reader, changes <-chan event.GenericEvent, list client.ObjectList) *builder.Builder {
	if changes == nil {
		return b
	}
	return b.WatchesRawSource(source.Channel(changes, handler.EnqueueRequestsFromMapFunc(all(c, list))))
}

// all maps any event to a request for every object of the list's kind.
func all(c client.Reader, list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		l, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return nil
		}
		if err := c.List(ctx, l); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the objects to look at again under the new admission policy")
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
