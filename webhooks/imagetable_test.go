package webhooks

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// TestImageReferenceTable holds validateImage to the image table the envtest suite also applies
// through the API server.
func TestImageReferenceTable(t *testing.T) {
	policy, err := NewImagePolicy(fixtures.AllowedRegistries)
	if err != nil {
		t.Fatalf("NewImagePolicy(%q): %v", fixtures.AllowedRegistries, err)
	}
	if len(fixtures.ImageReferences) < 30 {
		t.Fatalf("the image table has %d references, want at least 30", len(fixtures.ImageReferences))
	}
	path := field.NewPath("spec", "image")
	for _, tc := range fixtures.ImageReferences {
		t.Run(tc.Image, func(t *testing.T) {
			// The table holds the messages without their rule IDs, which the API server shows.
			errs, ruled := validateImage(tc.Image, policy, path, deployObjectImageRules)
			warnings := withoutRuleIDs(t, ruled)
			var want field.ErrorList
			if tc.Refusal != "" {
				want = field.ErrorList{field.Invalid(path, tc.Image, tc.Refusal)}
			}
			if tc.Image == "" || tc.Image == "   " {
				want = field.ErrorList{field.Required(path, tc.Refusal)}
			}
			if !imageTableErrorsEqual(errs, want) {
				t.Errorf("validateImage(%q) errors:\n got %v\nwant %v", tc.Image, errs, want)
			}
			var wantWarnings []string
			if tc.Warning != "" {
				wantWarnings = []string{tc.Warning}
			}
			if !slices.Equal([]string(warnings), wantWarnings) {
				t.Errorf("validateImage(%q) warnings = %q, want %q", tc.Image, warnings, wantWarnings)
			}
		})
	}
}

// imageTableErrorsEqual compares the type, path, bad value and detail of two error lists.
func imageTableErrorsEqual(got, want field.ErrorList) bool {
	return slices.EqualFunc(got, want, func(a, b *field.Error) bool {
		return a.Type == b.Type && a.Field == b.Field && a.BadValue == b.BadValue && a.Detail == b.Detail
	})
}

// TestParseImageAnswersAsTheParser holds parseImage, which remembers parses, to
// reference.ParseNormalizedNamed on the image table, remembered or not, and to its bounds.
func TestParseImageAnswersAsTheParser(t *testing.T) {
	for round := range 2 {
		for _, tc := range fixtures.ImageReferences {
			got, gotErr := parseImage(tc.Image)
			want, wantErr := reference.ParseNormalizedNamed(tc.Image)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (want != nil) != (got != nil) || (want != nil && got.String() != want.String()) {
				t.Errorf("round %d: parseImage(%q) = %v, %v; the parser says %v, %v", round, tc.Image, got, gotErr, want, wantErr)
			}
		}
	}
	for i := range 2 * maxParsedImages {
		if _, err := parseImage(fmt.Sprintf("registry.example.com/app:%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	long := "registry.example.com/" + strings.Repeat("a", maxParsedImageLen)
	_, _ = parseImage(long)
	parsedImages.RLock()
	defer parsedImages.RUnlock()
	if n := len(parsedImages.m); n > maxParsedImages {
		t.Errorf("%d parses are remembered, want at most %d", n, maxParsedImages)
	}
	if _, kept := parsedImages.m[long]; kept {
		t.Errorf("a reference of %d bytes is remembered", len(long))
	}
}
