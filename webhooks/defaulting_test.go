package webhooks

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
)

// TestDefaultingPatchOfFieldsNoKindHas covers what defaultingPatch does for fields of shapes no
// kind's defaulting reaches today, which the fuzz targets cannot: names a JSON pointer escapes, a
// member the defaulted object omits, and a zero struct the object sends or not.
func TestDefaultingPatchOfFieldsNoKindHas(t *testing.T) {
	type inner struct {
		N int `json:"n,omitempty"`
	}
	type object struct {
		Slash  string `json:"a/b,omitempty"`
		Tilde  string `json:"c~d,omitempty"`
		Gone   string `json:"gone,omitempty"`
		Sent   inner  `json:"sent"`
		Unsent inner  `json:"unsent"`
	}
	before := object{Gone: "x"}
	after := object{Slash: "1", Tilde: "2", Sent: inner{N: 3}, Unsent: inner{N: 4}}
	got := defaultingPatch([]byte(`{"gone":"x","sent":{}}`), reflect.ValueOf(before), reflect.ValueOf(after))
	want := []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/a~1b", Value: "1"},
		{Operation: "add", Path: "/c~0d", Value: "2"},
		{Operation: "remove", Path: "/gone"},
		{Operation: "add", Path: "/sent/n", Value: 3},
		{Operation: "add", Path: "/unsent", Value: inner{N: 4}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaultingPatch (-want +got):\n%s", diff)
	}
}
