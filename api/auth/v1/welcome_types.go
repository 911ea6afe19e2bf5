package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a Welcome. The CRD's schema applies them before admission (the +kubebuilder:default
// markers below, which a test holds equal to these); the mutating webhook fills what the schema
// cannot: an empty serviceType, or a spec sent as null.
const (
	// DefaultReplicas is the number of web server pods when spec.replicas is unset.
	DefaultReplicas int32 = 1
	// DefaultPort is the port the web server listens on when spec.port is unset.
	DefaultPort int32 = 8088
	// DefaultServiceType is how the web server is exposed when spec.serviceType is unset.
	DefaultServiceType = corev1.ServiceTypeNodePort
)

// Structural bounds of a Welcome, which the CRD's schema holds (the markers below, which a test
// holds equal to these) so that kube-apiserver refuses an absurd size before it calls any
// validating webhook. They are far above the webhook's rules, which a cluster admin may relax.
const (
	// MaxGroupsItems is the most groups the schema allows; the webhook's rule allows 32.
	MaxGroupsItems = 1024
	// MaxStringLength is the most characters the schema allows in spec.name, each group,
	// spec.email and spec.image (and v1alpha1's spec.password); the webhook's rules allow 256
	// bytes in the name and a group, and 254 in the email.
	MaxStringLength = 4096
	// MaxServiceURLLength is the most characters of status.serviceURL; the operator writes at
	// most 371 (a name of 253 characters, a namespace of 63).
	MaxServiceURLLength = 1024
)

// WelcomeSpec is the desired state of a Welcome web app.
//
// Ranges and formats are enforced by the validating webhook, not by this schema, so that one
// bad object gets every violation in a single reply. The schema holds only structural bounds far
// above them, which kube-apiserver checks before calling any webhook.
type WelcomeSpec struct {
	// Name is the name the web app greets: it serves "Hello <name>". At most 256 bytes; the
	// schema refuses more than 4096 characters.
	// +required
	// +kubebuilder:validation:MaxLength=4096
	Name string `json:"name"`

	// UserID is the numeric ID of the user, 1-65535.
	// +optional
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	UserID *int32 `json:"userID,omitempty"`

	// Groups are the names of the groups the user belongs to, each unique and non-empty: at most
	// 32, each at most 256 bytes. The schema refuses more than 1024 groups, or a group of more
	// than 4096 characters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=4096
	Groups []string `json:"groups,omitempty"`

	// Email is the user's email address, at most 254 bytes; the schema refuses more than 4096
	// characters.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Email string `json:"email,omitempty"`

	// Replicas is the number of web server pods, at most 100 unless the AdmissionPolicy's
	// maxReplicas raises the cap or the policy relaxes welcome.replicas.max. Defaults to 1; 0 is
	// allowed and stops the app.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Replicas *int32 `json:"replicas,omitempty"`

	// Port is the port the web server listens on and the Service exposes, 1-65535. Defaults to 8088.
	// +optional
	// +kubebuilder:default=8088
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Port *int32 `json:"port,omitempty"`

	// Image overrides the web server image the operator is configured with. The schema refuses
	// more than 4096 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Image string `json:"image,omitempty"`

	// ServiceType is how the web server is exposed: NodePort (the default), ClusterIP or
	// LoadBalancer. The schema refuses more than 64 characters; the longest type has 12.
	// +optional
	// +kubebuilder:default=NodePort
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
}

// WelcomeStatus is the observed state of a Welcome web app.
type WelcomeStatus struct {
	// ReadyReplicas is the number of web server pods that are ready.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	ReadyReplicas int32 `json:"readyReplicas"`

	// ServiceURL is where the web app answers inside the cluster, followed by the node port when
	// the Service is a NodePort. At most 1024 characters: the operator writes at most 371 (a
	// name of 253, a namespace of 63).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ServiceURL string `json:"serviceURL,omitempty"`

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
}

// Welcome is a small web app that greets a user by name.
//
// Unlike v1alpha1, it has no spec.password, which the web app never read: a v1alpha1 Welcome's
// password is kept, at v1, in the annotation auth.seedlabs.dev/conversion-data.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wlc,categories=seedlabs
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Compliant",type=string,JSONPath=`.status.conditions[?(@.type=="Compliant")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.serviceURL`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Welcome struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WelcomeSpec `json:"spec"`
	// +kubebuilder:default={}
	Status WelcomeStatus `json:"status,omitzero"`
}

// GetConditions returns the conditions of the status.
func (w *Welcome) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces the conditions of the status.
func (w *Welcome) SetConditions(conditions []metav1.Condition) { w.Status.Conditions = conditions }

// SetObservedGeneration records the generation of the spec the status describes.
func (w *Welcome) SetObservedGeneration(generation int64) { w.Status.ObservedGeneration = generation }

// WelcomeList is a list of Welcome objects.
//
// +kubebuilder:object:root=true
type WelcomeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Welcome `json:"items"`
}
