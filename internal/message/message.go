// Package message fits what the controllers report into the limits of the API: a condition
// message or an Event note that is too long makes the API server refuse the whole write, and the
// user then sees nothing at all.
package message

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// ConditionLimit is the most bytes a metav1.Condition message may hold.
	ConditionLimit = 32768
	// EventNoteLimit is the most bytes an events.k8s.io/v1 Event note may hold.
	EventNoteLimit = 1024
)

// Violations describes errs as errs.ToAggregate().Error() does ("a", or "[a, b]" for several),
// in at most limit bytes: the violations that fit, then "and N more". It formats no more of errs
// than can be shown, however many there are: a violation quotes its bad value, which may be large.
func Violations(errs field.ErrorList, limit int) string {
	var items []string
	seen := sets.New[string]()
	size, formatted := len("[]"), 0
	for _, e := range errs {
		formatted++
		s := e.Error()
		if seen.Has(s) {
			continue
		}
		seen.Insert(s)
		items = append(items, s)
		if size += len(s) + len(", "); size > limit+len(", ") {
			break // no more fit: the rest are only counted
		}
	}
	unformatted := len(errs) - formatted
	switch {
	case len(items) == 0:
		return ""
	case len(items) == 1 && unformatted == 0:
		return Truncate(items[0], limit)
	}
	if all := "[" + strings.Join(items, ", ") + "]"; unformatted == 0 && len(all) <= limit {
		return all
	}
	var b strings.Builder
	b.WriteString("[")
	for i, item := range items {
		more := fmt.Sprintf("and %d more]", len(items)-i+unformatted)
		if b.Len()+len(item)+len(", ")+len(more) > limit {
			if i == 0 {
				b.WriteString(Truncate(item, limit-b.Len()-len(", ")-len(more)))
				b.WriteString(", ")
				more = fmt.Sprintf("and %d more]", len(items)-1+unformatted)
			}
			b.WriteString(more)
			return b.String()
		}
		b.WriteString(item)
		b.WriteString(", ")
	}
	// Every item fitted, but not the count of those left unformatted.
	fmt.Fprintf(&b, "and %d more]", unformatted)
	return b.String()
}

// Note is an Event note of prefix followed by the violations that fit in EventNoteLimit.
func Note(prefix string, errs field.ErrorList) string {
	return prefix + Violations(errs, EventNoteLimit-len(prefix))
}

// Truncate returns s if it fits in limit bytes, or its beginning, cut on a character boundary,
// followed by how many bytes were left out.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The suffix is at most this long for any length of s an API object can hold.
	const suffixRoom = len("… and 9999999999 more bytes")
	cut := max(limit-suffixRoom, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… and %d more bytes", s[:cut], len(s)-cut)
}

// Replicas is n replicas in English: "1 replica", "3 replicas".
func Replicas(n int32) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}
