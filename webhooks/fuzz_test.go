package webhooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// fuzzedKind is a kind whose admission webhooks a fuzz target drives over HTTP.
type fuzzedKind struct {
	kind             string
	resource         metav1.GroupVersionResource
	mutate, validate string
	// defaults is the kind's defaulting rule.
	defaults func(runtime.Object)
}

var (
	welcomeKind = fuzzedKind{kind: "Welcome",
		resource: metav1.GroupVersionResource{Group: "auth.seedlabs.dev", Version: "v1alpha1", Resource: "welcomes"},
		mutate:   "/mutate-auth-seedlabs-dev-v1alpha1-welcome", validate: "/validate-auth-seedlabs-dev-v1alpha1-welcome",
		defaults: func(o runtime.Object) { DefaultWelcome(o.(*authv1alpha1.Welcome)) }}
	memcachedKind = fuzzedKind{kind: "Memcached",
		resource: metav1.GroupVersionResource{Group: "cache.seedlabs.dev", Version: "v1alpha1", Resource: "memcacheds"},
		mutate:   "/mutate-cache-seedlabs-dev-v1alpha1-memcached", validate: "/validate-cache-seedlabs-dev-v1alpha1-memcached",
		defaults: func(o runtime.Object) { DefaultMemcached(o.(*cachev1alpha1.Memcached)) }}
	deployObjectKind = fuzzedKind{kind: "DeployObject",
		resource: metav1.GroupVersionResource{Group: "app.seedlabs.dev", Version: "v1", Resource: "deployobjects"},
		mutate:   "/mutate-app-seedlabs-dev-v1-deployobject", validate: "/validate-app-seedlabs-dev-v1-deployobject",
		defaults: func(o runtime.Object) { DefaultDeployObject(o.(*appv1.DeployObject)) }}
)

func FuzzWelcomeAdmission(f *testing.F)      { fuzzAdmission(f, welcomeKind) }
func FuzzMemcachedAdmission(f *testing.F)    { fuzzAdmission(f, memcachedKind) }
func FuzzDeployObjectAdmission(f *testing.F) { fuzzAdmission(f, deployObjectKind) }

// fuzzHandlers are the webhooks as Setup registers them, under the image policy the envtest
// suite uses, with panics left to crash the fuzz target instead of turning into a 500 reply.
func fuzzHandlers(tb testing.TB) map[string]*admissionWebhook {
	tb.Helper()
	policy, err := NewImagePolicy(fixtures.AllowedRegistries)
	if err != nil {
		tb.Fatal(err)
	}
	return testWebhooks(policy)
}

// sampleSeeds returns every sample of kind in config/samples, valid and invalid, as JSON.
func sampleSeeds(tb testing.TB, kind string) [][]byte {
	tb.Helper()
	var seeds [][]byte
	for _, pattern := range []string{"../config/samples/*.yaml", "../config/samples/invalid/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			tb.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			obj, err := yaml.YAMLToJSON(data)
			if err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			if strings.Contains(string(obj), `"kind":"`+kind+`"`) {
				seeds = append(seeds, obj)
			}
		}
	}
	if len(seeds) == 0 {
		tb.Fatalf("no sample of %s in config/samples", kind)
	}
	return seeds
}

// fuzzAdmission sends each input to the kind's webhooks as kube-apiserver would, as a create and
// as updates, and requires of every reply that it decodes, carries the request's uid and agrees
// with controller-runtime's webhook of the same rules (requireAlike), and of the webhooks that
//   - a patch applies to the object it was made for, and makes of it exactly what the kind's
//     defaulting rule makes;
//   - defaulting is idempotent: the defaulted object gets no further patch;
//   - defaulting never makes an object the validating webhook admits refused;
//   - an update that changes nothing is never refused, whatever the object.
func fuzzAdmission(f *testing.F, k fuzzedKind) {
	for _, seed := range sampleSeeds(f, k.kind) {
		f.Add(seed)
	}
	handlers := fuzzHandlers(f)
	mutate, validate := handlers[k.mutate], handlers[k.validate]
	f.Fuzz(func(t *testing.T, object []byte) {
		reply := review(t, mutate, k, admissionv1.Create, object, nil)
		if !reply.Allowed {
			return // not an object of the kind; the reply was still well formed
		}
		defaulted := object
		if len(reply.Patch) > 0 {
			patch, err := jsonpatch.DecodePatch(reply.Patch)
			if err != nil {
				t.Fatalf("the patch %s does not decode: %v", reply.Patch, err)
			}
			if defaulted, err = patch.Apply(object); err != nil {
				t.Fatalf("the patch %s does not apply to %s: %v", reply.Patch, object, err)
			}
			if again := review(t, mutate, k, admissionv1.Create, defaulted, nil); len(again.Patch) > 0 && string(again.Patch) != "[]" {
				t.Fatalf("defaulting is not idempotent: %s defaulted to %s, which gets the patch %s", object, defaulted, again.Patch)
			}
		}
		kind := metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind}
		want := patchedObject(t, kind, object, nil)
		k.defaults(want)
		if got := patchedObject(t, kind, defaulted, nil); !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("the patch %s makes %s of %s, which defaulting makes %s", reply.Patch, asJSON(got), object, asJSON(want))
		}
		review(t, mutate, k, admissionv1.Update, object, defaulted)
		review(t, validate, k, admissionv1.Update, defaulted, object)
		if review(t, validate, k, admissionv1.Create, object, nil).Allowed &&
			!review(t, validate, k, admissionv1.Create, defaulted, nil).Allowed {
			t.Fatalf("defaulting made an admitted object refused: %s defaulted to %s", object, defaulted)
		}
		if noop := review(t, validate, k, admissionv1.Update, defaulted, defaulted); !noop.Allowed {
			t.Fatalf("an update that changes nothing is refused: %s: %v", defaulted, noop.Result)
		}
	})
}

