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
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationDesired holds a hash of the apply configuration an object was last applied from.
const AnnotationDesired = "webhook-operator.seedlabs.dev/desired-hash"

// configuration is a typed apply configuration, such as *appsv1ac.DeploymentApplyConfiguration.
type configuration[T any] interface {
	runtime.ApplyConfiguration
	WithAnnotations(map[string]string) T
}

// Apply server-side applies desired with opts, unless live (the object as the cache holds it, nil
// when there is none) was last applied from the same configuration and still holds every value
// desired sets: then applying could change nothing, and no request is made. Either way desired
// afterwards holds the object as stored, as an apply leaves it.
//
// The hash catches a field desired no longer sets, which the apply would remove; the comparison
// catches a field someone else changed, which the apply would put back.
func Apply[T configuration[T]](ctx context.Context, c client.Client, live client.Object, desired T, opts ...client.ApplyOption) error {
	hash, err := hashOf(desired)
	if err != nil {
		return err
	}
	desired.WithAnnotations(map[string]string{AnnotationDesired: hash})
	if !isNil(live) && live.GetAnnotations()[AnnotationDesired] == hash {
		holds, err := holds(live, desired)
		if err != nil {
			return err
		}
		if holds {
			return fill(desired, live)
		}
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

// hashOf is a hash of the configuration's JSON; encoding/json writes struct fields in a fixed
// order and map keys sorted.
func hashOf(desired any) (string, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return "", fmt.Errorf("hashing the apply configuration: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// holds reports whether live has every value desired sets.
func holds(live client.Object, desired any) (bool, error) {
	want, err := toJSONValue(desired)
	if err != nil {
		return false, err
	}
	// A typed object read from the API server or the cache may come without its kind.
	if m, ok := want.(map[string]any); ok {
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	have, err := toJSONValue(live)
	if err != nil {
		return false, err
	}
	return Subset(want, have), nil
}

func toJSONValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(data, &out)
}

// fill makes desired the stored object, as the reply to an apply would.
func fill(desired any, live client.Object) error {
	data, err := json.Marshal(live)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, desired)
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
