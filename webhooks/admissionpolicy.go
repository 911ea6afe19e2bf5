package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// The validating webhook of the AdmissionPolicy holds it to ValidateAdmissionPolicy, so that a
// policy the operator cannot apply is refused with every reason, and never stored.
// +kubebuilder:webhook:path=/validate-policy-seedlabs-dev-v1-admissionpolicy,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.seedlabs.dev,resources=admissionpolicies,verbs=create;update,versions=v1,name=vadmissionpolicy.policy.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Equivalent

// admissionPolicyPath serves the validating webhook of the AdmissionPolicy at v1, which its
// webhook configuration calls for both versions: kube-apiserver converts a v1alpha1 policy to v1
// in process (conversion None), calling no webhook.
const admissionPolicyPath = "/validate-policy-seedlabs-dev-v1-admissionpolicy"

// admissionPolicyV1alpha1Path serves the validating webhook of the AdmissionPolicy at v1alpha1,
// which the previous release's configuration calls, so that it may be called during an upgrade
// from it: ValidateAdmissionPolicy, on the policy at v1.
const admissionPolicyV1alpha1Path = "/validate-policy-seedlabs-dev-v1alpha1-admissionpolicy"

// admissionPolicyV1 is p at v1, which has the same fields (TestNoneKindsVersionsAreIdentical),
// through JSON: the element types of their lists differ by name, so Go cannot convert one to the
// other.
func admissionPolicyV1(p *policyv1alpha1.AdmissionPolicy) *policyv1.AdmissionPolicy {
	out := &policyv1.AdmissionPolicy{}
	data, err := json.Marshal(p)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		panic(fmt.Sprintf("an AdmissionPolicy at v1alpha1 does not read at v1: %v", err)) // the same fields always do
	}
	return out
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
//
// It is called in three places, each for its own reason: the operator's live policy
// (internal/operator/policy.go), the policy in force on every replica, which the webhooks and the
// controllers read; ValidateAdmissionPolicy, for the reasons alone, which the AdmissionPolicy's
// webhook refuses and its controller reports; and the kubectl plugin, which lints offline under
// a policy file.
func NewPolicy(p *policyv1.AdmissionPolicy, defaults ImagePolicy) (*Policy, field.ErrorList) {
	var errs field.ErrorList
	if p.Name != policyv1.PolicyName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), p.Name,
			fmt.Sprintf("the operator reads only the AdmissionPolicy named %s", policyv1.PolicyName)))
	}
	spec := field.NewPath("spec")
	rules, registries := p.Spec.Rules, p.Spec.AllowedRegistries
	errs = append(errs, maxItems(spec.Child("rules"), len(rules), policyv1.MaxRulesItems)...)
	errs = append(errs, maxItems(spec.Child("allowedRegistries"), len(registries), policyv1.MaxAllowedRegistriesItems)...)
	rules = rules[:min(len(rules), policyv1.MaxRulesItems)]
	compiled := &Policy{images: defaults, rules: make(map[RuleID]rulePolicy, len(rules))}
	if registries != nil {
		images, imageErrs := compileImagePolicy(registries[:min(len(registries), policyv1.MaxAllowedRegistriesItems)], spec.Child("allowedRegistries"))
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
func compileRule(r policyv1.RulePolicy, path *field.Path, terms *int) (rulePolicy, field.ErrorList) {
	var errs field.ErrorList
	rule, known := ruleByID(RuleID(r.ID))
	if !known {
		errs = append(errs, field.NotSupported(path.Child("id"), r.ID, ruleIDs()))
	}
	errs = append(errs, validateAction(rule, known, r.Action, path.Child("action"))...)
	rp := rulePolicy{action: r.Action}
	errs = append(errs, maxItems(path.Child("namespaces"), len(r.Namespaces), policyv1.MaxNamespacesItems)...)
	for j, o := range r.Namespaces[:min(len(r.Namespaces), policyv1.MaxNamespacesItems)] {
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

// ValidateAdmissionPolicy returns every reason the AdmissionPolicy cannot be applied whole: the
// validating webhook refuses a policy with any, so that one is stored only past the webhook.
func ValidateAdmissionPolicy(p *policyv1.AdmissionPolicy) field.ErrorList {
	_, errs := NewPolicy(p, ImagePolicy{})
	return errs
}

// validateAction requires an action the rule can take (Rule.Actions).
func validateAction(rule Rule, known bool, action policyv1.Action, path *field.Path) field.ErrorList {
	switch {
	case !slices.Contains(anyAction, action):
		return field.ErrorList{field.NotSupported(path, action, anyAction)}
	case !known || slices.Contains(rule.Actions, action):
		return nil
	case rule.Contract():
		return field.ErrorList{field.Invalid(path, action, fmt.Sprintf(
			"%s is a contract rule: an object that breaks it would be admitted and then fail when its Deployment or Service is applied, so it is always Enforced",
			rule.ID))}
	default:
		return field.ErrorList{field.Invalid(path, action, fmt.Sprintf("%s is a warning: it can be Warned or Audited", rule.ID))}
	}
}

func ruleIDs() []string {
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = string(r.ID)
	}
	return ids
}
