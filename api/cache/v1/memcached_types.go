package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a Memcached, which the CRD's schema applies before admission (the +kubebuilder:default
// markers below, which a test holds equal to these; the mutating webhook fills them into a spec
// sent as null), and the range the validating webhook allows.
const (
	// DefaultSize is the number of memcached instances when spec.size is unset.
	DefaultSize int32 = 1
	// MinSize is the fewest memcached instances a Memcached may ask for.
	MinSize int32 = 1
	// MaxSize is the most memcached instances a Memcached may ask for.
	MaxSize int32 = 3
	// DefaultContainerPort is memcached's port when spec.containerPort is unset.
	DefaultContainerPort int32 = 11211
	// Finalizer was put on every Memcached by earlier versions, to record a Deleting event. It
	// guarded nothing and kept namespaces and the CRD from being deleted while the operator was
	// gone, so the controller now takes it off wherever it finds it.
	Finalizer = "cache.seedlabs.dev/finalizer"
)

// Structural bounds of a Memcached's status, which the CRD's schema holds (the markers below,
// which a test holds equal to these) and the controller keeps what it writes within.
const (
	// MaxNodesItems is the most pod names status.nodes lists: a pool of more pods, which a relaxed
	// memcached.size.range allows, lists the first of them.
	MaxNodesItems = 1024
	// MaxSelectorLength is the most characters status.selector holds; the operator writes at most
	// 313 (a name of 253).
	MaxSelectorLength = 1024
)

// MemcachedSpec is the desired state of a memcached pool.
//
// Ranges are enforced by the validating webhook, not by this schema, so that one bad object gets
// every violation in a single reply. The schema holds only the int32 range, which kube-apiserver
// checks before calling any webhook.
type MemcachedSpec struct {
	// Size is the number of memcached instances, 1-3. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Size *int32 `json:"size,omitempty"`

	// ContainerPort is the port memcached listens on and the Service exposes, 1-65535. Defaults to 11211.
	// +optional
	// +kubebuilder:default=11211
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	ContainerPort *int32 `json:"containerPort,omitempty"`
}

// MemcachedStatus is the observed state of a memcached pool.
type MemcachedStatus struct {
	// Replicas is the number of memcached pods, as the scale subresource reports it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Replicas int32 `json:"replicas"`

	// Selector is the label selector of the memcached pods, for the scale subresource and an HPA.
	// At most 1024 characters: the operator writes at most 313.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the generation of the spec this status describes; 0 until the
	// operator first reports, so that no tool takes an object it has not seen for done.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Reconciling, Stalled and Compliant, as kstatus reads them: Ready is True
	// once the spec is fully rolled out, Reconciling while it is being rolled out, Stalled when it
	// cannot progress without a change (docs/operations.md#conditions). At most 32.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Nodes are the names of the memcached pods, sorted: the first 1024 of a larger pool (a pod's
	// name has at most 253 characters, a DNS-1123 subdomain).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=253
	Nodes []string `json:"nodes,omitempty"`
}

// Memcached is a pool of memcached instances behind a Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=mc,categories=seedlabs
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Compliant",type=string,JSONPath=`.status.conditions[?(@.type=="Compliant")].status`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec MemcachedSpec `json:"spec,omitempty"`
	// +kubebuilder:default={}
	Status MemcachedStatus `json:"status,omitzero"`
}

// GetConditions returns the conditions of the status.
func (m *Memcached) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces the conditions of the status.
func (m *Memcached) SetConditions(conditions []metav1.Condition) { m.Status.Conditions = conditions }

// SetObservedGeneration records the generation of the spec the status describes.
func (m *Memcached) SetObservedGeneration(generation int64) { m.Status.ObservedGeneration = generation }

// MemcachedList is a list of Memcached objects.
//
// +kubebuilder:object:root=true
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}
