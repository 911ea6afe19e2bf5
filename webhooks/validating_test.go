package webhooks

import (
	"bytes"
	"strconv"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// TestDecodeObjectDecodesAsControllerRuntime decodes objects as a review carries them with
// decodeObject and with controller-runtime's admission.Decoder: each decodes to the same object or
// is an error to both, whatever apiVersion and kind the object names or leaves out; but for an
// object that spells their keys otherwise (namesTypeMetaOtherwise), which decodeObject reads as
// kube-apiserver does, as unknown fields.
func TestDecodeObjectDecodesAsControllerRuntime(t *testing.T) {
	decoder := admission.NewDecoder(testScheme)
	kind := authv1alpha1.GroupVersion.WithKind("Welcome")
	for _, raw := range []string{
		`{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"w"},"spec":{"name":"Ada"}}`,
		`{"metadata":{"name":"w"},"spec":{"name":"Ada"}}`,
		`{"kind":"Welcome","spec":{"name":"Ada"}}`,
		`{"apiVersion":"auth.seedlabs.dev/v1alpha1","spec":{"name":"Ada"}}`,
		`{"apiVersion":"auth.seedlabs.dev","kind":"Welcome"}`,
		`{"apiVersion":"auth.seedlabs.dev/v1","kind":"Welcome"}`,
		`{"apiVersion":"v1","kind":"Welcome"}`,
		`{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Other"}`,
		`{"apiVersion":"cache.seedlabs.dev/v1alpha1","kind":"Memcached","spec":{"size":1}}`,
		`{"apiVersion":"v1","kind":"Pod"}`,
		`{"spec":{"name":1}}`,
		`{"spec":{"Name":"case"}}`,
		`null`, `{}`, `[]`, `"Welcome"`, `{`, ``,
		// The keys in other spellings: encoding/json, which the Decoder reads them with first,
		// matches any case; decodeObject, as kube-apiserver, takes them for unknown fields.
		`{"ApiVersion":"0"}`, `{"KIND":"Memcached"}`, `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","Kind":"Other"}`,
		`{"\u004bind":"Other"}`, `{"\u0061piVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome"}`,
		"{\"\u212aind\":\"Other\"}", "{\"apiVer\u017fion\":\"0\"}",
	} {
		got, want := &authv1alpha1.Welcome{}, &authv1alpha1.Welcome{}
		gotErr := decodeObject([]byte(raw), kind, got)
		wantErr := decoder.DecodeRaw(runtime.RawExtension{Raw: []byte(raw)}, want)
		if namesTypeMetaOtherwise([]byte(raw)) {
			plain := &authv1alpha1.Welcome{}
			if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), plain); err != nil || gotErr != nil || !equality.Semantic.DeepEqual(got, plain) {
				t.Errorf("%s: decodeObject: %v, %s: want the keys spelt otherwise taken for unknown fields, %s", raw, gotErr, asJSON(got), asJSON(plain))
			}
			continue
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: decodeObject: %v; controller-runtime's decoder: %v", raw, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: decodeObject makes %s, controller-runtime's decoder %s", raw, asJSON(got), asJSON(want))
		}
	}
}

// TestNamesTypeMetaOtherwise: the samples, as kube-apiserver's encoder writes them (escaping <, >
// and &), spell apiVersion and kind as decodeObject reads them; objects that spell either otherwise
// are found.
func TestNamesTypeMetaOtherwise(t *testing.T) {
	for _, kind := range []string{"Welcome", "Memcached", "DeployObject", "AdmissionPolicy"} {
		for _, seed := range sampleSeeds(t, kind, "v1") {
			if namesTypeMetaOtherwise(seed) {
				t.Errorf("%s is said to spell apiVersion or kind otherwise", seed)
			}
		}
	}
	for _, raw := range []string{`{"Kind":"x"}`, `{"apiversion":"x"}`, `{"\u004bind":"x"}`, `{"a":"<b>","API\u0056ersion":"x"}`, "{\"\u212aind\":\"x\"}"} {
		if !namesTypeMetaOtherwise([]byte(raw)) {
			t.Errorf("%s is not said to spell apiVersion or kind otherwise", raw)
		}
	}
}

// namesTypeMetaOtherwise reports whether raw may hold a key that encoding/json takes for
// apiVersion or kind and sigs.k8s.io/json does not, the one difference decodeObject keeps from
// controller-runtime's decoder: a string that, unescaped, equals one of them but for case, as
// bytes.EqualFold folds it (U+212A, the Kelvin sign, folds to k; U+017F, the long s, to s). It
// reads every string of raw short enough to be one (maxTypeMetaKey); an escape it reads loosely
// can only make it say true.
func namesTypeMetaOtherwise(raw []byte) bool {
	for start := 0; ; {
		i := bytes.IndexByte(raw[start:], '"')
		if i < 0 {
			return false
		}
		i += start
		j := bytes.IndexByte(raw[i+1:], '"')
		if j < 0 {
			return false
		}
		j += i + 1
		if token := raw[i+1 : j]; len(token) >= len("kind") && len(token) <= maxTypeMetaKey {
			name := unescapedLoosely(token)
			for _, key := range typeMetaKeys {
				if bytes.EqualFold(name, key) && !bytes.Equal(name, key) {
					return true
				}
			}
		}
		start = j
	}
}

var typeMetaKeys = [][]byte{[]byte("apiVersion"), []byte("kind")}

// maxTypeMetaKey is the longest a JSON string that unescapes to apiVersion can be: each of its
// ten characters escaped as \uXXXX.
const maxTypeMetaKey = 6 * len("apiVersion")

// unescapedLoosely is token, the inside of a JSON string, with its \uXXXX escapes decoded and
// every other escape read as the character after the backslash: a letter only where the string
// holds one, or where it held an escape such as \n, whose control character no key of
// typeMetaKeys holds.
func unescapedLoosely(token []byte) []byte {
	if bytes.IndexByte(token, '\\') < 0 {
		return token
	}
	out := make([]byte, 0, len(token))
	for k := 0; k < len(token); k++ {
		if token[k] != '\\' || k+1 == len(token) {
			out = append(out, token[k])
			continue
		}
		k++
		if token[k] == 'u' && k+5 <= len(token) {
			if r, err := strconv.ParseUint(string(token[k+1:k+5]), 16, 32); err == nil {
				out = utf8.AppendRune(out, rune(r))
				k += 4
				continue
			}
		}
		out = append(out, token[k])
	}
	return out
}
