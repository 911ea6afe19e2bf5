package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

func FuzzWelcomeAdmission(f *testing.F)      { fuzzAdmission(f, welcomeKind) }
func FuzzMemcachedAdmission(f *testing.F)    { fuzzAdmission(f, memcachedKind) }
func FuzzDeployObjectAdmission(f *testing.F) { fuzzAdmission(f, deployObjectKind) }

// fuzzHandlers are the webhooks as Setup registers them in the manager: with a policy source, the
// namespaces' labels and an Event recorder. The policy Audits every rule a policy may relax in the
// namespace fuzzRelaxed, and holds the others to the defaults, under the image policy the envtest
// suite uses. Panics are left to crash the fuzz target instead of turning into a 500 reply.
func fuzzHandlers(tb testing.TB) map[string]*admission.Webhook {
	tb.Helper()
	spec := policyv1.AdmissionPolicySpec{AllowedRegistries: fixtures.AllowedRegistries}
	for _, r := range Rules() {
		if slices.Equal(r.Actions, anyAction) {
			spec.Rules = append(spec.Rules, policyv1.RulePolicy{ID: string(r.ID), Action: policyv1.Enforce,
				Namespaces: []policyv1.NamespaceAction{{
					Selector: metav1.LabelSelector{MatchLabels: map[string]string{"policy": "relaxed"}},
					Action:   policyv1.Audit,
				}},
			})
		}
	}
	policy, errs := NewPolicy(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}, Spec: spec}, ImagePolicy{})
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	webhooks := admissionWebhooks(testScheme, Options{
		Policy: StaticPolicy{Policy: policy},
		Namespaces: namespaceLabelsFunc(func(name string) map[string]string {
			if name == fuzzRelaxed {
				return map[string]string{"policy": "relaxed"}
			}
			return nil
		}),
		Recorder: &events.FakeRecorder{},
	})
	for _, h := range webhooks {
		h.WithRecoverPanic(false)
	}
	return webhooks
}

// The namespaces the fuzz targets send requests for: one under the default actions, one where
// the policy Audits every rule it may relax.
const (
	fuzzStrict  = "default"
	fuzzRelaxed = "relaxed"
)

// namespaceLabelsFunc serves the labels of namespaces from a function.
type namespaceLabelsFunc func(name string) map[string]string

func (f namespaceLabelsFunc) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	return f(name), nil
}

// HasNamespace knows every namespace.
func (namespaceLabelsFunc) HasNamespace(context.Context, string) bool { return true }

// sampleSeeds returns every sample of kind in config/samples, valid and invalid, as JSON at
// version of its group: the samples are at the version stored, and those of a Welcome have no
// password, so each reads the same at v1alpha1.
func sampleSeeds(tb testing.TB, kind, version string) [][]byte {
	tb.Helper()
	var seeds [][]byte
	for _, pattern := range []string{"../config/samples/*.yaml", "../config/samples/invalid/*.yaml", "../config/samples/policy/*.yaml"} {
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
				seeds = append(seeds, atVersion(tb, obj, version))
			}
		}
	}
	if len(seeds) == 0 {
		tb.Fatalf("no sample of %s in config/samples", kind)
	}
	return seeds
}

