package webhooks

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// versionPair is a kind at v1alpha1, deprecated, and at v1, the version stored, each with webhooks
// of its own.
type versionPair struct {
	alpha, v1 testKind
	// convert is an object at v1alpha1 at v1, as kube-apiserver converts it.
	convert func(t *testing.T, obj runtime.Object) runtime.Object
	// rename names the fields of an answer at v1 as at v1alpha1.
	rename func(string) string
}

var versionPairs = map[string]versionPair{
	"Welcome": {
		alpha: welcomeKind,
		v1: testKind{kind: "Welcome", resource: metav1.GroupVersionResource{Group: "auth.seedlabs.dev", Version: "v1", Resource: "welcomes"},
			mutate: WelcomeV1.MutatePath(), validate: WelcomeV1.ValidatePath()},
		convert: func(t *testing.T, obj runtime.Object) runtime.Object {
			out := &authv1.Welcome{}
			if err := obj.(*authv1alpha1.Welcome).ConvertTo(out); err != nil {
				t.Fatal(err)
			}
			return out
		},
		rename: func(s string) string {
			return strings.ReplaceAll(s, conversionDataPassword.String(), "spec.password")
		},
	},
	"Memcached": {
		alpha: memcachedKind,
		v1: testKind{kind: "Memcached", resource: metav1.GroupVersionResource{Group: "cache.seedlabs.dev", Version: "v1", Resource: "memcacheds"},
			mutate: MemcachedV1.MutatePath(), validate: MemcachedV1.ValidatePath()},
		convert: sameFields("cache.seedlabs.dev", "Memcached"),
	},
	"AdmissionPolicy": {
		alpha: testKind{kind: "AdmissionPolicy", validate: admissionPolicyV1alpha1Path,
			resource: metav1.GroupVersionResource{Group: "policy.seedlabs.dev", Version: "v1alpha1", Resource: "admissionpolicies"}},
		v1: testKind{kind: "AdmissionPolicy", validate: admissionPolicyPath,
			resource: metav1.GroupVersionResource{Group: "policy.seedlabs.dev", Version: "v1", Resource: "admissionpolicies"}},
		convert: sameFields("policy.seedlabs.dev", "AdmissionPolicy"),
	},
}

// sameFields converts an object of a kind whose versions have the same fields (conversion None)
// as kube-apiserver does: its JSON, at v1.
func sameFields(group, kind string) func(*testing.T, runtime.Object) runtime.Object {
	return func(t *testing.T, obj runtime.Object) runtime.Object {
		out, err := testScheme.New(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(obj)
		if err == nil {
			err = json.Unmarshal(data, out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// FuzzVersionsAnswerAlike holds the webhooks at v1 (Kinds, and the AdmissionPolicy's) to those at
// v1alpha1 (deprecated, and the AdmissionPolicy's), which the previous release's configurations
// call, and a Welcome's configuration still does: an
// object of a kind, and an old one for an update, sent at v1alpha1 and, converted as
// kube-apiserver converts them, at v1, get the same answer, in both namespaces of fuzzHandlers'
// policy: admitted or refused alike, with the same status, causes and warnings (but for a
// Welcome's password, which v1 names in its conversion-data annotation), and a defaulting patch
// that makes the same object at either version.
func FuzzVersionsAnswerAlike(f *testing.F) {
	for kind := range versionPairs {
		seeds := sampleSeeds(f, kind, "v1alpha1")
		for _, object := range seeds {
			for _, old := range seeds {
				f.Add(object, old)
			}
		}
	}
	// A password v1 keeps in the annotation: warned of, too long, and too long before and after.
	short := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},"spec":{"name":"Ada","password":"p"}}`
	long := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},"spec":{"name":"Ada","password":"` + strings.Repeat("p", 300) + `"}}`
	f.Add([]byte(short), []byte(long))
	f.Add([]byte(long), []byte(short))
	f.Add([]byte(strings.Replace(long, `"Ada"`, `"Grace"`, 1)), []byte(long))
	handlers := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, object, old []byte) {
		kind, a, ok := atV1alpha1(t, object)
		if !ok {
			return
		}
		v := versionPairs[kind]
		oldKind, oldA, ok := atV1alpha1(t, old)
		if !ok || oldKind != kind {
			oldA = nil
		}
		b, oldB := v.convert(t, a), runtime.Object(nil)
		if oldA != nil {
			oldB = v.convert(t, oldA)
		}
		rename := v.rename
		if rename == nil {
			rename = func(s string) string { return s }
		}
		for _, ns := range []string{fuzzStrict, fuzzRelaxed} {
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				if op == admissionv1.Update && oldA == nil {
					continue
				}
				objA, objB := asJSONAt(t, a, v.alpha), asJSONAt(t, b, v.v1)
				var prevA, prevB []byte
				if op == admissionv1.Update {
					prevA, prevB = asJSONAt(t, oldA, v.alpha), asJSONAt(t, oldB, v.v1)
				}
				if v.alpha.mutate != "" {
					gotA := review(t, handlers[v.alpha.mutate], v.alpha, ns, op, objA, prevA)
					gotB := review(t, handlers[v.v1.mutate], v.v1, ns, op, objB, prevB)
					sameAnswer(t, gotA, gotB, rename, objA)
					if gotA.Allowed {
						want := v.convert(t, patchedObject(t, gvkOf(v.alpha), objA, gotA.Patch))
						want.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind(gvkOf(v.v1)))
						if got := patchedObject(t, gvkOf(v.v1), objB, gotB.Patch); !equality.Semantic.DeepEqual(want, got) {
							t.Fatalf("defaulted at v1alpha1 and converted, %s is %s; defaulted at v1, %s", objA, asJSON(want), asJSON(got))
						}
					}
				}
				sameAnswer(t, review(t, handlers[v.alpha.validate], v.alpha, ns, op, objA, prevA),
					review(t, handlers[v.v1.validate], v.v1, ns, op, objB, prevB), rename, objA)
			}
		}
	})
}

