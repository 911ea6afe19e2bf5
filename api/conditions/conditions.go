// Package conditions names the status conditions every Welcome, Memcached and DeployObject
// reports, and their reasons: the kinds roll out the same way, so they report it in the same words;
// and the AdmissionPolicy's. The types follow kstatus' conventions (sigs.k8s.io/cli-utils
// pkg/kstatus, which Flux, kpt and Config Sync read): Ready says the object is done, Reconciling
// that the operator is still at work on it, Stalled that it cannot progress without a change; at
// most one of the three is True, each carries the observedGeneration it describes, and so does
// status.observedGeneration. docs/operations.md#conditions describes each once for users.
package conditions

// MaxItems is the most conditions the status of every kind holds, as its CRD's schema allows
// (a +kubebuilder:validation:MaxItems marker on each kind's conditions, which a test holds equal
// to it): the operator writes at most four, and drops conditions other writers set when its own
// would not fit beside them.
const MaxItems = 32

// Condition types.
const (
	// Ready is True when the current spec is fully rolled out: the Deployment has observed its
	// generation and exactly the requested replicas run it, updated, ready and available, no
	// replica of an older spec is left, and the Service is applied. A spec of zero replicas is
	// Ready once no pod is left (reason ScaledToZero). On an AdmissionPolicy, True when every rule
	// and registry of its spec is in force (reason Applied).
	Ready = "Ready"
	// Reconciling is True while the operator is bringing the Deployment and Service to the
	// current spec and the rollout can still progress.
	Reconciling = "Reconciling"
	// Stalled is True when the current spec cannot progress without a change, to the spec or to
	// the cluster: the spec breaks the rules (InvalidSpec), another object holds the name
	// (NameConflict), the API server refuses the Deployment or Service (ApplyFailed, retried with
	// backoff), a pod of the current template cannot start a container (ContainerCannotStart), or
	// the Deployment reports that its rollout failed (RolloutFailed). On an
	// AdmissionPolicy, True when part of the spec cannot be applied (PartlyApplied) or the policy
	// is not the one the operator reads (NotRead).
	Stalled = "Stalled"
	// Compliant is True when the stored spec breaks no rule of the admission policy, warnings
	// included, and False naming the rules it breaks and what the policy does about each: the
	// audit of stored objects.
	Compliant = "Compliant"
)

// Reasons of the conditions.
const (
	// ReasonReconciling means the Deployment and Service are being brought to the spec: a
	// rollout is under way, or the Deployment has not yet seen its new template.
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
	// ReasonContainerCannotStart means a pod of the Deployment's current template has a container
	// its kubelet will not start until the spec or the cluster changes: its image cannot be pulled
	// (a missing pull secret, an image that does not exist) or its configuration cannot be made (a
	// missing ConfigMap or Secret). The message names the pod and container and quotes the
	// kubelet; the condition clears once the container starts.
	ReasonContainerCannotStart = "ContainerCannotStart"
	// ReasonRulesBroken means the spec breaks rules of the admission policy.
	ReasonRulesBroken = "RulesBroken"
	// ReasonAsExpected means nothing is wrong.
	ReasonAsExpected = "AsExpected"
)

// The reasons of the Events the operator records, besides the condition reasons above (an Event
// for a condition that turns False has the condition's reason).
const (
	// EventReasonPolicyViolation is a Warning on a custom resource: the rules its stored spec
	// breaks changed, and the policy lets it roll out.
	EventReasonPolicyViolation = "PolicyViolation"
	// EventReasonAdmissionRefused is a Warning in a namespace: admission refused an object of it.
	EventReasonAdmissionRefused = "AdmissionRefused"
	// EventReasonCreated is Normal on a custom resource: its Deployment or Service was created.
	EventReasonCreated = "Created"
	// EventReasonScaled is Normal on a Memcached: its Deployment's replicas were changed to
	// spec.size.
	EventReasonScaled = "Scaled"
	// EventReasonCRDMissing is a Warning on the manager's Pod: a CustomResourceDefinition of the
	// operator is not established, or is being deleted.
	EventReasonCRDMissing = "CustomResourceDefinitionMissing"
	// EventReasonCRDEstablished is Normal on the manager's Pod: a CustomResourceDefinition that was
	// missing is established.
	EventReasonCRDEstablished = "CustomResourceDefinitionEstablished"
)

// Reasons of the AdmissionPolicy's Ready and Stalled conditions.
const (
	// ReasonApplied means every rule and registry of the spec is applied.
	ReasonApplied = "Applied"
	// ReasonPartlyApplied means the spec holds what cannot be applied (stored past the webhook):
	// the rest is applied, and the message says what is not and why.
	ReasonPartlyApplied = "PartlyApplied"
	// ReasonNotRead means the policy is not the one the operator reads, which is named cluster.
	ReasonNotRead = "NotRead"
)