// atVersion is the JSON object obj with its apiVersion at version of its group.
func atVersion(tb testing.TB, obj []byte, version string) []byte {
	tb.Helper()
	var fields map[string]any
	if err := json.Unmarshal(obj, &fields); err != nil {
		tb.Fatal(err)
	}
	apiVersion, _ := fields["apiVersion"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	fields["apiVersion"] = group + "/" + version
	out, err := json.Marshal(fields)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fuzzAdmission sends each input to the kind's webhooks as kube-apiserver would, as a create and
// as updates, and requires of every reply that it decodes and carries the request's uid, and of
// the webhooks that
//   - a patch applies to the object it was made for, and makes of it exactly what the kind's
//     defaulting rule makes, and what controller-runtime's patch makes (the defaulter's patch is
//     its own, for speed: defaulting.go);
//   - defaulting is idempotent: the defaulted object gets no further patch;
//   - defaulting never makes an object the validating webhook admits refused;
//   - an update that changes nothing is never refused, whatever the object, and neither is a
//     delete; a connect gets a well-formed reply;
//   - what is admitted under the default actions is admitted where the policy relaxes rules.
func fuzzAdmission(f *testing.F, k testKind) {
	for _, seed := range sampleSeeds(f, k.kind, k.resource.Version) {
		f.Add(seed)
	}
	handlers := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, object []byte) {
		if !json.Valid(object) {
			t.Skip() // kube-apiserver sends JSON; FuzzAdmissionReviewBody sends the rest
		}
		checkAdmission(t, handlers, k, object)
	})
}

// FuzzDeployObjectSpec makes DeployObjects of the values the fuzzer chooses for every field a rule
// of the Pod or Service API reads (fixtures.FuzzedSpec), and holds their admission to what
// fuzzAdmission holds it to. Its corpus in webhooks/testdata/fuzz, inputs on either side of the
// rules' branches, is what the contract test in test/integration applies through the API server.
func FuzzDeployObjectSpec(f *testing.F) {
	for _, seed := range fixtures.FuzzedSpecSeeds {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4], seed[5], seed[6], seed[7],
			seed[8], seed[9], seed[10], seed[11], seed[12], seed[13], seed[14], seed[15])
	}
	handlers := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, name, image, replicas, portName, port, targetPort, protocol, appProtocol,
		envName, envValue, envSource, envRef, envKey, resourceName, limit, request string,
	) {
		d := fixtures.FuzzedSpec{name, image, replicas, portName, port, targetPort, protocol, appProtocol,
			envName, envValue, envSource, envRef, envKey, resourceName, limit, request}.DeployObject("default")
		d.APIVersion, d.Kind = appv1.GroupVersion.String(), "DeployObject"
		object, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		checkAdmission(t, handlers, deployObjectKind, object)
	})
}

// checkAdmission sends object to the kind's webhooks as fuzzAdmission says.
func checkAdmission(t *testing.T, handlers map[string]*admission.Webhook, k testKind, object []byte) {
	t.Helper()
	if namesTypeMetaOtherwise(object) {
		return // read as kube-apiserver reads it, not as controller-runtime's decoder, which the checks below use (decodeObject)
	}
	mutate, validate := handlers[k.mutate], handlers[k.validate]
	reply := review(t, mutate, k, fuzzStrict, admissionv1.Create, object, nil)
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
		if again := review(t, mutate, k, fuzzStrict, admissionv1.Create, defaulted, nil); len(again.Patch) > 0 && string(again.Patch) != "[]" {
			t.Fatalf("defaulting is not idempotent: %s defaulted to %s, which gets the patch %s", object, defaulted, again.Patch)
		}
	}
	kind := metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind}
	want := patchedObject(t, kind, object, nil)
	k.defaults(want)
	if got := patchedObject(t, kind, defaulted, nil); !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("the patch %s makes %s of %s, which defaulting makes %s", reply.Patch, asJSON(got), object, asJSON(want))
	}
	if original := review(t, controllerRuntimeDefaulting(k), k, fuzzStrict, admissionv1.Create, object, nil); !original.Allowed {
		t.Fatalf("%s is defaulted, and refused by the defaulting rule as controller-runtime serves it: %v", object, original.Result)
	} else if got := patchedObject(t, kind, object, original.Patch); !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("the patch %s makes %s of %s, and controller-runtime's patch %s makes %s", reply.Patch, asJSON(want), object, original.Patch, asJSON(got))
	}
	review(t, mutate, k, fuzzStrict, admissionv1.Update, object, defaulted)
	review(t, validate, k, fuzzStrict, admissionv1.Update, defaulted, object)
	// admitted is whether the defaulted object is admitted, by namespace.
	admitted := map[string]bool{}
	for _, ns := range []string{fuzzStrict, fuzzRelaxed} {
		admitted[ns] = review(t, validate, k, ns, admissionv1.Create, defaulted, nil).Allowed
		if !admitted[ns] && review(t, validate, k, ns, admissionv1.Create, object, nil).Allowed {
			t.Fatalf("in namespace %s, defaulting made an admitted object refused: %s defaulted to %s", ns, object, defaulted)
		}
		for _, obj := range [][]byte{object, defaulted} {
			if noop := review(t, validate, k, ns, admissionv1.Update, obj, obj); !noop.Allowed {
				t.Fatalf("in namespace %s, an update that changes nothing is refused: %s: %v", ns, obj, noop.Result)
			}
		}
	}
	if admitted[fuzzStrict] && !admitted[fuzzRelaxed] {
		t.Fatalf("admitted under the default actions but refused where the policy relaxes rules: %s", defaulted)
	}
	if del := review(t, validate, k, fuzzStrict, admissionv1.Delete, nil, defaulted); !del.Allowed {
		t.Fatalf("a delete is refused: %s: %v", defaulted, del.Result)
	}
	review(t, validate, k, fuzzStrict, admissionv1.Connect, object, nil)
}

