// Package scheme builds the one scheme the operator, its tools and its tests use.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
)

// New returns a scheme with the built-in types, CustomResourceDefinitions (the manager reads the
// conversion webhooks of its own), and every version of the operator's four kinds.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(authv1.AddToScheme(s))
	utilruntime.Must(authv1alpha1.AddToScheme(s))
	utilruntime.Must(cachev1.AddToScheme(s))
	utilruntime.Must(cachev1alpha1.AddToScheme(s))
	utilruntime.Must(appv1.AddToScheme(s))
	utilruntime.Must(policyv1.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.AddToScheme(s))
	return s
}

// StrictDecoder decodes the scheme's kinds as the API server takes them from `kubectl apply`, whose
// field validation is Strict by default: an unknown or duplicate field is an error, not dropped.
func StrictDecoder() runtime.Decoder {
	return serializer.NewCodecFactory(New(), serializer.EnableStrict).UniversalDeserializer()
}
