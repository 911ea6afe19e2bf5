// Package v1 contains the auth.seedlabs.dev API, version v1: the hub that Welcome's other
// versions convert to and from.
//
// Served and stored; v1alpha1 is still served, deprecated, and converted to and from v1 by the
// conversion webhook (docs/upgrade.md).
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
