// Package compliance reports, on every object, the rules of the admission policy its stored spec
// breaks: the audit of stored objects. An object admitted under a rule the policy Warns about or
// Audits, or before the policy changed, says so in a Compliant condition and one Event when what
// it breaks changes; nothing that runs is stopped for it.
package compliance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/message"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Audit judges what the rules found in obj's stored spec (errs and warnings, under the policy's
// image policy), sets the Compliant condition of obj's generation on conditions, and, when
// recordEvent is set and the condition came to name other broken rules, records a PolicyViolation
// Event regarding obj.
func Audit(ctx context.Context, source webhooks.PolicySource, namespaces webhooks.NamespaceLabels, events recorder.EventRecorder,
	obj client.Object, conditions *[]metav1.Condition, errs field.ErrorList, warnings []string, recordEvent bool,
) error {
	p := webhooks.CurrentPolicy(source)
	var nsLabels labels.Set
	if len(errs) > 0 || len(warnings) > 0 {
		var err error
		if nsLabels, err = webhooks.NamespaceLabelsFor(ctx, p, namespaces, obj.GetNamespace()); err != nil {
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

	condition := metav1.Condition{Type: policyv1alpha1.ConditionCompliant, Status: metav1.ConditionTrue, Reason: policyv1alpha1.ReasonAsExpected,
		Message: "the spec breaks no rule of the admission policy", ObservedGeneration: obj.GetGeneration()}
	if len(broken) > 0 {
		found := message.Violations(errs, message.ConditionLimit)
		if len(warnings) > 0 {
			found = strings.TrimSpace(found + " " + strings.Join(warnings, "; "))
		}
		condition.Status, condition.Reason = metav1.ConditionFalse, policyv1alpha1.ReasonRulesBroken
		condition.Message = message.Truncate("breaks "+strings.Join(broken, ", ")+": "+found, message.ConditionLimit)
	}
	old := meta.FindStatusCondition(*conditions, policyv1alpha1.ConditionCompliant)
	namesChanged := old == nil || old.Status != condition.Status || rulesOf(old.Message) != rulesOf(condition.Message)
	meta.SetStatusCondition(conditions, condition)
	if recordEvent && namesChanged && len(broken) > 0 {
		events.Eventf(obj, nil, corev1.EventTypeWarning, policyv1alpha1.EventReasonPolicyViolation, "Audit", "%s",
			message.Truncate("the spec breaks "+strings.Join(broken, ", "), message.EventNoteLimit))
	}
	return nil
}

// rulesOf is the list of broken rules at the start of a Compliant message.
func rulesOf(msg string) string {
	rules, _, _ := strings.Cut(msg, ": ")
	return rules
}
