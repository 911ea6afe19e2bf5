package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyName is the name of the one AdmissionPolicy the operator reads.
const PolicyName = "cluster"

// Structural bounds of an AdmissionPolicy, which the CRD's schema holds (the markers and CEL
// rules below, which a test holds equal to these) so that kube-apiserver refuses an absurd size
// before it calls the validating webhook.
const (
	// MaxAllowedRegistriesItems is the most entries of spec.allowedRegistries.
	MaxAllowedRegistriesItems = 256
	// MaxRegistryLength is the most characters of one allowed registry: an image reference's
	// name, registry host included, has at most 255.
	MaxRegistryLength = 512
	// MaxRulesItems is the most entries of spec.rules, more than three times the rules there are.
	MaxRulesItems = 128
	// MaxRuleIDLength is the most characters of a rule's ID.
	MaxRuleIDLength = 256
	// MaxActionLength is the most characters of an action; the longest, Enforce, has 7.
	MaxActionLength = 64
	// MaxNamespacesItems is the most namespace overrides of one rule.
	MaxNamespacesItems = 32
	// MaxMatchLabelsProperties is the most matchLabels of one override's selector.
	MaxMatchLabelsProperties = 64
	// MaxMatchExpressionsItems is the most matchExpressions of one override's selector.
	MaxMatchExpressionsItems = 64
)

// Action is what admission does about a broken rule: Enforce, Warn or Audit. The schema refuses
// more than 64 characters.
// +kubebuilder:validation:MaxLength=64
type Action string

const (
	// Enforce refuses the request.
	Enforce Action = "Enforce"
	// Warn admits the request with a warning that names the violation.
	Warn Action = "Warn"
	// Audit admits the request and only counts the violation
	// (webhook_operator_rule_results_total{action="audited"}).
	Audit Action = "Audit"
)

// AdmissionPolicySpec is what admission does about each rule, and which registries images may
// come from.
//
// Rule IDs, actions and selectors are checked by the operator's validating webhook, so that one
// bad policy gets every violation in a single reply. The schema holds only structural bounds,
// which kube-apiserver checks before calling the webhook.
type AdmissionPolicySpec struct {
	// AllowedRegistries are the registries an image of a DeployObject or a Welcome may come from,
	// such as docker.io or registry.local:5000. Absent, the manager's --allowed-registries hold;
	// an empty list, [], allows any registry. A stored entry that is not a registry host (one
	// written past the webhook) allows nothing, so a list of no valid entry allows no registry.
	// At most 256 entries of at most 512 characters (an image reference's name, registry host
	// included, has at most 255).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=512
	AllowedRegistries []string `json:"allowedRegistries"`

	// MaxReplicas raises the cap of welcome.replicas.max and deployobject.replicas.max, the most
	// replicas a Welcome or DeployObject may ask for, from 100. It only raises: the API server
	// does not call the Welcome's validating webhook for 100 replicas or fewer, so a lower cap
	// could not be held at admission. To lift the cap, or to lift it only in some namespaces, set
	// those rules to Warn or Audit.
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=2147483647
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Rules set the action of rules by ID (kubectl webhook-operator rules lists them, and
	// docs/rules.md). A rule not listed keeps its default: Enforce for the rules that refuse,
	// Warn for those that warn. Contract rules, which protect what the operator builds, are
	// always Enforced; warning rules can be Warned or Audited. At most 128 entries, more than
	// three times the rules there are.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=128
	Rules []RulePolicy `json:"rules,omitempty"`
}

// RulePolicy is what admission does about one rule.
type RulePolicy struct {
	// ID is the rule's ID, such as deployobject.image.pinned; at most 256 characters.
	// +required
	// +kubebuilder:validation:MaxLength=256
	ID string `json:"id"`

	// Action is what admission does about the rule, in every namespace no override selects.
	// +required
	Action Action `json:"action"`

	// Namespaces override the action in the namespaces they select; the first that selects the
	// object's namespace decides. At most 32.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Namespaces []NamespaceAction `json:"namespaces,omitempty"`
}

// NamespaceAction is the action of a rule in the namespaces a selector selects.
type NamespaceAction struct {
	// Selector selects namespaces by their labels; an empty selector selects every namespace. At
	// most 64 matchLabels and 64 matchExpressions.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.size() <= 64",message="spec.rules[*].namespaces[*].selector.matchLabels must have at most 64 entries"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.size() <= 64",message="spec.rules[*].namespaces[*].selector.matchExpressions must have at most 64 items"
	Selector metav1.LabelSelector `json:"selector"`

	// Action is what admission does about the rule in the selected namespaces.
	// +required
	Action Action `json:"action"`
}

// AdmissionPolicyStatus is what the operator made of the policy: the leader writes it, from the
// same compilation every replica applies.
type AdmissionPolicyStatus struct {
	// ObservedGeneration is the generation of the spec the conditions describe; 0 until the
	// operator first reports, so that no tool takes a policy it has not seen for applied.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is True when every rule and registry of the spec is applied, and False
	// when some cannot be (reason PartlyApplied, the message naming each and why: a policy stored
	// past its webhook) or the policy is not the one the operator reads (reason NotRead). Stalled
	// says the opposite, with the same reason, as kstatus reads them
	// (docs/operations.md#conditions). At most 32.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdmissionPolicy is the cluster admin's control over admission: per rule, whether a violation
// is refused, warned about or only counted, overridden per namespace; and the registry
// allow-list. The operator reads the one named cluster, and applies a change at once, without a
// restart.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ap,categories=seedlabs
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AdmissionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec AdmissionPolicySpec `json:"spec,omitempty"`

	// +optional
	// +kubebuilder:default={}
	Status AdmissionPolicyStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the status.
func (p *AdmissionPolicy) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the conditions of the status.
func (p *AdmissionPolicy) SetConditions(conditions []metav1.Condition) {
	p.Status.Conditions = conditions
}

// SetObservedGeneration records the generation of the spec the status describes.
func (p *AdmissionPolicy) SetObservedGeneration(generation int64) {
	p.Status.ObservedGeneration = generation
}

// +kubebuilder:object:root=true

// AdmissionPolicyList is a list of AdmissionPolicy.
type AdmissionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdmissionPolicy `json:"items"`
}
