package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// AnnotationHeld is set on the Deployment or Service the manager's client reads from its cache,
// never on the object itself, to Held of the object: a hash of what the operator's field manager
// holds of it.
//
// Server-side apply gives every field of an apply configuration to its field manager, and a field
// leaves it when anyone else changes its value (kubectl edit or patch, another apply, the scale
// subresource) or removes it. So the configuration client-go extracts from the object's
// managedFields for the operator's manager, with the object's values, is exactly what applying
// gave the object and still holds: when it is the desired configuration, applying could change
// nothing. The cache then needs only its hash, and whatever else the object holds, the defaults
// of its pod template or what someone added by hand, costs it nothing.
const AnnotationHeld = "webhook-operator.seedlabs.dev/held"

// AnnotationMorePorts is set on the Service the manager's client reads from its cache when the
// cache does not keep its ports, more than any custom resource's Service has:
// ReplaceForeignServicePorts reads them past the cache.
const AnnotationMorePorts = "webhook-operator.seedlabs.dev/more-ports"

// Held is the hash of what the operator's field manager holds of obj, a Deployment or a Service
// as the API server returns it, with its managedFields: the value of AnnotationHeld.
func Held(obj any) (string, error) {
	var held any
	var err error
	switch o := obj.(type) {
	case *appsv1.Deployment:
		held, err = appsv1ac.ExtractDeployment(o, FieldManager)
	case *corev1.Service:
		held, err = corev1ac.ExtractService(o, FieldManager)
	default:
		return "", fmt.Errorf("no apply configuration of %T", obj)
	}
	if err != nil {
		return "", fmt.Errorf("extracting what %s holds: %w", FieldManager, err)
	}
	return fingerprint(held)
}

// fingerprint is the hash of a configuration, from its JSON with every empty value left out:
// the API server stores no empty list or map, so a field a configuration sets to one is absent
// from what is extracted.
func fingerprint(configuration any) (string, error) {
	data, err := json.Marshal(configuration)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return "", err
	}
	if data, err = json.Marshal(withoutEmpty(v)); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// withoutEmpty is v, decoded JSON, without its empty values, at any depth.
func withoutEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if child = withoutEmpty(child); isEmpty(child) {
				delete(v, k)
			} else {
				v[k] = child
			}
		}
	case []any:
		for i := range v {
			v[i] = withoutEmpty(v[i])
		}
	}
	return v
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
