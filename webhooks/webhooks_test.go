package webhooks

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRatchet(t *testing.T) {
	tests := []struct {
		name string
		errs field.ErrorList
		old  field.ErrorList
		want field.ErrorList
	}{
		{
			name: "no old violations keeps every error",
			errs: field.ErrorList{invalid("spec.port", int32(0), portDetail), required("spec.name", nameDetail)},
			want: field.ErrorList{invalid("spec.port", int32(0), portDetail), required("spec.name", nameDetail)},
		},
		{
			name: "no new violations",
			old:  field.ErrorList{invalid("spec.port", int32(0), portDetail)},
		},
		{
			name: "violation the old object had is dropped",
			errs: field.ErrorList{invalid("spec.port", int32(0), portDetail)},
			old:  field.ErrorList{invalid("spec.port", int32(0), portDetail)},
		},
		{
			name: "same field with another bad value is kept",
			errs: field.ErrorList{invalid("spec.port", int32(70000), portDetail)},
			old:  field.ErrorList{invalid("spec.port", int32(0), portDetail)},
			want: field.ErrorList{invalid("spec.port", int32(70000), portDetail)},
		},
		{
			name: "same bad value on another field is kept",
			errs: field.ErrorList{invalid("spec.userID", int32(0), userIDDetail)},
			old:  field.ErrorList{invalid("spec.port", int32(0), portDetail)},
			want: field.ErrorList{invalid("spec.userID", int32(0), userIDDetail)},
		},
		{
			name: "same field and value with another error type is kept",
			errs: field.ErrorList{duplicate("spec.groups[1]", "")},
			old:  field.ErrorList{required("spec.groups[1]", groupDetail)},
			want: field.ErrorList{duplicate("spec.groups[1]", "")},
		},
		{
			name: "a reworded detail does not make a kept violation new",
			errs: field.ErrorList{invalid("spec.port", int32(0), "must be between 1 and 65535")},
			old:  field.ErrorList{invalid("spec.port", int32(0), "must be a valid port")},
		},
		{
			name: "only the new violations of several are kept, in order",
			errs: field.ErrorList{
				required("spec.name", nameDetail),
				invalid("spec.userID", int32(0), userIDDetail),
				invalid("spec.email", "bob@localhost", emailDetail),
				invalid("spec.port", int32(0), portDetail),
			},
			old: field.ErrorList{
				invalid("spec.email", "bob@localhost", emailDetail),
				required("spec.name", nameDetail),
			},
			want: field.ErrorList{
				invalid("spec.userID", int32(0), userIDDetail),
				invalid("spec.port", int32(0), portDetail),
			},
		},
	}
	// The stored object is updated to itself, so that every field is unchanged and only the
	// violations tell a kept one from a new one (ratchet_test.go changes the values).
	stored := welcome()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ratchet(tc.errs, tc.old, stored, stored)
			if diff := gocmp.Diff(tc.want, got, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ratchet (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatchetLeavesItsInputAlone(t *testing.T) {
	errs := field.ErrorList{
		invalid("spec.email", "bob@localhost", emailDetail),
		invalid("spec.port", int32(0), portDetail),
	}
	old := field.ErrorList{invalid("spec.email", "bob@localhost", emailDetail)}
	want := field.ErrorList{
		invalid("spec.email", "bob@localhost", emailDetail),
		invalid("spec.port", int32(0), portDetail),
	}

	_ = ratchet(errs, old, welcome(), welcome())

	if diff := gocmp.Diff(want, errs, compareFieldErrors); diff != "" {
		t.Errorf("ratchet changed the list it was given (-want +got):\n%s", diff)
	}
}

// TestKindsAreTheSchemes holds each Kind's GVK, written by hand in the kind's file, equal to the
// one the scheme registers its type under, which the serving adapters read.
func TestKindsAreTheSchemes(t *testing.T) {
	for _, k := range served() {
		gvks, _, err := testScheme.ObjectKinds(k.newObject())
		if err != nil || len(gvks) != 1 || gvks[0] != k.Kind() {
			t.Errorf("%s: the scheme registers %T as %v (%v)", k.Kind(), k.newObject(), gvks, err)
		}
	}
}

// previousReleasePaths are the paths v0.1.0's webhook configurations call (37956cb's
// config/webhook/manifests.yaml), written out rather than derived from this tree's kinds: while an
// upgrade from it rolls out, replicas of this release must answer every one.
var previousReleasePaths = []string{
	"/mutate-app-seedlabs-dev-v1-deployobject", "/validate-app-seedlabs-dev-v1-deployobject",
	"/mutate-auth-seedlabs-dev-v1alpha1-welcome", "/validate-auth-seedlabs-dev-v1alpha1-welcome",
	"/mutate-cache-seedlabs-dev-v1alpha1-memcached", "/validate-cache-seedlabs-dev-v1alpha1-memcached",
	"/validate-cache-seedlabs-dev-v1alpha1-memcached-scale",
	"/validate-policy-seedlabs-dev-v1alpha1-admissionpolicy",
}

// TestHandlersServeEveryConfiguredPath holds Handlers to the paths the webhook configurations
// generated into config/webhook call, so that no webhook answers 404, and to the paths the previous
// release's configurations call, and to nothing else.
func TestHandlersServeEveryConfiguredPath(t *testing.T) {
	data, err := os.ReadFile("../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var configured []string
	for _, line := range strings.Split(string(data), "\n") {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "path: "); ok {
			configured = append(configured, path)
		}
	}
	served := slices.Collect(maps.Keys(fuzzHandlers(t)))
	want := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(configured), previousReleasePaths...))))
	slices.Sort(served)
	if len(configured) == 0 || !slices.Equal(want, served) {
		t.Errorf("config/webhook calls %q and the previous release's %q, Handlers serves %q", configured, previousReleasePaths, served)
	}
}
