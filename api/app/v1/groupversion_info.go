// Package v1 contains the app.seedlabs.dev API, version v1.
// +kubebuilder:object:generate=true
// +groupName=app.seedlabs.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "app.seedlabs.dev", Version: "v1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DeployObject{}, &DeployObjectList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