// FuzzAdmissionPolicyAdmission sends each input to the AdmissionPolicy's webhook as a create and as
// updates: every reply decodes and carries the request's uid; a policy admitted on create compiles, and an update of it that changes nothing is
// admitted.
func FuzzAdmissionPolicyAdmission(f *testing.F) {
	for _, seed := range sampleSeeds(f, "AdmissionPolicy", "v1") {
		f.Add(seed)
	}
	validate := fuzzHandlers(f)[admissionPolicyPath]
	k := testKind{kind: "AdmissionPolicy",
		resource: metav1.GroupVersionResource{Group: "policy.seedlabs.dev", Version: "v1", Resource: "admissionpolicies"}}
	f.Fuzz(func(t *testing.T, object []byte) {
		if !json.Valid(object) || namesTypeMetaOtherwise(object) {
			// kube-apiserver sends JSON, spelling apiVersion and kind one way (decodeObject);
			// FuzzAdmissionReviewBody sends the rest.
			t.Skip()
		}
		if !review(t, validate, k, "", admissionv1.Create, object, nil).Allowed {
			return
		}
		p := patchedObject(t, metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind}, object, nil)
		if _, errs := NewPolicy(p.(*policyv1.AdmissionPolicy), ImagePolicy{}); len(errs) > 0 {
			t.Fatalf("an admitted policy does not compile: %s: %v", object, errs)
		}
		if noop := review(t, validate, k, "", admissionv1.Update, object, object); !noop.Allowed {
			t.Fatalf("an update that changes nothing is refused: %s: %v", object, noop.Result)
		}
	})
}

