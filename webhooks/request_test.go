package webhooks

import (
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The one AdmissionRequest builder of the tests, and the kinds it builds requests for.

// testKind is a kind whose admission webhooks the tests drive.
type testKind struct {
	kind             string
	resource         metav1.GroupVersionResource
	mutate, validate string
	// defaults is the kind's defaulting rule.
	defaults func(runtime.Object)
}

var (
	welcomeKind = testKind{kind: "Welcome",
		resource: metav1.GroupVersionResource{Group: "auth.seedlabs.dev", Version: "v1alpha1", Resource: "welcomes"},
		mutate:   Welcome.MutatePath(), validate: Welcome.ValidatePath(),
		defaults: func(o runtime.Object) { Welcome.DefaultObject(o) }}
	memcachedKind = testKind{kind: "Memcached",
		resource: metav1.GroupVersionResource{Group: "cache.seedlabs.dev", Version: "v1alpha1", Resource: "memcacheds"},
		mutate:   Memcached.MutatePath(), validate: Memcached.ValidatePath(),
		defaults: func(o runtime.Object) { Memcached.DefaultObject(o) }}
	deployObjectKind = testKind{kind: "DeployObject",
		resource: metav1.GroupVersionResource{Group: "app.seedlabs.dev", Version: "v1", Resource: "deployobjects"},
		mutate:   DeployObject.MutatePath(), validate: DeployObject.ValidatePath(),
		defaults: func(o runtime.Object) { DeployObject.DefaultObject(o) }}
)

// scaleKind is the memcacheds/scale subresource, whose requests carry an autoscaling/v1 Scale.
var scaleKind = testKind{kind: "Scale", resource: memcachedKind.resource}

// newRequest is the request kube-apiserver sends for op on the object name of kind k in namespace
// (on its subresource, when set); object and old are sent when not nil, old never on a create.
// The uid is fixed per operation.
func newRequest(k testKind, name, namespace, subresource string, op admissionv1.Operation, object, old []byte) admissionv1.AdmissionRequest {
	req := admissionv1.AdmissionRequest{
		UID:         types.UID("0b9f0c8e-5d0e-4a59-9d3e-" + strings.ToLower(string(op) + "____")[:4] + "00000000"),
		Kind:        metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind},
		Resource:    k.resource,
		SubResource: subresource,
		Name:        name,
		Namespace:   namespace,
		Operation:   op,
		UserInfo:    authenticationv1.UserInfo{Username: "ada"},
	}
	if k.kind == "Scale" {
		req.Kind = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	}
	if object != nil {
		req.Object = runtime.RawExtension{Raw: object}
	}
	if old != nil && op != admissionv1.Create && op != admissionv1.Connect {
		req.OldObject = runtime.RawExtension{Raw: old}
	}
	return req
}

// fuzzReview is the review kube-apiserver sends for op on an object named fuzzed.
func fuzzReview(k testKind, namespace, subresource string, op admissionv1.Operation, object, old []byte) admissionv1.AdmissionReview {
	req := newRequest(k, "fuzzed", namespace, subresource, op, object, old)
	return admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req}
}

// handlerRequest is the request of newRequest as a handler receives it, in namespace default;
// object and old are JSON text, sent when not empty.
func handlerRequest(k testKind, name, subresource string, op admissionv1.Operation, object, old string) admission.Request {
	raw := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	return admission.Request{AdmissionRequest: newRequest(k, name, "default", subresource, op, raw(object), raw(old))}
}

func welcomeRequest(op admissionv1.Operation, object, old string) admission.Request {
	return handlerRequest(welcomeKind, "greeting", "", op, object, old)
}

func memcachedRequest(op admissionv1.Operation, object, old string) admission.Request {
	return handlerRequest(memcachedKind, "pool", "", op, object, old)
}

func deployObjectRequest(op admissionv1.Operation, object, old string) admission.Request {
	return handlerRequest(deployObjectKind, "app", "", op, object, old)
}

// scaleRequest is the request sent when the memcacheds/scale subresource (or, with another
// subresource, the Memcached) is written.
func scaleRequest(op admissionv1.Operation, subresource, object, old string) admission.Request {
	k := memcachedKind
	if subresource == "scale" {
		k = scaleKind
	}
	return handlerRequest(k, "pool", subresource, op, object, old)
}
