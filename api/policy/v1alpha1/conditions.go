package v1alpha1

// The audit of stored objects: every Welcome, Memcached and DeployObject reports, in a Compliant
// condition, the rules of the admission policy in force its stored spec breaks.
const (
	// ConditionCompliant is True when the stored spec breaks no rule of the admission policy,
	// warnings included, and False naming the rules it breaks and what the policy does about each.
	ConditionCompliant = "Compliant"
	// ReasonRulesBroken means the spec breaks rules of the admission policy.
	ReasonRulesBroken = "RulesBroken"
	// ReasonAsExpected means the spec breaks no rule.
	ReasonAsExpected = "AsExpected"
	// EventReasonPolicyViolation is the reason of the Warning Event recorded when the rules a spec
	// breaks change.
	EventReasonPolicyViolation = "PolicyViolation"
)
