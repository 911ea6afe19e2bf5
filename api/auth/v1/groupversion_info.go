// Package v1 contains the auth.seedlabs.dev API, version v1: the hub that Welcome's other
// versions convert to and from.
//
// The CRD lists it, not served yet: v1alpha1 stays the version served and stored until a release
// has served the conversion webhook, with its CA injected, to every replica (docs/upgrade.md).
// +kubebuilder:object:generate=true
// +groupName=auth.seedlabs.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "auth.seedlabs.dev", Version: "v1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Welcome{}, &WelcomeList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
