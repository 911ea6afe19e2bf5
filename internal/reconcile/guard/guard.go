// Package guard holds, in reconcile, a stored spec to the admission rules, as CloudNativePG's
// webhook guard does: a spec stored without passing admission (before the webhook existed, or with
// it bypassed) is not rolled out while it breaks a rule the policy enforces; and every object
// reports in its Compliant condition the rules its spec breaks, the audit of stored objects.
package guard

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/internal/reconcile/status"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Guard is what the rules are judged under in reconcile.
type Guard struct {
	// Policy is the admission policy in force: a spec is not rolled out while it breaks a rule
	// the policy Enforces in its namespace, and is when the policy only Warns or Audits. Nil
	// enforces every rule.
	Policy webhooks.PolicySource
	// Namespaces look up namespace labels for the policy's namespace overrides.
	Namespaces webhooks.Namespaces
	// Recorder records the PolicyViolation Event of the audit.
	Recorder recorder.EventRecorder
}

// Check defaults a copy of obj's stored spec (desired) by the rules of its kind, validates it as
// admission of a create would, and judges what it finds once, under the policy in force in obj's
// namespace. It returns desired with the violations that hold it back, each naming its rule for
// the InvalidSpec condition and Event: while there are any, nothing is rolled out.
//
// A rule that is AdmissionOnly (the registry allow-list) never holds a spec back: an image
// admitted before the list changed keeps running. Every broken rule is audited: Check sets obj's
// Compliant condition from the judgement, and records a PolicyViolation Event when the broken
// rules change and nothing holds the spec back (the InvalidSpec Event of a spec held back already
// says what it breaks).
func Check[T any, PT interface {
	*T
	status.Object
}](ctx context.Context, g Guard, obj PT, kind webhooks.Kind[T, PT]) (desired PT, heldBack field.ErrorList, err error) {
	desired, ok := obj.DeepCopyObject().(PT)
	if !ok {
		return desired, nil, fmt.Errorf("copying %T", obj)
	}
	kind.Default(desired)
	policy := webhooks.CurrentPolicy(g.Policy)
	errs, warnings := kind.Validate(nil, desired, policy)
	judgement, err := policy.JudgeIn(ctx, g.Namespaces, obj.GetNamespace(), errs, warnings)
	if err != nil {
		return desired, nil, err
	}
	heldBack = judgement.HeldBack()
	g.audit(obj, judgement.Broken, errs, warnings, len(heldBack) == 0)
	return desired, webhooks.Rendered(heldBack), nil
}

// audit sets obj's Compliant condition from the rules its stored spec breaks, and the violations
// and warnings the rules found; when recordEvent is set and the broken rules changed, it records a
// PolicyViolation Event regarding obj.
func (g Guard) audit(obj status.Object, broken []webhooks.BrokenRule, errs field.ErrorList, warnings []webhooks.Warning, recordEvent bool) {
	compliant, reason, msg := metav1.ConditionTrue, conditions.ReasonAsExpected, "the spec breaks no rule of the admission policy"
	names := make([]string, len(broken))
	for i, b := range broken {
		names[i] = fmt.Sprintf("%s (%s)", b.ID, b.Action)
	}
	rules := "breaks " + strings.Join(names, ", ") + ": "
	if len(broken) > 0 {
		found := message.Violations(webhooks.Rendered(errs), message.ConditionLimit)
		if len(warnings) > 0 {
			found = strings.TrimSpace(found + " " + strings.Join(webhooks.RenderedWarnings(warnings), "; "))
		}
		compliant, reason = metav1.ConditionFalse, conditions.ReasonRulesBroken
		msg = message.Truncate(rules+found, message.ConditionLimit)
	}
	old := meta.FindStatusCondition(obj.GetConditions(), conditions.Compliant)
	// The message starts with the broken rules, as rendered above: the Event is recorded when that
	// start is new.
	rulesChanged := old == nil || old.Status != compliant || !strings.HasPrefix(old.Message, rules)
	status.Set(obj, conditions.Compliant, compliant, reason, msg)
	if recordEvent && rulesChanged && len(broken) > 0 {
		g.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, conditions.EventReasonPolicyViolation, "Audit", "%s",
			message.Truncate("the spec breaks "+strings.Join(names, ", "), message.EventNoteLimit))
	}
}
