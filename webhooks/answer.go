package webhooks

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/seedlabs/webhook-operator/internal/message"
)

// MaxListed is the most violations a refusal lists, and the most warnings an answer carries; past
// it, one more entry says how many were left out. apimachinery builds a refusal's message by
// appending each violation to a string, which costs the square of their number: an object with
// tens of thousands of violations would take minutes to refuse, long after kube-apiserver stopped
// waiting. A hundred are more than anyone fixes in one go, and the CRDs' schemas bound every list
// well below what would make the rest of the work slow.
const MaxListed = 100

// Refusal is the 422 Invalid status that refuses the object name of kind gk for errs: a cause per
// violation, which kube-apiserver passes to the client, at most MaxListed of them, then a TooMany
// cause at the first violation left out, counting those left out; a long bad value is quoted in
// part.
func Refusal(gk schema.GroupKind, name string, errs field.ErrorList) *apierrors.StatusError {
	return apierrors.NewInvalid(gk, name, listed(errs))
}

// maxQuotedValue is the most bytes of a bad value a refusal quotes: the rest is counted.
const maxQuotedValue = 256

// listed is errs cut to MaxListed, and a TooMany error counting the rest, each naming its rule
// (Rendered) and quoting at most maxQuotedValue bytes of its bad value: a refusal of many long
// values is no longer than a few.
func listed(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, 0, min(len(errs), MaxListed)+1)
	for _, e := range errs[:min(len(errs), MaxListed)] {
		e = rendered(e)
		if v, ok := e.BadValue.(string); ok && len(v) > maxQuotedValue {
			e.BadValue = message.Truncate(v, maxQuotedValue)
		}
		out = append(out, e)
	}
	if len(errs) > MaxListed {
		out = append(out, &field.Error{Type: field.ErrorTypeTooMany, Field: errs[MaxListed].Field, BadValue: len(errs) - MaxListed,
			Detail: fmt.Sprintf("more violations from here on are not listed: a refusal lists the first %d; fix those and send it again to see the rest", MaxListed)})
	}
	return out
}

// ListedWarnings is warnings as the client reads them, each naming its rule, cut to MaxListed,
// then one warning counting the rest.
func ListedWarnings(warnings []Warning) admission.Warnings {
	if len(warnings) == 0 {
		return nil
	}
	out := admission.Warnings(RenderedWarnings(warnings[:min(len(warnings), MaxListed)]))
	if len(warnings) > MaxListed {
		out = append(out, fmt.Sprintf("and %d more warnings, not listed: an answer carries the first %d", len(warnings)-MaxListed, MaxListed))
	}
	return out
}
