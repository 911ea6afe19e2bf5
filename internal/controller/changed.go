package controller

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// SpecOrStatusChanged passes the events of a custom resource that a reconcile must see: its
// creation and deletion, a change of its generation (its spec, its scale, the start of its
// deletion with a finalizer), and a change of its status by any writer.
//
// The status, because a reconcile leaves the status as it is when what it would write equals what
// its cache holds (status.Patch), and the cache may not hold the last status written: the
// controller's own write an instant before, not yet seen, or a write of a replica that held the
// Lease before. Without the event of that write, nothing would look at the object again, and a
// status no longer true would stay (a Memcached was seen to keep "2 replicas available, 2
// requested" after an upgrade, its Deployment complete). With it, the reconcile after each status
// write finds what it would write stored, and writes nothing.
var SpecOrStatusChanged = predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, statusChanged)

// statusChanged passes an update that changes the object's status.
var statusChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(statusOf(e.ObjectOld), statusOf(e.ObjectNew))
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
