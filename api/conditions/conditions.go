// Package conditions names the status conditions every Welcome, Memcached and DeployObject
// reports, and their reasons: the kinds roll out the same way, so they report it in the same words;
// and the AdmissionPolicy's.
package conditions

// Condition types.
const (
	// Available is True when every requested pod is available, or none is requested.
	Available = "Available"
	// Progressing is True while a rollout of the current spec is under way.
	Progressing = "Progressing"
	// Degraded is True when the spec cannot be rolled out or the rollout failed.
	Degraded = "Degraded"
	// Compliant is True when the stored spec breaks no rule of the admission policy, warnings
	// included, and False naming the rules it breaks and what the policy does about each: the
	// audit of stored objects.
	Compliant = "Compliant"
	// Accepted is the AdmissionPolicy's: True when every rule and registry of its spec is applied.
	Accepted = "Accepted"
)

// Reasons of the conditions.
const (
	// ReasonReconciling means the Deployment and Service are being brought to the spec.
	ReasonReconciling = "Reconciling"
	// ReasonRolledOut means the Deployment runs the current spec with every replica available.
	ReasonRolledOut = "RolledOut"
	// ReasonScaledToZero means no replica is requested, so nothing runs and nothing is missing.
	ReasonScaledToZero = "ScaledToZero"
	// ReasonReplicasUnavailable means fewer replicas are available than requested.
	ReasonReplicasUnavailable = "ReplicasUnavailable"
	// ReasonInvalidSpec means the stored spec fails validation, so it is not rolled out.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonApplyFailed means the Deployment or Service could not be applied.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonNameConflict means a Deployment or Service of the object's name exists that the
	// object does not control, so nothing is applied: the operator never takes over what it did
	// not create.
	ReasonNameConflict = "NameConflict"
	// ReasonRolloutFailed means the Deployment reports that its rollout cannot progress.
	ReasonRolloutFailed = "RolloutFailed"
	// ReasonRulesBroken means the spec breaks rules of the admission policy.
	ReasonRulesBroken = "RulesBroken"
	// ReasonAsExpected means nothing is wrong.
	ReasonAsExpected = "AsExpected"
)

// EventReasonPolicyViolation is the reason of the Warning Event recorded when the rules a spec
// breaks change.
const EventReasonPolicyViolation = "PolicyViolation"

// Reasons of the AdmissionPolicy's Accepted condition.
const (
	// ReasonApplied means every rule and registry of the spec is applied.
	ReasonApplied = "Applied"
	// ReasonPartlyApplied means the spec holds what cannot be applied (stored past the webhook):
	// the rest is applied, and the message says what is not and why.
	ReasonPartlyApplied = "PartlyApplied"
	// ReasonNotRead means the policy is not the one the operator reads, which is named cluster.
	ReasonNotRead = "NotRead"
)
