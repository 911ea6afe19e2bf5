// Package compliance reports, on every object, the rules of the admission policy its stored spec
// breaks: the audit of stored objects. An object admitted under a rule the policy Warns about or
// Audits, or before the policy changed, says so in a Compliant condition and one Event when what
// it breaks changes; nothing that runs is stopped for it.
package compliance

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/seedlabs/webhook-operator/internal/controller/message"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const (
	// ConditionCompliant is True when the stored spec breaks no rule of the admission policy,
	// warnings included, and False naming the rules it breaks and what the policy does about each.
	ConditionCompliant = "Compliant"
	// ReasonRulesBroken means the spec breaks rules of the admission policy.
	ReasonRulesBroken = "RulesBroken"
	// ReasonAsExpected means the spec breaks no rule.
	ReasonAsExpected = "AsExpected"
	// EventReason is the reason of the Warning Event recorded when the rules a spec breaks change.
	EventReason = "PolicyViolation"
)

// Audit judges what the rules found in a stored spec (errs and warnings, under the policy's image
// policy) and sets the Compliant condition of generation on conditions. It reports whether the
// condition changed to name other broken rules, and the note of the Event to record then.
func Audit(ctx context.Context, source webhooks.PolicySource, namespaces webhooks.NamespaceLabels, namespace string,
	conditions *[]metav1.Condition, generation int64, errs field.ErrorList, warnings []string,
) (changed bool, note string, err error) {
	p := webhooks.CurrentPolicy(source)
	var nsLabels labels.Set
	if len(errs) > 0 || len(warnings) > 0 {
		if nsLabels, err = webhooks.NamespaceLabelsFor(ctx, p, namespaces, namespace); err != nil {
			return false, "", err
		}
	}
	var broken []string
	seen := map[webhooks.RuleID]bool{}
	add := func(id webhooks.RuleID) {
		if id != "" && !seen[id] {
			seen[id] = true
			broken = append(broken, fmt.Sprintf("%s (%s)", id, p.Action(id, nsLabels)))
		}
	}
	for _, e := range errs {
		add(webhooks.RuleID(e.Origin))
	}
	for _, w := range warnings {
		add(webhooks.RuleOfWarning(w))
	}

	condition := metav1.Condition{Type: ConditionCompliant, Status: metav1.ConditionTrue, Reason: ReasonAsExpected,
		Message: "the spec breaks no rule of the admission policy", ObservedGeneration: generation}
	if len(broken) > 0 {
		found := message.Violations(errs, message.ConditionLimit)
		if len(warnings) > 0 {
			found = strings.TrimSpace(found + " " + strings.Join(warnings, "; "))
		}
		condition.Status, condition.Reason = metav1.ConditionFalse, ReasonRulesBroken
		condition.Message = message.Truncate("breaks "+strings.Join(broken, ", ")+": "+found, message.ConditionLimit)
		note = message.Truncate("the spec breaks "+strings.Join(broken, ", "), message.EventNoteLimit)
	}
	old := meta.FindStatusCondition(*conditions, ConditionCompliant)
	namesChanged := old == nil || old.Status != condition.Status || rulesOf(old.Message) != rulesOf(condition.Message)
	meta.SetStatusCondition(conditions, condition)
	return namesChanged && len(broken) > 0, note, nil
}

// rulesOf is the list of broken rules at the start of a Compliant message.
func rulesOf(msg string) string {
	rules, _, _ := strings.Cut(msg, ": ")
	return rules
}
