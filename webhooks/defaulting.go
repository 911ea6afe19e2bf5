package webhooks

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// defaultingWebhook is the mutating webhook of a kind, which defaults fills; an object past
// bounds, when set, is refused instead, as the kind's schema refuses it next.
func defaultingWebhook[T any, PT object[T]](scheme *runtime.Scheme, defaults func(PT), bounds func(PT) field.ErrorList) *admission.Webhook {
	return &admission.Webhook{Handler: defaulter[T, PT]{
		gvk: kindOf[T, PT](scheme), defaults: defaults, bounds: bounds,
	}}
}

// defaulter serves a defaulting rule as controller-runtime's admission.WithDefaulter does, with
// two differences: it decodes the object once (decodeObject), and its patch is made from the
// object as decoded and as defaulted (defaultingPatch), where controller-runtime marshals the
// defaulted object and diffs it with the object as sent, two more passes over the whole object.
// For the largest object kube-apiserver sends (3 MiB) those passes took 66 ms, half the handler's
// time (docs/performance.md). Both patches make the same
// object of every object, which the fuzz targets of the kinds hold to (checkAdmission); they differ
// in form: controller-runtime's also rewrites what the object's Go type would encode otherwise (a
// quantity's spelling, an empty status), and this one sets with "add" what it changes.
type defaulter[T any, PT object[T]] struct {
	gvk      schema.GroupVersionKind
	defaults func(PT)
	bounds   func(PT) field.ErrorList
}

// Handle implements admission.Handler.
func (d defaulter[T, PT]) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Delete {
		return admission.Allowed("")
	}
	obj := PT(new(T))
	if err := decodeObject(req.Object.Raw, d.gvk, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if d.bounds != nil {
		if errs := d.bounds(obj); len(errs) > 0 {
			status := Refusal(d.gvk.GroupKind(), obj.GetName(), errs).ErrStatus
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
		}
	}
	defaulted := obj.DeepCopyObject().(PT)
	d.defaults(defaulted)
	patch := defaultingPatch(req.Object.Raw, reflect.ValueOf(obj).Elem(), reflect.ValueOf(defaulted).Elem())
	if len(patch) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", patch...)
}

// defaultingPatch is the JSON patch that makes of raw, decoded into a, its defaulted copy b: the
// two are walked alike by their JSON names, into what differs, and what differs is set whole where
// the walk stops. The walk goes into a struct whose JSON object is in raw (one that is not zero
// was decoded from it; a zero one is looked up) and into the elements of a slice whose length
// defaulting left alone; it stops at a type that marshals itself, a map, a pointer, a struct
// raw does not hold as an object, and a slice whose length changed. An object's member is set with
// "add" (which sets it, whether it was there or not), an element with "replace", and a member b
// omits is removed. Its cost is a comparison of the two objects and the JSON of what changed,
// where diffing their JSON costs two encodings and two decodings of all of it.
func defaultingPatch(raw []byte, a, b reflect.Value) []jsonpatch.JsonPatchOperation {
	p := patcher{raw: raw}
	p.value("", a, b, true)
	return p.ops
}

// patcher makes a defaulting patch for the object raw.
type patcher struct {
	raw []byte
	// docs are the parts of raw decoded so far, by path.
	docs map[string]json.RawMessage
	ops  []jsonpatch.JsonPatchOperation
}

func (p *patcher) value(path string, a, b reflect.Value, member bool) {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return
	}
	switch {
	case a.Kind() == reflect.Struct && !marshalsItself(a.Type()) && (!a.IsZero() || p.isObject(path)):
		p.fields(path, a, b)
	case a.Kind() == reflect.Slice && !marshalsItself(a.Type()) && !a.IsNil() && a.Len() == b.Len():
		for i := range a.Len() {
			p.value(path+"/"+strconv.Itoa(i), a.Index(i), b.Index(i), false)
		}
	case member:
		p.ops = append(p.ops, jsonpatch.NewOperation("add", path, b.Interface()))
	default:
		p.ops = append(p.ops, jsonpatch.NewOperation("replace", path, b.Interface()))
	}
}

// fields walks the fields of the structs a and b as encoding/json marshals them: by their JSON
// names, an embedded struct without a name as part of the same object, unexported and "-" fields
// left out.
func (p *patcher) fields(path string, a, b reflect.Value) {
	for i := range a.NumField() {
		f := a.Type().Field(i)
		tag := f.Tag.Get("json")
		name, options, _ := strings.Cut(tag, ",")
		switch {
		case !f.IsExported() || tag == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			p.fields(path, a.Field(i), b.Field(i))
			continue
		case name == "":
			name = f.Name
		}
		name = pointerToken.Replace(name)
		af, bf := a.Field(i), b.Field(i)
		switch aOmitted, bOmitted := omitted(af, options), omitted(bf, options); {
		case bOmitted && !aOmitted:
			p.ops = append(p.ops, jsonpatch.NewOperation("remove", path+"/"+name, nil))
		case !bOmitted:
			p.value(path+"/"+name, af, bf, true)
		}
	}
}

// isObject is whether raw holds a JSON object at path.
func (p *patcher) isObject(path string) bool {
	doc := bytes.TrimSpace(p.doc(path))
	return len(doc) > 0 && doc[0] == '{'
}

// doc is the JSON raw holds at path, nil if none. Each object or array on the way is decoded
// once, its members or elements kept by path, so that looking up every element of a list costs
// one decoding of the list.
func (p *patcher) doc(path string) json.RawMessage {
	if path == "" {
		return p.raw
	}
	if doc, ok := p.docs[path]; ok {
		return doc
	}
	if p.docs == nil {
		p.docs = map[string]json.RawMessage{}
	}
	parentPath := path[:strings.LastIndexByte(path, '/')]
	parent := bytes.TrimSpace(p.doc(parentPath))
	var members map[string]json.RawMessage
	var elements []json.RawMessage
	switch {
	case len(parent) == 0:
	case parent[0] == '{' && json.Unmarshal(parent, &members) == nil:
		for name, doc := range members {
			p.docs[parentPath+"/"+pointerToken.Replace(name)] = doc
		}
	case parent[0] == '[' && json.Unmarshal(parent, &elements) == nil:
		for i, doc := range elements {
			p.docs[parentPath+"/"+strconv.Itoa(i)] = doc
		}
	}
	if _, ok := p.docs[path]; !ok {
		p.docs[path] = nil
	}
	return p.docs[path]
}

// omitted is whether encoding/json leaves the field of value v and tag options out of its object.
func omitted(v reflect.Value, options string) bool {
	for o := range strings.SplitSeq(options, ",") {
		switch o {
		case "omitempty":
			switch v.Kind() {
			case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
				if v.Len() == 0 {
					return true
				}
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
				reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
				if v.IsZero() {
					return true
				}
			}
		case "omitzero":
			if z, ok := v.Interface().(interface{ IsZero() bool }); ok && (v.Kind() != reflect.Pointer || !v.IsNil()) {
				if z.IsZero() {
					return true
				}
			} else if v.IsZero() {
				return true
			}
		}
	}
	return false
}

// pointerToken escapes a name as a JSON pointer's token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalsItself is whether encoding/json leaves values of t to their own MarshalJSON or
// MarshalText, whose JSON need not follow t's fields.
func marshalsItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || p.Implements(jsonMarshaler) || t.Implements(textMarshaler) || p.Implements(textMarshaler)
}