// FuzzMemcachedScaleAdmission sends Scale updates to the scale subresource's webhook: every reply
// decodes with the request's uid, and keeping the replicas is never refused.
func FuzzMemcachedScaleAdmission(f *testing.F) {
	for _, replicas := range []int32{-1, 0, 1, 3, 4, 1 << 30} {
		f.Add(replicas, replicas)
		f.Add(replicas, replicas+1)
	}
	scale := fuzzHandlers(f)[memcachedScalePath]
	k := fuzzedKind{kind: "Scale", resource: metav1.GroupVersionResource{Group: "cache.seedlabs.dev", Version: "v1alpha1", Resource: "memcacheds"}}
	f.Fuzz(func(t *testing.T, oldReplicas, replicas int32) {
		obj := func(r int32) []byte {
			return []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"m","namespace":"default"},"spec":{"replicas":` +
				jsonNumber(r) + `}}`)
		}
		reply := reviewSubresource(t, scale, k, "scale", admissionv1.Update, obj(replicas), obj(oldReplicas))
		requireAlike(t, metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, obj(replicas), reply,
			reviewSubresource(t, scale.exact, k, "scale", admissionv1.Update, obj(replicas), obj(oldReplicas)))
		if oldReplicas == replicas && !reply.Allowed {
			t.Fatalf("keeping %d replicas is refused: %v", replicas, reply.Result)
		}
		inRange := replicas >= cachev1alpha1.MinSize && replicas <= cachev1alpha1.MaxSize
		if inRange && !reply.Allowed {
			t.Fatalf("%d replicas, within the range, is refused: %v", replicas, reply.Result)
		}
		if !inRange && replicas > oldReplicas && reply.Allowed {
			t.Fatalf("raising replicas from %d to %d, outside the range, is admitted", oldReplicas, replicas)
		}
	})
}

func jsonNumber(n int32) string {
	data, _ := json.Marshal(n)
	return string(data)
}

// review sends one AdmissionReview to h, and to controller-runtime's webhook of the same rules,
// and returns h's response after requiring the two to agree (requireAlike).
func review(t *testing.T, h *admissionWebhook, k fuzzedKind, op admissionv1.Operation, object, old []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	got := reviewSubresource(t, h, k, "", op, object, old)
	want := reviewSubresource(t, h.exact, k, "", op, object, old)
	requireAlike(t, metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind}, object, got, want)
	return got
}

// reviewSubresource posts one AdmissionReview to h as kube-apiserver does, and returns the
// response after checking that it is well formed.
func reviewSubresource(t *testing.T, h http.Handler, k fuzzedKind, subresource string, op admissionv1.Operation, object, old []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	uid := types.UID("0b9f0c8e-5d0e-4a59-9d3e-" + strings.ToLower(string(op))[:4] + "00000000")
	req := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:         uid,
			Kind:        metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind},
			Resource:    k.resource,
			SubResource: subresource,
			Name:        "fuzzed",
			Namespace:   "default",
			Operation:   op,
			UserInfo:    authenticationv1.UserInfo{Username: "fuzzer"},
			Object:      runtime.RawExtension{Raw: object},
		},
	}
	if old != nil {
		req.Request.OldObject = runtime.RawExtension{Raw: old}
	}
	body, err := json.Marshal(req)
	if err != nil {
		// The object is not JSON: kube-apiserver never sends such a request.
		t.Skip()
	}
	httpReq := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	httpReq.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httpReq)

	var reply admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
		t.Fatalf("the reply %q (HTTP %d) does not decode: %v", rec.Body.String(), rec.Code, err)
	}
	if reply.Response == nil || reply.Response.UID != uid {
		t.Fatalf("the reply %s does not carry the request's uid %s", rec.Body.String(), uid)
	}
	return reply.Response
}
