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
	"k8s.io/apimachinery/pkg/labels"
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
// admission of a create would, and returns it with the violations the policy in force refuses in obj's namespace: while
// there are any, nothing is rolled out.
//
// The registry allow-list is admission policy, not a structural rule, so it never holds a spec
// back: an image admitted before the list changed keeps running. It is audited: Check sets obj's
// Compliant condition from every rule the spec breaks, allow-list and warnings included, and
// records a PolicyViolation Event when the broken rules change and nothing holds the spec back
// (the InvalidSpec Event of a spec held back already says what it breaks).
func Check[T any, PT interface {
	*T
	status.Object
}](ctx context.Context, g Guard, obj PT, kind webhooks.Kind[T, PT]) (desired PT, enforced field.ErrorList, err error) {
	desired, ok := obj.DeepCopyObject().(PT)
	if !ok {
		return desired, nil, fmt.Errorf("copying %T", obj)
	}
	kind.Default(desired)
	// One read of the policy in force, so that what is found and how it is judged agree.
	policy := webhooks.CurrentPolicy(g.Policy)
	errs, _ := kind.Validate(nil, desired, policy.WithoutImagePolicy())
	if enforced, err = webhooks.Enforced(ctx, webhooks.StaticPolicy{Policy: policy}, g.Namespaces, obj.GetNamespace(), errs); err != nil {
		return desired, nil, err
	}
	found, warnings := kind.Validate(nil, desired, policy)
	if err := g.audit(ctx, policy, obj, found, warnings, len(enforced) == 0); err != nil {
		return desired, nil, err
	}
	return desired, enforced, nil
}

// audit judges what the rules found in obj's stored spec (errs and warnings, under p with its
// image policy), sets obj's Compliant condition, and, when recordEvent is set and the condition
// came to name other broken rules, records a PolicyViolation Event regarding obj.
func (g Guard) audit(ctx context.Context, p *webhooks.Policy, obj status.Object, errs field.ErrorList, warnings []string, recordEvent bool) error {
	var nsLabels labels.Set
	if len(errs) > 0 || len(warnings) > 0 {
		var err error
		if nsLabels, err = webhooks.NamespaceLabelsFor(ctx, p, g.Namespaces, obj.GetNamespace()); err != nil {
			return err
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

	compliant, reason, msg := metav1.ConditionTrue, conditions.ReasonAsExpected, "the spec breaks no rule of the admission policy"
	if len(broken) > 0 {
		found := message.Violations(errs, message.ConditionLimit)
		if len(warnings) > 0 {
			found = strings.TrimSpace(found + " " + strings.Join(warnings, "; "))
		}
		compliant, reason = metav1.ConditionFalse, conditions.ReasonRulesBroken
		msg = message.Truncate("breaks "+strings.Join(broken, ", ")+": "+found, message.ConditionLimit)
	}
	old := meta.FindStatusCondition(obj.GetConditions(), conditions.Compliant)
	namesChanged := old == nil || old.Status != compliant || rulesOf(old.Message) != rulesOf(msg)
	status.Set(obj, conditions.Compliant, compliant, reason, msg)
	if recordEvent && namesChanged && len(broken) > 0 {
		g.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, conditions.EventReasonPolicyViolation, "Audit", "%s",
			message.Truncate("the spec breaks "+strings.Join(broken, ", "), message.EventNoteLimit))
	}
	return nil
}

// rulesOf is the list of broken rules at the start of a Compliant message.
func rulesOf(msg string) string {
	rules, _, _ := strings.Cut(msg, ": ")
	return rules
}
