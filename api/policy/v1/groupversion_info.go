// Package v1 contains the policy.seedlabs.dev API, version v1: how a cluster admin
// controls what admission does about each rule.
//
// AdmissionPolicy v1 has v1alpha1's shape, so the CRD converts between them with strategy None (the API
// server rewrites apiVersion; a test holds the two schemas identical). Served and stored;
// v1alpha1 is still served, deprecated (docs/upgrade.md).
// +kubebuilder:object:generate=true
// +groupName=policy.seedlabs.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "policy.seedlabs.dev", Version: "v1"}

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AdmissionPolicy{}, &AdmissionPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
