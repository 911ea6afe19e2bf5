package webhooks

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ratchet drops from errs every violation the old object already had, so that an update is judged
// only on what it changes: an object stored before a rule existed (or before policy tightened) can
// still have its other fields and its metadata edited. oldErrs is nil on create.
//
// A violation is the old one only if the value at its field is unchanged too. The error alone does
// not say so: a Forbidden or Required error carries no bad value, and many others name a part of
// what they judge, so a secretKeyRef repointed to another Secret, or a blank name replaced by
// another blank, would be the same error at the same field. A violation whose field does not
// resolve in both objects (valueAt) is kept.
func ratchet(errs, oldErrs field.ErrorList, old, obj runtime.Object) field.ErrorList {
	return ratchetWhere(errs, oldErrs, unchangedAt(old, obj))
}

// ratchetWhere is ratchet, with unchanged telling whether the value at a field path is the same
// in the old object and the new.
func ratchetWhere(errs, oldErrs field.ErrorList, unchanged func(path string) bool) field.ErrorList {
	if len(oldErrs) == 0 {
		return errs
	}
	known := make(map[string]bool, len(oldErrs))
	for _, e := range oldErrs {
		known[violationKey(e)] = true
	}
	kept := errs[:0:0]
	for _, e := range errs {
		if !known[violationKey(e)] || !unchanged(e.Field) {
			kept = append(kept, e)
		}
	}
	return kept
}

// violationKey tells violations apart by type, field and bad value.
func violationKey(e *field.Error) string {
	return fmt.Sprintf("%s\x00%s\x00%#v", e.Type, e.Field, e.BadValue)
}

// unchangedAt reports whether the value at a field path, as field.Path prints it, is semantically
// the same in old and obj. Both are converted to unstructured on the first call only, so an update
// that keeps no violation does not pay for it.
func unchangedAt(old, obj runtime.Object) func(path string) bool {
	objects := sync.OnceValues(func() (map[string]any, map[string]any) {
		before, errBefore := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
		after, errAfter := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if errBefore != nil || errAfter != nil {
			return nil, nil
		}
		return before, after
	})
	return func(path string) bool {
		before, after := objects()
		if before == nil || after == nil {
			return false
		}
		was, resolved := valueAt(before, "."+path)
		is, resolvedToo := valueAt(after, "."+path)
		return resolved && resolvedToo && equality.Semantic.DeepEqual(was, is)
	}
}

// valueAt finds the value at path in v, an unstructured object, where path is a field path as
// field.Path prints it, each step led by its separator: ".spec.env[2].valueFrom",
// ".metadata.labels[app.kubernetes.io/name]". A field or key the object lacks is nil, and so is
// everything under it. It fails where the object has another shape than the path (a field of a
// list or of a scalar, an index past a list's end), and where the path reads two ways: a map key
// may hold '.', '[' and ']', so a key is matched against the map's own keys, never cut out of the
// path, and a path that resolves through more than one of them is not resolved.
func valueAt(v any, path string) (any, bool) {
	if path == "" || v == nil {
		return v, true
	}
	switch v := v.(type) {
	case map[string]any:
		if rest, isField := strings.CutPrefix(path, "."); isField {
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			return valueAt(v[rest[:end]], rest[end:])
		}
		var found any
		matches, resolved := 0, 0
		for key, child := range v {
			rest, isKey := strings.CutPrefix(path, "["+key+"]")
			if !isKey {
				continue
			}
			matches++
			if value, ok := valueAt(child, rest); ok {
				found, resolved = value, resolved+1
			}
		}
		if matches == 0 {
			return nil, strings.HasPrefix(path, "[") && strings.Contains(path, "]")
		}
		return found, resolved == 1
	case []any:
		rest, isIndex := strings.CutPrefix(path, "[")
		end := strings.IndexByte(rest, ']')
		if !isIndex || end < 0 {
			return nil, false
		}
		i, err := strconv.Atoi(rest[:end])
		if err != nil || i < 0 || i >= len(v) {
			return nil, false
		}
		return valueAt(v[i], rest[end+1:])
	}
	return nil, false
}
