package v1alpha1

import (
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
)

// The conversions are total, deterministic and make no API call: kube-apiserver fails a whole
// ConversionReview, so every object of a LIST, on the first error, and would see a different
// result for the same object as a change. So nothing the schema admits is an error: a malformed
// conversion-data annotation is ignored, and counted.

// conversionData is what ConversionDataAnnotation holds.
type conversionData struct {
	Spec conversionDataSpec `json:"spec"`
}

type conversionDataSpec struct {
	Password string `json:"password,omitempty"`
}

var malformedConversionData atomic.Uint64

// MalformedConversionData is how many Welcomes this process converted to v1alpha1 whose
// conversion-data annotation was not what a conversion writes, and so was ignored.
func MalformedConversionData() uint64 { return malformedConversionData.Load() }

// ConvertTo converts this Welcome to v1: the password, which v1 has no field for, goes into the
// conversion-data annotation; with no password, the annotation goes, so that this version's
// field always wins over an annotation the object came with.
func (w *Welcome) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*authv1.Welcome)
	s := w.DeepCopy()
	dst.ObjectMeta = s.ObjectMeta
	dst.Spec = authv1.WelcomeSpec{
		Name:        s.Spec.Name,
		UserID:      s.Spec.UserID,
		Groups:      s.Spec.Groups,
		Email:       s.Spec.Email,
		Replicas:    s.Spec.Replicas,
		Port:        s.Spec.Port,
		Image:       s.Spec.Image,
		ServiceType: s.Spec.ServiceType,
	}
	dst.Status = authv1.WelcomeStatus(s.Status)
	delete(dst.Annotations, authv1.ConversionDataAnnotation)
	if s.Spec.Password != "" {
		data, err := json.Marshal(conversionData{Spec: conversionDataSpec{Password: s.Spec.Password}})
		if err != nil {
			return err // a struct of one string always marshals
		}
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[authv1.ConversionDataAnnotation] = string(data)
	}
	if len(dst.Annotations) == 0 {
		dst.Annotations = nil
	}
	return nil
}

// ConvertFrom converts a v1 Welcome to this version: the password comes from the conversion-data
// annotation, which this version does not show.
func (w *Welcome) ConvertFrom(hub conversion.Hub) error {
	dst, s := w, hub.(*authv1.Welcome).DeepCopy()
	dst.ObjectMeta = s.ObjectMeta
	dst.Spec = WelcomeSpec{
		Name:        s.Spec.Name,
		UserID:      s.Spec.UserID,
		Groups:      s.Spec.Groups,
		Email:       s.Spec.Email,
		Replicas:    s.Spec.Replicas,
		Port:        s.Spec.Port,
		Image:       s.Spec.Image,
		ServiceType: s.Spec.ServiceType,
	}
	dst.Status = WelcomeStatus(s.Status)
	if raw, ok := dst.Annotations[authv1.ConversionDataAnnotation]; ok {
		delete(dst.Annotations, authv1.ConversionDataAnnotation)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
		if data, ok := parseConversionData(raw); ok {
			dst.Spec.Password = data.Spec.Password
		} else {
			malformedConversionData.Add(1)
		}
	}
	return nil
}

// ConversionDataValid reports whether raw, the value of a v1 Welcome's conversion-data annotation,
// is what a conversion writes, and so is read at this version.
func ConversionDataValid(raw string) bool {
	_, ok := parseConversionData(raw)
	return ok
}

// PasswordOf is the spec.password this version reads from a v1 Welcome, as ConvertFrom reads it:
// "" for nil, for no conversion-data annotation and for one ConvertFrom ignores. It counts
// nothing: it converts nothing.
func PasswordOf(hub *authv1.Welcome) string {
	if hub == nil {
		return ""
	}
	data, _ := parseConversionData(hub.Annotations[authv1.ConversionDataAnnotation])
	return data.Spec.Password
}

// parseConversionData reads the conversion-data annotation: one JSON object of conversionData's
// fields and nothing else.
func parseConversionData(raw string) (conversionData, bool) {
	var data conversionData
	decoder := json.NewDecoder(strings.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&data); err != nil {
		return conversionData{}, false
	}
	if _, err := decoder.Token(); err != io.EOF {
		return conversionData{}, false
	}
	return data, true
}
