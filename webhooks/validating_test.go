package webhooks

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// TestDecodeObjectDecodesAsControllerRuntime decodes objects as a review carries them with
// decodeObject and with controller-runtime's admission.Decoder: each decodes to the same object or
// is an error to both, whatever apiVersion and kind the object names or leaves out.
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
	} {
		got, want := &authv1alpha1.Welcome{}, &authv1alpha1.Welcome{}
		gotErr := decodeObject([]byte(raw), kind, got)
		wantErr := decoder.DecodeRaw(runtime.RawExtension{Raw: []byte(raw)}, want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: decodeObject: %v; controller-runtime's decoder: %v", raw, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: decodeObject makes %s, controller-runtime's decoder %s", raw, asJSON(got), asJSON(want))
		}
	}
}
