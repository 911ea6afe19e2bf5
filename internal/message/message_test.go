package message

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func violations(n int) field.ErrorList {
	var errs field.ErrorList
	for i := range n {
		errs = append(errs, field.Invalid(field.NewPath("spec", "env").Index(i).Child("name"), "A=B", "must not contain '='"))
	}
	return errs
}

func TestViolationsFormatsAsTheAggregateWhenItFits(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		errs := violations(n)
		if got, want := Violations(errs, ConditionLimit), errs.ToAggregate().Error(); got != want {
			t.Errorf("Violations(%d errors) = %q, want %q", n, got, want)
		}
	}
	dup := append(violations(1), violations(1)...)
	if got, want := Violations(dup, ConditionLimit), dup.ToAggregate().Error(); got != want {
		t.Errorf("Violations(duplicates) = %q, want %q", got, want)
	}
}

func TestViolationsFitTheLimit(t *testing.T) {
	errs := violations(2000)
	for _, limit := range []int{EventNoteLimit - len("spec is not rolled out: "), ConditionLimit} {
		got := Violations(errs, limit)
		if len(got) > limit {
			t.Errorf("Violations in %d bytes is %d bytes long", limit, len(got))
		}
		shown := strings.Count(got, "spec.env[")
		if want := fmt.Sprintf(", and %d more]", 2000-shown); !strings.HasSuffix(got, want) {
			t.Errorf("Violations in %d bytes ends %q, want %q", limit, got[len(got)-40:], want)
		}
		if shown == 0 || limit-len(got) > len(errs[0].Error())+len(", and 2000 more]") {
			t.Errorf("Violations in %d bytes shows %d violations in %d bytes: room for more was left", limit, shown, len(got))
		}
	}
	if got := Note("spec is not rolled out: ", errs); len(got) > EventNoteLimit || !strings.HasPrefix(got, "spec is not rolled out: [spec.env[0]") {
		t.Errorf("Note = %q (%d bytes)", got, len(got))
	}
}

func TestViolationsCutsOneLongViolation(t *testing.T) {
	long := field.ErrorList{field.Invalid(field.NewPath("spec", "image"), strings.Repeat("x", 5000), "is not valid")}
	if got := Violations(long, EventNoteLimit); len(got) > EventNoteLimit || !strings.Contains(got, "more bytes") {
		t.Errorf("one long violation: %d bytes, %q", len(got), got[len(got)-30:])
	}
	two := append(long, long[0])
	two[1] = field.Required(field.NewPath("spec", "ports"), "")
	got := Violations(two, EventNoteLimit)
	if len(got) > EventNoteLimit || !strings.HasSuffix(got, ", and 1 more]") {
		t.Errorf("long violation and another: %d bytes, ends %q", len(got), got[len(got)-30:])
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("short", 10); got != "short" {
		t.Errorf("Truncate(short) = %q", got)
	}
	s := strings.Repeat("é", 1000) // 2000 bytes
	got := Truncate(s, 100)
	if len(got) > 100 || !utf8.ValidString(got) || !strings.HasSuffix(got, fmt.Sprintf("… and %d more bytes", 2000-strings.Count(got, "é")*2)) {
		t.Errorf("Truncate = %q (%d bytes)", got, len(got))
	}
}

// TestViolationsCountsWhatItDoesNotShow: of many violations with large values, those that fit are
// shown and the rest counted, as many as they are.
func TestViolationsCountsWhatItDoesNotShow(t *testing.T) {
	var errs field.ErrorList
	for i := range 100000 {
		errs = append(errs, field.Duplicate(field.NewPath("spec", "groups").Index(i), strings.Repeat("g", 3000)))
	}
	got := Violations(errs, EventNoteLimit)
	if len(got) > EventNoteLimit || !strings.HasSuffix(got, ", and 99999 more]") {
		t.Errorf("Violations of 100,000: %d bytes, ends %q", len(got), got[max(0, len(got)-40):])
	}
	got = Violations(errs, ConditionLimit)
	shown := strings.Count(got, "spec.groups[")
	if want := fmt.Sprintf(", and %d more]", 100000-shown); len(got) > ConditionLimit || shown < 9 || !strings.HasSuffix(got, want) {
		t.Errorf("Violations of 100,000 in %d bytes: %d shown, ends %q, want %q", ConditionLimit, shown, got[max(0, len(got)-40):], want)
	}
}

func TestReplicas(t *testing.T) {
	for n, want := range map[int32]string{0: "0 replicas", 1: "1 replica", 2: "2 replicas", 100: "100 replicas"} {
		if got := Replicas(n); got != want {
			t.Errorf("Replicas(%d) = %q, want %q", n, got, want)
		}
	}
}