// atV1alpha1 is object as an object at v1alpha1 of a kind of versionPairs, and its kind; false
// for anything else kube-apiserver would not send.
func atV1alpha1(t *testing.T, object []byte) (string, runtime.Object, bool) {
	var meta metav1.TypeMeta
	if !json.Valid(object) || json.Unmarshal(object, &meta) != nil || namesTypeMetaOtherwise(object) {
		return "", nil, false
	}
	v, ok := versionPairs[meta.Kind]
	if !ok || meta.APIVersion != v.alpha.resource.Group+"/v1alpha1" {
		return "", nil, false
	}
	obj, err := testScheme.New(schema.GroupVersionKind(gvkOf(v.alpha)))
	if err != nil {
		t.Fatal(err)
	}
	if err := testDecoder.DecodeRaw(runtime.RawExtension{Raw: object}, obj); err != nil {
		return "", nil, false
	}
	return meta.Kind, obj, true
}

func gvkOf(k testKind) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind}
}

// asJSONAt is obj's JSON, as kube-apiserver sends it at k's version.
func asJSONAt(t *testing.T, obj runtime.Object, k testKind) []byte {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind(gvkOf(k)))
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// sameAnswer requires b, the answer at v1, to be a, the answer at v1alpha1, with its fields named
// by rename: of a request refused as malformed (400), the code alone.
func sameAnswer(t *testing.T, a, b *admissionv1.AdmissionResponse, rename func(string) string, object []byte) {
	t.Helper()
	renamed := b.DeepCopy()
	for i := range renamed.Warnings {
		renamed.Warnings[i] = rename(renamed.Warnings[i])
	}
	if r := renamed.Result; r != nil {
		r.Message = rename(r.Message)
		if r.Details != nil {
			for i := range r.Details.Causes {
				r.Details.Causes[i].Field = rename(r.Details.Causes[i].Field)
				r.Details.Causes[i].Message = rename(r.Details.Causes[i].Message)
			}
		}
	}
	if a.Allowed != b.Allowed || !slices.Equal(a.Warnings, renamed.Warnings) || (a.Result == nil) != (b.Result == nil) {
		t.Fatalf("to %s, the webhook at v1alpha1 answers %s, at v1 %s", object, asJSON(a), asJSON(b))
	}
	if a.Result == nil || (a.Result.Code == http.StatusBadRequest && b.Result.Code == http.StatusBadRequest) {
		return
	}
	if !equality.Semantic.DeepEqual(a.Result, renamed.Result) {
		t.Fatalf("to %s, the webhook at v1alpha1 answers %s, at v1 %s", object, asJSON(a), asJSON(b))
	}
}

// TestVersionsNameThePasswordWhereTheyKeepIt shows what FuzzVersionsAnswerAlike renames: a
// Welcome's password, too long at v1alpha1, is refused at v1 in the conversion-data annotation.
func TestVersionsNameThePasswordWhereTheyKeepIt(t *testing.T) {
	handlers := fuzzHandlers(t)
	w := &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Name: "w"},
		Spec: authv1alpha1.WelcomeSpec{Name: "Ada", Password: strings.Repeat("p", maxPasswordBytes+1)}}
	v := versionPairs["Welcome"]
	for _, tc := range []struct {
		k    testKind
		obj  runtime.Object
		want string
	}{
		{v.alpha, w, "spec.password"},
		{v.v1, v.convert(t, w), "metadata.annotations[auth.seedlabs.dev/conversion-data].spec.password"},
	} {
		k, want := tc.k, tc.want
		reply := review(t, handlers[k.validate], k, fuzzStrict, admissionv1.Create, asJSONAt(t, tc.obj, k), nil)
		if reply.Allowed || reply.Result.Details == nil || len(reply.Result.Details.Causes) != 1 || reply.Result.Details.Causes[0].Field != want {
			t.Errorf("at %s, a password too long is answered %s; want one cause at %s", k.resource.Version, asJSON(reply), want)
		}
		if !slices.ContainsFunc(reply.Warnings, func(s string) bool { return strings.HasPrefix(s, want+" is stored unencrypted") }) {
			t.Errorf("at %s, the warnings %q do not name the password at %s", k.resource.Version, reply.Warnings, want)
		}
	}
}
