// Package apply server-side applies the Deployments and Services the controllers make, and leaves
// out an apply that could change nothing, so that a resync or a reconcile triggered by the
// operator's own write makes no request.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// applies counts the applies of Apply: made, or left out because they could change nothing.
var applies = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "webhook_operator_applies_total",
	Help: "Server-side applies of the Deployments and Services the operator makes, by kind and result: created (none existed), applied (over one that did not hold what the apply gives it), failed (the API server refused either) or skipped (it held it: no request).",
}, []string{"kind", "result"})

func init() {
	metrics.Registry.MustRegister(applies)
}

// FieldManager is the server-side apply field manager that owns what the operator writes.
const FieldManager = "webhook-operator"

// Options are the options of every apply of the operator's: its one field manager, which takes
// back fields another manager changed, and extra.
func Options(extra ...client.ApplyOption) []client.ApplyOption {
	return append([]client.ApplyOption{client.FieldOwner(FieldManager), client.ForceOwnership}, extra...)
}

// AnnotationDesired holds a hash of the apply configuration an object was last applied from, for
// whoever reads the object; what Apply compares is AnnotationHeld.
const AnnotationDesired = "webhook-operator.seedlabs.dev/desired-hash"

// configuration is a typed apply configuration, such as *appsv1ac.DeploymentApplyConfiguration.
type configuration[T any] interface {
	runtime.ApplyConfiguration
	WithAnnotations(map[string]string) T
	WithUID(types.UID) T
	WithResourceVersion(string) T
}

// neverStored is a resourceVersion no stored object has: etcd's first write is revision 2.
const neverStored = "1"

// Apply server-side applies desired with opts, unless live (the object as the cache holds it, nil
// when there is none) holds what applying desired would give it: then applying could change
// nothing, and no request is made. Either way desired afterwards holds the object as stored, as
// far as the cache keeps it, as an apply leaves it.
//
// live holds desired when its AnnotationHeld, the hash of what the operator's field manager holds
// of it (or, for an object read past the cache, Held of it), is desired's: a field desired no longer sets, which the apply would remove, is still
// held; a field someone else changed, which the apply would put back, is no longer held.
//
// The apply changes only live, or only creates the object when live is nil, so that an object
// someone else created under the name after live was read, or in place of it, is refused instead
// of being taken over. Over live it carries live's uid: the API server refuses to change an
// object's uid (422 Invalid, metadata.uid is immutable). With no live object it carries a
// resourceVersion no object has: the API server ignores it when it creates the object, and
// refuses an apply to an existing one whose resourceVersion differs (409 Conflict).
func Apply[T configuration[T]](ctx context.Context, c client.Client, live client.Object, desired T, opts ...client.ApplyOption) error {
	holds, err := Holds(live, desired)
	if err != nil {
		return err
	}
	if holds {
		applies.WithLabelValues(kindOf(desired), "skipped").Inc()
		have, err := json.Marshal(live)
		if err != nil {
			return err
		}
		// desired becomes the stored object, as the reply to an apply would make it.
		return json.Unmarshal(have, desired)
	}
	result := "created"
	if isNil(live) {
		desired.WithResourceVersion(neverStored)
	} else {
		result = "applied"
		log.FromContext(ctx).V(1).Info("applying over an object that does not hold what the apply gives it",
			"kind", kindOf(desired), "name", live.GetName(), "namespace", live.GetNamespace())
		desired.WithUID(live.GetUID())
	}
	err = c.Apply(ctx, desired, opts...)
	if err != nil {
		result = "failed"
	}
	applies.WithLabelValues(kindOf(desired), result).Inc()
	return err
}

// Holds adds to desired its AnnotationDesired, and reports whether live (as the cache holds it, or
// read past it; nil when there is none) holds what applying desired would give it.
func Holds[T configuration[T]](live client.Object, desired T) (bool, error) {
	want, err := json.Marshal(desired)
	if err != nil {
		return false, fmt.Errorf("hashing the apply configuration: %w", err)
	}
	desired.WithAnnotations(map[string]string{AnnotationDesired: hashOf(want)})
	if isNil(live) {
		return false, nil
	}
	held, ok := heldBy(live)
	if !ok {
		return false, nil
	}
	applying, err := fingerprint(desired)
	if err != nil {
		return false, fmt.Errorf("hashing the apply configuration: %w", err)
	}
	return held == applying, nil
}

// heldBy is what the operator's field manager holds of live: its AnnotationHeld as the cache keeps
// it, or, for an object read past the cache, Held of its managedFields.
func heldBy(live client.Object) (string, bool) {
	if held, ok := live.GetAnnotations()[AnnotationHeld]; ok {
		return held, true
	}
	if len(live.GetManagedFields()) == 0 {
		return "", false
	}
	held, err := Held(live)
	return held, err == nil
}

// kindOf is the kind of an apply configuration, for metrics.
func kindOf(desired runtime.ApplyConfiguration) string {
	if k, ok := desired.(interface{ GetKind() *string }); ok && k.GetKind() != nil {
		return *k.GetKind()
	}
	return fmt.Sprintf("%T", desired)
}

func isNil(obj client.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// hashOf is a hash of a configuration's JSON; encoding/json writes struct fields in a fixed order
// and map keys sorted.
func hashOf(configuration []byte) string {
	sum := sha256.Sum256(configuration)
	return hex.EncodeToString(sum[:16])
}
