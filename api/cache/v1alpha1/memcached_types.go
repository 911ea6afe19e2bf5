package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemcachedSpec is the desired state of a memcached pool.
//
// Ranges are enforced by the validating webhook, not by this schema, so that one bad object gets
// every violation in a single reply.
type MemcachedSpec struct {
	// Size is the number of memcached instances, 1-3.
	// +optional
	Size *int32 `json:"size,omitempty"`

	// ContainerPort is the port memcached listens on and the Service exposes, 1-65535.
	// +optional
	ContainerPort *int32 `json:"containerPort,omitempty"`
}

// MemcachedStatus is the observed state of a memcached pool.
type MemcachedStatus struct {
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
// +kubebuilder:resource:shortName=mc,categories=seedlabs
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
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
