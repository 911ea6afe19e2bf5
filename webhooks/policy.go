package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// Policy is an AdmissionPolicy made ready to apply: the image policy, the replica cap, and the
// action of every rule it changes. The zero Policy enforces every rule under no image policy and
// the default cap; a nil *Policy is the zero Policy.
type Policy struct {
	images ImagePolicy
	// maxReplicas is the raised replica cap; 0 is the default, defaultMaxReplicas.
	maxReplicas int32
	rules       map[RuleID]rulePolicy
}

// rulePolicy is the action of one rule, and its overrides by namespace, first match first.
type rulePolicy struct {
	action    policyv1.Action
	overrides []namespaceAction
}

type namespaceAction struct {
	selector labels.Selector
	action   policyv1.Action
}

// DefaultPolicy is the policy when no AdmissionPolicy exists: every rule at its default action,
// and the image policy of the manager's --allowed-registries.
func DefaultPolicy(images ImagePolicy) *Policy {
	return &Policy{images: images}
}

// Images is the image policy the policy holds images to.
func (p *Policy) Images() ImagePolicy {
	if p == nil {
		return ImagePolicy{}
	}
	return p.images
}

// MaxReplicas is the most replicas a Welcome or DeployObject may ask for under
// welcome.replicas.max and deployobject.replicas.max.
func (p *Policy) MaxReplicas() int32 {
	if p == nil || p.maxReplicas == 0 {
		return defaultMaxReplicas
	}
	return p.maxReplicas
}

// SelectsNamespaces reports whether an action depends on the namespace's labels.
func (p *Policy) SelectsNamespaces() bool {
	if p == nil {
		return false
	}
	for _, r := range p.rules {
		if len(r.overrides) > 0 {
			return true
		}
	}
	return false
}

// Action is what admission does about rule id in a namespace of the given labels: the rule's
// default, unless the policy changes it.
func (p *Policy) Action(id RuleID, namespace labels.Labels) policyv1.Action {
	rule, known := ruleByID(id)
	action := policyv1.Enforce
	if known {
		action = rule.Default
	}
	if p == nil {
		return action
	}
	r, set := p.rules[id]
	if !set {
		return action
	}
	if namespace == nil {
		namespace = labels.Set{}
	}
	for _, o := range r.overrides {
		if o.selector.Matches(namespace) {
			return o.action
		}
	}
	return r.action
}

// Judgement is what the policy makes of what the rules found in one object: every answer about
// it (the refusal, the warnings, the metrics, the Compliant condition, what a controller holds
// back) follows from it.
type Judgement struct {
	// Refused are the violations of Enforced rules.
	Refused field.ErrorList
	// Warnings are the warnings of Warned rules, and the violations of Warned rules as warnings.
	Warnings []Warning
	// Broken are the rules broken, each once and in the order found, with the action the policy
	// takes on each.
	Broken []BrokenRule
}

// BrokenRule is a rule an object breaks, and what the policy does about it.
type BrokenRule struct {
	ID     RuleID
	Action policyv1.Action
}

// Audited are the rules whose violations and warnings were only counted.
func (j Judgement) Audited() []RuleID {
	var ids []RuleID
	for _, b := range j.Broken {
		if b.Action == policyv1.Audit {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// HeldBack are the refused violations that hold back a stored spec: those of every rule but the
// AdmissionOnly ones.
func (j Judgement) HeldBack() field.ErrorList {
	var held field.ErrorList
	for _, e := range j.Refused {
		if rule, known := ruleByID(RuleID(e.Origin)); !known || !rule.AdmissionOnly {
			held = append(held, e)
		}
	}
	return held
}

// Judge applies the policy to what the rules found in an object of a namespace of the given
// labels.
func (p *Policy) Judge(errs field.ErrorList, warnings []Warning, namespace labels.Labels) Judgement {
	var j Judgement
	actions := map[RuleID]policyv1.Action{}
	action := func(id RuleID) policyv1.Action {
		a, judged := actions[id]
		if !judged {
			a = p.Action(id, namespace)
			actions[id] = a
			if id != "" {
				j.Broken = append(j.Broken, BrokenRule{ID: id, Action: a})
			}
		}
		return a
	}
	for _, e := range errs {
		switch id := RuleID(e.Origin); action(id) {
		case policyv1.Warn:
			j.Warnings = append(j.Warnings, Warning{Rule: id, Message: e.Error()})
		case policyv1.Audit:
		default:
			j.Refused = append(j.Refused, e)
		}
	}
	for _, w := range warnings {
		if action(w.Rule) != policyv1.Audit {
			j.Warnings = append(j.Warnings, w)
		}
	}
	return j
}

// JudgeIn is Judge for an object of namespace, whose labels it reads with namespaces only when
// there is something to judge and an override of the policy selects namespaces. A namespace whose
// labels cannot be read is an error: no override is applied that could not be checked.
func (p *Policy) JudgeIn(ctx context.Context, namespaces Namespaces, namespace string, errs field.ErrorList, warnings []Warning) (Judgement, error) {
	var l labels.Set
	if len(errs) > 0 || len(warnings) > 0 {
		var err error
		if l, err = namespaceLabels(ctx, p, namespaces, namespace); err != nil {
			return Judgement{}, err
		}
	}
	return p.Judge(errs, warnings, l), nil
}

// String names the policy's changed rules and a raised replica cap, for logs.
func (p *Policy) String() string {
	var parts []string
	if p != nil {
		for id, r := range p.rules {
			parts = append(parts, fmt.Sprintf("%s=%s(+%d namespace overrides)", id, r.action, len(r.overrides)))
		}
	}
	slices.Sort(parts)
	rules := "every rule at its default action"
	if len(parts) > 0 {
		rules = strings.Join(parts, ", ")
	}
	if p.MaxReplicas() != defaultMaxReplicas {
		rules += fmt.Sprintf("; at most %d replicas", p.MaxReplicas())
	}
	return rules
}
