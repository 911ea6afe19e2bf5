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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/resources"
)

// Options are the options of every apply of the operator's: its one field manager, which takes
// back fields another manager changed, and extra.
func Options(extra ...client.ApplyOption) []client.ApplyOption {
	return append([]client.ApplyOption{client.FieldOwner(resources.FieldManager), client.ForceOwnership}, extra...)
}

// AnnotationDesired holds a hash of the apply configuration an object was last applied from.
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
// when there is none) was last applied from the same configuration and still holds every value
// desired sets: then applying could change nothing, and no request is made. Either way desired
// afterwards holds the object as stored, as an apply leaves it.
//
// The hash catches a field desired no longer sets, which the apply would remove; the comparison
// catches a field someone else changed, which the apply would put back.
//
// The apply changes only live, or only creates the object when live is nil, so that an object
// someone else created under the name after live was read, or in place of it, is refused instead
// of being taken over. Over live it carries live's uid: the API server refuses to change an
// object's uid (422 Invalid, metadata.uid is immutable). With no live object it carries a
// resourceVersion no object has: the API server ignores it when it creates the object, and
// refuses an apply to an existing one whose resourceVersion differs (409 Conflict).
func Apply[T configuration[T]](ctx context.Context, c client.Client, live client.Object, desired T, opts ...client.ApplyOption) error {
	want, err := json.Marshal(desired)
	if err != nil {
		return fmt.Errorf("hashing the apply configuration: %w", err)
	}
	hash := hashOf(want)
	desired.WithAnnotations(map[string]string{AnnotationDesired: hash})
	// The annotation is compared here; the rest of desired is compared below without it.
	if !isNil(live) && live.GetAnnotations()[AnnotationDesired] == hash {
		have, err := json.Marshal(live)
		if err != nil {
			return err
		}
		holds, err := holds(want, have)
		if err != nil {
			return err
		}
		if holds {
			// desired becomes the stored object, as the reply to an apply would make it.
			return json.Unmarshal(have, desired)
		}
	}
	if isNil(live) {
		desired.WithResourceVersion(neverStored)
	} else {
		desired.WithUID(live.GetUID())
	}
	return c.Apply(ctx, desired, opts...)
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

// holds reports whether the object in JSON have has every value the configuration in JSON want sets.
func holds(want, have []byte) (bool, error) {
	var w, h any
	if err := json.Unmarshal(want, &w); err != nil {
		return false, err
	}
	if err := json.Unmarshal(have, &h); err != nil {
		return false, err
	}
	// A typed object read from the API server or the cache may come without its kind.
	if m, ok := w.(map[string]any); ok {
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	return Subset(w, h), nil
}

// Subset reports whether every value in want is in have, for decoded JSON: an object's keys must
// all be in have with values that hold, a list must have as many items as have's and each must
// hold, and anything else must be equal. have may hold more keys than want: defaults, fields the
// API server sets, and fields other managers own; and it may leave out a key whose value in want
// is empty.
func Subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok && isEmpty(wv) {
				// The API server leaves out what is empty.
				continue
			}
			if !ok || !Subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !Subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return want == have
	}
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
