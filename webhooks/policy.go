package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// The validating webhook of the AdmissionPolicy holds it to ValidateAdmissionPolicy, so that a
// policy the operator cannot apply is refused with every reason, and never stored.
// +kubebuilder:webhook:path=/validate-policy-seedlabs-dev-v1alpha1-admissionpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.seedlabs.dev,resources=admissionpolicies,verbs=create;update,versions=v1alpha1,name=vadmissionpolicy.policy.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// admissionPolicyPath serves the validating webhook of the AdmissionPolicy.
const admissionPolicyPath = "/validate-policy-seedlabs-dev-v1alpha1-admissionpolicy"

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
	action    policyv1alpha1.Action
	overrides []namespaceAction
}

type namespaceAction struct {
	selector labels.Selector
	action   policyv1alpha1.Action
}

// DefaultPolicy is the policy when no AdmissionPolicy exists: every rule at its default action,
// and the image policy of the manager's --allowed-registries.
func DefaultPolicy(images ImagePolicy) *Policy {
	return &Policy{images: images}
}

// NewPolicy compiles the AdmissionPolicy p as every replica applies it, and returns every reason
// it is not wholly valid, as ValidateAdmissionPolicy. What is valid is applied, so that a policy
// stored past its webhook (written before it, or by an older version that allowed what this one
// does not) loses only what this version cannot apply, never the whole:
//   - allowedRegistries absent: the registries of defaults (the manager's --allowed-registries);
//     [] allows any; otherwise the valid entries alone, so a list of no valid entry allows none
//     (an invalid entry never widens what is allowed);
//   - maxReplicas below the default cap (stored past the CRD's schema) is dropped: the cap stays;
//   - a rule with an unknown or repeated ID (the first of an ID applies, if valid), an action it
//     cannot take, or an invalid namespace selector is dropped whole, and the rule keeps its
//     default action;
//   - past the schema's bounds (bounds.go), the rules, registries and namespace overrides past
//     them are dropped, and so is a rule with a selector past them, so that compiling costs no
//     more than a policy the schema admits.
func NewPolicy(p *policyv1alpha1.AdmissionPolicy, defaults ImagePolicy) (*Policy, field.ErrorList) {
	var errs field.ErrorList
	if p.Name != policyv1alpha1.PolicyName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), p.Name,
			fmt.Sprintf("the operator reads only the AdmissionPolicy named %s", policyv1alpha1.PolicyName)))
	}
	spec := field.NewPath("spec")
	rules, registries := p.Spec.Rules, p.Spec.AllowedRegistries
	errs = append(errs, maxItems(spec.Child("rules"), len(rules), policyv1alpha1.MaxRulesItems)...)
	errs = append(errs, maxItems(spec.Child("allowedRegistries"), len(registries), policyv1alpha1.MaxAllowedRegistriesItems)...)
	rules = rules[:min(len(rules), policyv1alpha1.MaxRulesItems)]
	compiled := &Policy{images: defaults, rules: make(map[RuleID]rulePolicy, len(rules))}
	if registries != nil {
		images, imageErrs := compileImagePolicy(registries[:min(len(registries), policyv1alpha1.MaxAllowedRegistriesItems)], spec.Child("allowedRegistries"))
		compiled.images, errs = images, append(errs, imageErrs...)
	}
	if m := p.Spec.MaxReplicas; m != nil {
		if *m < defaultMaxReplicas {
			errs = append(errs, field.Invalid(spec.Child("maxReplicas"), *m, fmt.Sprintf(
				"may only raise the cap of %d replicas: the API server does not call the Welcome's webhook for %d or fewer; to refuse fewer, set a ResourceQuota",
				defaultMaxReplicas, defaultMaxReplicas)))
		} else {
			compiled.maxReplicas = *m
		}
	}
	seen := map[string]bool{}
	terms := maxSelectorTerms
	for i, r := range rules {
		path := spec.Child("rules").Index(i)
		rp, ruleErrs := compileRule(r, path, &terms)
		if seen[r.ID] {
			ruleErrs = append(ruleErrs, field.Duplicate(path.Child("id"), r.ID))
		}
		seen[r.ID] = true
		if errs = append(errs, ruleErrs...); len(ruleErrs) == 0 {
			compiled.rules[RuleID(r.ID)] = rp
		}
	}
	return compiled, errs
}