// FuzzAdmissionReviewBody posts any body to any of the webhooks, seeded with well-formed reviews
// of every operation and with malformed ones: the webhook never panics, and its reply is an HTTP
// 200 that decodes as an AdmissionReview with a status, whose uid, when it has one, is the
// request's, and whose patch, when it has one, is a JSON patch of an admitted request.
func FuzzAdmissionReviewBody(f *testing.F) {
	handlers := fuzzHandlers(f)
	paths := slices.Sorted(maps.Keys(handlers))
	kinds := map[string]testKind{}
	for _, k := range []testKind{welcomeKind, memcachedKind, deployObjectKind} {
		kinds[k.mutate], kinds[k.validate] = k, k
	}
	for i, path := range paths {
		k, ok := kinds[path]
		if !ok {
			continue
		}
		for _, seed := range sampleSeeds(f, k.kind, k.resource.Version) {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect} {
				body, err := json.Marshal(fuzzReview(k, fuzzStrict, "", op, seed, seed))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(uint8(i), body)
			}
		}
	}
	for _, body := range []string{"", "{", "null", "[]", "{}", `{"request":null}`, `{"request":{"uid":"u"}}`,
		`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","object":{"kind":"Pod"}}}`,
		"apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: u\n"} {
		f.Add(uint8(0), []byte(body))
	}
	f.Fuzz(func(t *testing.T, path uint8, body []byte) {
		h := handlers[paths[int(path)%len(paths)]]
		reply, code := postReview(t, h, body)
		res := reply.Response
		if code != http.StatusOK || res.Result == nil {
			t.Fatalf("HTTP %d, reply %s, to %q: want HTTP 200 and a status", code, asJSON(reply), body)
		}
		var sent admissionv1.AdmissionReview
		if res.UID != "" && kjson.UnmarshalCaseSensitivePreserveInts(body, &sent) == nil &&
			(sent.Request == nil || sent.Request.UID != res.UID) {
			t.Fatalf("the reply to %q carries the uid %q, which is not the request's", body, res.UID)
		}
		if len(res.Patch) > 0 {
			if !res.Allowed || res.PatchType == nil || *res.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Fatalf("the reply %s to %q carries a patch, but does not admit or is no JSONPatch", asJSON(reply), body)
			}
			if _, err := jsonpatch.DecodePatch(res.Patch); err != nil {
				t.Fatalf("the patch %s does not decode: %v", res.Patch, err)
			}
		}
		answersAsControllerRuntime(t, h, body, res)
	})
}

// postReview posts body to h as kube-apiserver does, and returns the review it answers and the
// HTTP status.
func postReview(tb testing.TB, h http.Handler, body []byte) (admissionv1.AdmissionReview, int) {
	httpReq := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	httpReq.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httpReq)
	var reply admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || reply.Response == nil {
		tb.Fatalf("the reply %q (HTTP %d) to %q does not decode as a review with a response: %v", rec.Body.String(), rec.Code, body, err)
	}
	return reply, rec.Code
}

