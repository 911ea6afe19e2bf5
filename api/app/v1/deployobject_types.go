package v1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultReplicas is the number of pods when spec.replicas is unset. The CRD's schema applies it
// before admission (a +kubebuilder:default marker, which a test holds equal to it).
const DefaultReplicas int32 = 1

// ContainerName is the name of the one container of a DeployObject's pods, which runs spec.image:
// the name a resourceFieldRef in spec.env may give as its containerName.
const ContainerName = "app"

// DeployObjectSpec is the desired state of a generic app: one Deployment behind one Service.
//
// Image rules and ranges are enforced by the validating webhook, not by this schema, so that one
// bad object gets every violation in a single reply.
type DeployObjectSpec struct {
	// Replicas is the number of pods, at most 100 unless the AdmissionPolicy's maxReplicas raises
	// the cap or the policy relaxes deployobject.replicas.max. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	Replicas *int32 `json:"replicas,omitempty"`

	// Image is the container image, with an explicit tag or digest.
	// +required
	Image string `json:"image"`

	// Resources are the container's compute resource requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitzero"`

	// Env are the container's environment variables: at most 100, each value at most 32 KiB, and
	// names and values at most 256 KiB in all.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Ports are the Service's ports; each targetPort is also a container port.
	// +optional
	// +listType=atomic
	Ports []corev1.ServicePort `json:"ports,omitempty"`
}

// DeployObjectStatus is the observed state of the app: the Deployment's status and our own conditions.
type DeployObjectStatus struct {
	// ObservedGeneration is the generation of the spec this status describes; 0 until the
	// operator first reports, so that no tool takes an object it has not seen for done.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of pods the Deployment targets.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of pods running the current pod template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of pods ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UnavailableReplicas is the number of pods still missing for the Deployment to be fully available.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// DeploymentConditions are the Deployment's own conditions, mirrored as a whole.
	// +optional
	// +listType=atomic
	DeploymentConditions []appsv1.DeploymentCondition `json:"deploymentConditions,omitempty"`

	// Conditions are Ready, Reconciling, Stalled and Compliant, as kstatus reads them: Ready is True
	// once the spec is fully rolled out, Reconciling while it is being rolled out, Stalled when it
	// cannot progress without a change (docs/operations.md#conditions).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeployObject is a generic app: an image run as a Deployment and exposed by a Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dobj,categories=seedlabs
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Compliant",type=string,JSONPath=`.status.conditions[?(@.type=="Compliant")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeployObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DeployObjectSpec `json:"spec"`
	// +kubebuilder:default={}
	Status DeployObjectStatus `json:"status,omitzero"`
}

// GetConditions returns the conditions of the status.
func (d *DeployObject) GetConditions() []metav1.Condition { return d.Status.Conditions }

// SetConditions replaces the conditions of the status.
func (d *DeployObject) SetConditions(conditions []metav1.Condition) { d.Status.Conditions = conditions }

// SetObservedGeneration records the generation of the spec the status describes.
func (d *DeployObject) SetObservedGeneration(generation int64) {
	d.Status.ObservedGeneration = generation
}

// DeployObjectList is a list of DeployObject objects.
//
// +kubebuilder:object:root=true
type DeployObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeployObject `json:"items"`
}