// compileRule compiles one rule of a policy, or says why it cannot be applied; its selectors take
// their labels and values from terms (selectorBounds).
func compileRule(r policyv1alpha1.RulePolicy, path *field.Path, terms *int) (rulePolicy, field.ErrorList) {
	var errs field.ErrorList
	rule, known := ruleByID(RuleID(r.ID))
	if !known {
		errs = append(errs, field.NotSupported(path.Child("id"), r.ID, ruleIDs()))
	}
	errs = append(errs, validateAction(rule, known, r.Action, path.Child("action"))...)
	rp := rulePolicy{action: r.Action}
	errs = append(errs, maxItems(path.Child("namespaces"), len(r.Namespaces), policyv1alpha1.MaxNamespacesItems)...)
	for j, o := range r.Namespaces[:min(len(r.Namespaces), policyv1alpha1.MaxNamespacesItems)] {
		op := path.Child("namespaces").Index(j)
		// Kubernetes' own validation of a selector names each bad key and value, in time that
		// grows with them; parsing one that is invalid would join its errors into one message,
		// in time that grows with their square.
		invalid := selectorBounds(o, op.Child("selector"), terms)
		if len(invalid) == 0 {
			invalid = metav1validation.ValidateLabelSelector(&o.Selector, metav1validation.LabelSelectorValidationOptions{}, op.Child("selector"))
		}
		if len(invalid) > 0 {
			errs = append(errs, invalid...)
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(&o.Selector)
		if err != nil {
			errs = append(errs, field.Invalid(op.Child("selector"), o.Selector, err.Error()))
		}
		errs = append(errs, validateAction(rule, known, o.Action, op.Child("action"))...)
		rp.overrides = append(rp.overrides, namespaceAction{selector: selector, action: o.Action})
	}
	return rp, errs
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

// WithoutImagePolicy is the policy with no image policy: what a stored spec is held back by, as
// the registry allow-list never holds back an image admitted before the list changed.
func (p *Policy) WithoutImagePolicy() *Policy {
	if p == nil {
		return nil
	}
	without := *p
	without.images = ImagePolicy{}
	return &without
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

// Action is what admission does about rule id in a namespace of the given labels.
func (p *Policy) Action(id RuleID, namespace labels.Labels) policyv1alpha1.Action {
	rule, known := ruleByID(id)
	action := policyv1alpha1.Enforce
	if known && rule.Warning {
		action = policyv1alpha1.Warn
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

// Judgement is what the policy makes of what the rules found.
type Judgement struct {
	// Refused are the violations of Enforced rules.
	Refused field.ErrorList
	// Warnings are the warnings of Warned rules and the violations of Warned rules, as warnings.
	Warnings admission.Warnings
	// Audited are the rules whose violations or warnings were only counted.
	Audited []RuleID
}

// Judge applies the policy to what the rules found in an object of a namespace of the given
// labels.
func (p *Policy) Judge(errs field.ErrorList, warnings admission.Warnings, namespace labels.Labels) Judgement {
	var j Judgement
	audit := func(id RuleID) {
		if !slices.Contains(j.Audited, id) {
			j.Audited = append(j.Audited, id)
		}
	}
	for _, e := range errs {
		switch id := RuleID(e.Origin); p.Action(id, namespace) {
		case policyv1alpha1.Warn:
			j.Warnings = append(j.Warnings, e.Error())
		case policyv1alpha1.Audit:
			audit(id)
		default:
			j.Refused = append(j.Refused, e)
		}
	}
	for _, w := range warnings {
		id := RuleOfWarning(w)
		if p.Action(id, namespace) == policyv1alpha1.Audit {
			audit(id)
			continue
		}
		j.Warnings = append(j.Warnings, w)
	}
	return j
}

// ValidateAdmissionPolicy returns every reason the AdmissionPolicy cannot be applied whole: the
// validating webhook refuses a policy with any, so that one is stored only past the webhook.
func ValidateAdmissionPolicy(p *policyv1alpha1.AdmissionPolicy) field.ErrorList {
	_, errs := NewPolicy(p, ImagePolicy{})
	return errs
}

var actions = []policyv1alpha1.Action{policyv1alpha1.Enforce, policyv1alpha1.Warn, policyv1alpha1.Audit}

// validateAction requires an action the rule can take: a contract rule is always Enforced, and a
// warning rule, which names no field to refuse, is Warned or Audited.
func validateAction(rule Rule, known bool, action policyv1alpha1.Action, path *field.Path) field.ErrorList {
	switch {
	case !slices.Contains(actions, action):
		return field.ErrorList{field.NotSupported(path, action, actions)}
	case !known:
		return nil
	case rule.Contract && action != policyv1alpha1.Enforce:
		return field.ErrorList{field.Invalid(path, action, fmt.Sprintf(
			"%s is a contract rule: an object that breaks it would be admitted and then fail when its Deployment or Service is applied, so it is always Enforced",
			rule.ID))}
	case rule.Warning && action == policyv1alpha1.Enforce:
		return field.ErrorList{field.Invalid(path, action, fmt.Sprintf("%s is a warning: it can be Warned or Audited", rule.ID))}
	}
	return nil
}

func ruleIDs() []string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = string(r.ID)
	}
	return ids
}

// PolicySource is where the webhooks and controllers read the policy in force.
type PolicySource interface {
	Current() *Policy
}

// CurrentPolicy is the policy source holds, nil (every rule at its default) without a source.
func CurrentPolicy(source PolicySource) *Policy {
	if source == nil {
		return nil
	}
	return source.Current()
}

// NamespaceLabelsFor are the labels of namespace when p's namespace overrides need them, read
// with namespaces; nil when they do not.
func NamespaceLabelsFor(ctx context.Context, p *Policy, namespaces Namespaces, namespace string) (labels.Set, error) {
	if !p.SelectsNamespaces() || namespace == "" {
		return nil, nil
	}
	if namespaces == nil {
		return nil, fmt.Errorf("the admission policy selects namespaces, and there is no way to read them")
	}
	l, err := namespaces.NamespaceLabels(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the labels of namespace %s for the admission policy: %w", namespace, err)
	}
	return l, nil
}

// StaticPolicy is a PolicySource that never changes.
type StaticPolicy struct{ Policy *Policy }

// Current implements PolicySource.
func (s StaticPolicy) Current() *Policy { return s.Policy }

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
