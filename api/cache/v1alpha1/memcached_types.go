package v1alpha1

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

// Condition types a Memcached reports in status.conditions.
const (
	// ConditionAvailable is True when every requested memcached instance is available.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the pool is being brought to spec.size.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the spec cannot be rolled out, the rollout failed, or the
	// Memcached is being deleted.
	ConditionDegraded = "Degraded"
)

// Reasons set on Memcached conditions.
const (
	// ReasonReconciling means the Deployment and Service are being brought to the spec.
	ReasonReconciling = "Reconciling"
	// ReasonRolledOut means exactly spec.size instances run the current spec and are available.
	ReasonRolledOut = "RolledOut"
	// ReasonInstancesUnavailable means fewer instances are available than requested.
	ReasonInstancesUnavailable = "InstancesUnavailable"
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
	// ReasonAsExpected means nothing is wrong.
	ReasonAsExpected = "AsExpected"
)

// MemcachedSpec is the desired state of a memcached pool.
//
// Ranges are enforced by the validating webhook, not by this schema, so that one bad object gets
// every violation in a single reply.
type MemcachedSpec struct {
	// Size is the number of memcached instances, 1-3. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	Size *int32 `json:"size,omitempty"`

	// ContainerPort is the port memcached listens on and the Service exposes, 1-65535. Defaults to 11211.
	// +optional
	// +kubebuilder:default=11211
	ContainerPort *int32 `json:"containerPort,omitempty"`
}

// MemcachedStatus is the observed state of a memcached pool.
type MemcachedStatus struct {
	// Replicas is the number of memcached pods, as the scale subresource reports it.
	// +optional
	Replicas int32 `json:"replicas"`

	// Selector is the label selector of the memcached pods, for the scale subresource and an HPA.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Available, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Nodes are the names of the memcached pods, sorted.
	// +optional
	// +listType=atomic
	Nodes []string `json:"nodes,omitempty"`
}

// Memcached is a pool of memcached instances behind a Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=mc,categories=seedlabs
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   MemcachedSpec   `json:"spec,omitempty"`
	Status MemcachedStatus `json:"status,omitzero"`
}

// MemcachedList is a list of Memcached objects.
//
// +kubebuilder:object:root=true
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}