// FuzzMemcachedScaleAdmission sends Scale updates to the scale subresource's webhook: every reply
// decodes with the request's uid, and keeping the replicas is never refused.
func FuzzMemcachedScaleAdmission(f *testing.F) {
	for _, replicas := range []int32{-1, 0, 1, 3, 4, 1 << 30} {
		f.Add(replicas, replicas)
		f.Add(replicas, replicas+1)
	}
	scale := fuzzHandlers(f)[memcachedScalePath]
	k := scaleKind
	f.Fuzz(func(t *testing.T, oldReplicas, replicas int32) {
		obj := func(r int32) []byte {
			return []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"m","namespace":"default"},"spec":{"replicas":` +
				jsonNumber(r) + `}}`)
		}
		reply := reviewSubresource(t, scale, k, fuzzStrict, "scale", admissionv1.Update, obj(replicas), obj(oldReplicas))
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

// review sends one AdmissionReview to h as kube-apiserver does (reviewSubresource), for the
// object itself.
func review(t *testing.T, h http.Handler, k testKind, namespace string, op admissionv1.Operation, object, old []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	return reviewSubresource(t, h, k, namespace, "", op, object, old)
}

// reviewSubresource posts one AdmissionReview to h as kube-apiserver does, and returns the
// response after checking that it is well formed.
func reviewSubresource(t *testing.T, h http.Handler, k testKind, namespace, subresource string, op admissionv1.Operation, object, old []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	req := fuzzReview(k, namespace, subresource, op, object, old)
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("the review of %q does not marshal: %v", object, err)
	}
	reply, _ := postReview(t, h, body)
	if reply.Response.UID != req.Request.UID {
		t.Fatalf("the reply %s does not carry the request's uid %s", asJSON(reply), req.Request.UID)
	}
	answersAsControllerRuntime(t, h, body, reply.Response)
	return reply.Response
}

// controllerRuntimeServed holds, by validating webhook, the webhook it stands in for
// (controllerRuntimeValidating).
var controllerRuntimeServed sync.Map

// controllerRuntimeValidating is the validation rule of the validating webhook h served by
// controller-runtime's admission.WithValidator, the webhook validator stands in for; nil when h
// is no validating webhook.
func controllerRuntimeValidating(h http.Handler) http.Handler {
	if served, ok := controllerRuntimeServed.Load(h); ok {
		return served.(http.Handler)
	}
	wh, ok := h.(*admission.Webhook)
	if !ok {
		return nil
	}
	var served http.Handler
	switch v := wh.Handler.(type) {
	case validator[authv1alpha1.Welcome, *authv1alpha1.Welcome]:
		served = admission.WithValidator[*authv1alpha1.Welcome](testScheme, v.rule)
	case validator[cachev1alpha1.Memcached, *cachev1alpha1.Memcached]:
		served = admission.WithValidator[*cachev1alpha1.Memcached](testScheme, v.rule)
	case validator[appv1.DeployObject, *appv1.DeployObject]:
		served = admission.WithValidator[*appv1.DeployObject](testScheme, v.rule)
	case validator[policyv1.AdmissionPolicy, *policyv1.AdmissionPolicy]:
		served = admission.WithValidator[*policyv1.AdmissionPolicy](testScheme, v.rule)
	case memcachedScaleValidator:
		rule := v.validator.(validator[autoscalingv1.Scale, *autoscalingv1.Scale]).rule
		served = &admission.Webhook{Handler: memcachedScaleValidator{validator: admission.WithValidator[*autoscalingv1.Scale](testScheme, rule).Handler}}
	default:
		return nil
	}
	controllerRuntimeServed.Store(h, served)
	return served
}

// answersAsControllerRuntime posts body, which h answered with got, to the webhook h stands in for
// when it is a validating webhook, and requires the same answer: admitted or refused alike, with the
// same warnings and status; of a request refused as malformed (HTTP 400), the same code, as the
// two decoders say what is wrong in their own words.
func answersAsControllerRuntime(t *testing.T, h http.Handler, body []byte, got *admissionv1.AdmissionResponse) {
	t.Helper()
	served := controllerRuntimeValidating(h)
	if served == nil || namesTypeMetaOtherwise(body) {
		return // the one difference decodeObject keeps
	}
	want, _ := postReview(t, served, body)
	w := want.Response
	if got.Allowed != w.Allowed || !slices.Equal(got.Warnings, w.Warnings) || len(got.Patch) > 0 || (got.Result == nil) != (w.Result == nil) {
		t.Fatalf("to %q, the webhook answers %s and controller-runtime's %s", body, asJSON(got), asJSON(w))
	}
	if got.Result == nil {
		return
	}
	if got.Result.Code == http.StatusBadRequest && w.Result.Code == http.StatusBadRequest {
		return
	}
	if !equality.Semantic.DeepEqual(got.Result, w.Result) {
		t.Fatalf("to %q, the webhook answers %s and controller-runtime's %s", body, asJSON(got), asJSON(w))
	}
}

// controllerRuntimeDefaulting is the defaulting rule of k served by controller-runtime's
// admission.WithCustomDefaulter, the webhook the defaulter stands in for.
func controllerRuntimeDefaulting(k testKind) *admission.Webhook {
	obj, err := testScheme.New(schema.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind})
	if err != nil {
		panic(err)
	}
	return admission.WithCustomDefaulter(testScheme, obj, customDefaulter(k.defaults))
}

// customDefaulter is a defaulting rule as an admission.CustomDefaulter.
type customDefaulter func(runtime.Object)

func (d customDefaulter) Default(_ context.Context, obj runtime.Object) error {
	d(obj)
	return nil
}
