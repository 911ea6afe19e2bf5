package controller

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// WatchStatus has b reconcile an object of obj's kind again when its status changes and its
// generation does not: b's For reconciles it on a change of generation alone.
//
// Because a reconcile leaves the status as it is when what it would write equals what its cache
// holds (status.Patch), and the cache may not hold the last status written: the controller's own
// write an instant before, not yet seen, or a write of a replica that held the Lease before.
// Without the event of that write nothing would look at the object again, and a status no longer
// true would stay (a Memcached was seen to keep "2 replicas available, 2 requested" after an
// upgrade, its Deployment complete). With it, the reconcile after a status write finds what it
// would write stored, and writes nothing.
//
// An object whose reconciles are failing is left to the controller's retries with back-off: each
// failed attempt writes its error to the status, and a message that changes from one attempt to the
// next (a quota's usage, say) would otherwise have the object reconciled again at once, every time.
func WatchStatus(b *builder.Builder, obj client.Object) *builder.Builder {
	return b.Watches(obj, recheck, builder.WithPredicates(statusChanged))
}

// recheck enqueues the object of an update, unless the controller's rate limiter counts failed
// reconciles of it since its last success.
var recheck = handler.Funcs{
	UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)}
		if q.NumRequeues(req) == 0 {
			q.Add(req)
		}
	},
}

// statusChanged passes an update that changes the object's status and not its generation.
var statusChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() &&
			!equality.Semantic.DeepEqual(statusOf(e.ObjectOld), statusOf(e.ObjectNew))
	},
}

// statusOf is the Status field of obj, a custom resource or what the cache keeps of one (which
// embeds it), or nil.
func statusOf(obj client.Object) any {
	v := reflect.Indirect(reflect.ValueOf(obj))
	if v.Kind() != reflect.Struct {
		return nil
	}
	if f := v.FieldByName("Status"); f.IsValid() {
		return f.Interface()
	}
	return nil
}
