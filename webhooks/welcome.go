package webhooks

import (
	"fmt"
	"net/mail"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// The webhooks of a Welcome: DefaultWelcome and ValidateWelcome, at each version served. Each
// version has entries of its own, matched Exact, so that the API server calls each with the
// object as written, and a Welcome whose matchConditions skip the webhooks costs no conversion
// call (config/webhook/match-conditions/match_conditions.yaml).
// +kubebuilder:webhook:path=/mutate-auth-seedlabs-dev-v1alpha1-welcome,mutating=true,failurePolicy=fail,sideEffects=None,groups=auth.seedlabs.dev,resources=welcomes,verbs=create;update,versions=v1alpha1,name=mwelcome.auth.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Exact,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-auth-seedlabs-dev-v1alpha1-welcome,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=auth.seedlabs.dev,resources=welcomes,verbs=create;update,versions=v1alpha1,name=vwelcome.auth.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Exact
// +kubebuilder:webhook:path=/mutate-auth-seedlabs-dev-v1-welcome,mutating=true,failurePolicy=fail,sideEffects=None,groups=auth.seedlabs.dev,resources=welcomes,verbs=create;update,versions=v1,name=mwelcome-v1.auth.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Exact,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-auth-seedlabs-dev-v1-welcome,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=auth.seedlabs.dev,resources=welcomes,verbs=create;update,versions=v1,name=vwelcome-v1.auth.seedlabs.dev,admissionReviewVersions=v1,timeoutSeconds=1,matchPolicy=Exact

// WelcomeV1 is the admission of a Welcome at v1, the version stored: DefaultWelcome and
// ValidateWelcome, with the password v1alpha1 reads from the conversion-data annotation, named
// there, and the annotation held to what a conversion writes.
var WelcomeV1 = Kind[authv1.Welcome, *authv1.Welcome]{
	GVK:     authv1.GroupVersion.WithKind("Welcome"),
	Default: DefaultWelcome,
	Validate: func(old, w *authv1.Welcome, policy *Policy) (field.ErrorList, []Warning) {
		errs, warnings := ValidateWelcome(old, w, policy)
		if len(welcomeBounds(w)) > 0 {
			return errs, warnings
		}
		return append(errs, validateConversionData(old, w)...), warnings
	},
	bounds: welcomeBounds,
}

// Welcome is the admission of a Welcome at v1alpha1, deprecated: WelcomeV1's rules, on the object
// converted to v1 as the conversion webhook converts it, with the password in spec.password, where
// this version keeps it. The conversion-data annotation is the conversion's, never this version's.
var Welcome = Kind[authv1alpha1.Welcome, *authv1alpha1.Welcome]{
	GVK: authv1alpha1.GroupVersion.WithKind("Welcome"),
	Default: func(w *authv1alpha1.Welcome) {
		hub := welcomeV1(w)
		DefaultWelcome(hub)
		w.Spec = welcomeV1alpha1(hub).Spec
	},
	Validate: func(old, w *authv1alpha1.Welcome, policy *Policy) (field.ErrorList, []Warning) {
		return validateWelcomeAt(welcomeV1(old), welcomeV1(w), policy, v1alpha1Password)
	},
	bounds: func(w *authv1alpha1.Welcome) field.ErrorList { return welcomeBounds(welcomeV1(w)) },
}

// The conversion-data annotation of a v1 Welcome, the password v1alpha1 reads from it, and
// v1alpha1's own.
var (
	conversionData         = field.NewPath("metadata", "annotations").Key(authv1.ConversionDataAnnotation)
	conversionDataPassword = conversionData.Child("spec", "password")
	v1alpha1Password       = field.NewPath("spec", "password")
)

// validateConversionData refuses a v1 Welcome's conversion-data annotation unless a conversion
// could have written it: the conversion ignores one it cannot read (and so must, being total), and
// the password in it would be lost without a word. One the old object had already is kept.
func validateConversionData(old, w *authv1.Welcome) field.ErrorList {
	raw, ok := w.Annotations[authv1.ConversionDataAnnotation]
	if !ok || authv1alpha1.ConversionDataValid(raw) {
		return nil
	}
	if old != nil {
		if was, had := old.Annotations[authv1.ConversionDataAnnotation]; had && was == raw {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(conversionData, field.OmitValueType{},
		`must be what a conversion from v1alpha1 writes, such as {"spec":{"password":"…"}}, or absent: v1alpha1 reads spec.password from it`).
		WithOrigin(string(WelcomeConversionData))}
}

// welcomeV1alpha1 is w converted to v1alpha1.
func welcomeV1alpha1(w *authv1.Welcome) *authv1alpha1.Welcome {
	out := &authv1alpha1.Welcome{}
	_ = out.ConvertFrom(w) // total: it returns no error
	return out
}

// welcomeV1 is w converted to v1; nil for nil.
func welcomeV1(w *authv1alpha1.Welcome) *authv1.Welcome {
	if w == nil {
		return nil
	}
	out := &authv1.Welcome{}
	_ = w.ConvertTo(out) // fails only to marshal a struct of one string, which never fails
	return out
}

// maxUserID is the highest user ID a Welcome accepts.
const maxUserID = 65535

// The size limits of a Welcome's free strings (limits.go), in bytes, and of its groups.
const (
	maxWelcomeNameBytes = 256
	maxGroups           = 32
	maxGroupBytes       = 256
	maxPasswordBytes    = 256
	// maxEmailBytes is the longest address there is: RFC 5321's path of 256 octets, less its
	// angle brackets. A longer one is no address, so it breaks welcome.email.format.
	maxEmailBytes = 254
)

var welcomeServiceTypes = []corev1.ServiceType{corev1.ServiceTypeNodePort, corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer}

// DefaultWelcome fills the fields of a Welcome the user left unset: replicas, port and serviceType.
// Values the user set, including replicas 0, are kept.
func DefaultWelcome(w *authv1.Welcome) {
	if w.Spec.Replicas == nil {
		w.Spec.Replicas = ptr.To(authv1.DefaultReplicas)
	}
	if w.Spec.Port == nil {
		w.Spec.Port = ptr.To(authv1.DefaultPort)
	}
	if w.Spec.ServiceType == "" {
		w.Spec.ServiceType = authv1.DefaultServiceType
	}
}

// ValidateWelcome returns every rule the Welcome breaks, and warnings for what is allowed but
// unwise; for a Welcome past its schema's bounds, only those (bounds.go). old is nil on create; on
// update, violations old already had are not held against the update. Unset fields that
// defaulting fills are not violations. The password is the one v1alpha1 reads from the
// conversion-data annotation (authv1alpha1.PasswordOf), named there.
//
// spec.image, when set, is held to the image rules of a DeployObject under the same policy's
// image policy, so that a Welcome is no way around them; spec.replicas to the policy's cap.
func ValidateWelcome(old, w *authv1.Welcome, policy *Policy) (field.ErrorList, []Warning) {
	return validateWelcomeAt(old, w, policy, conversionDataPassword)
}

// password is a Welcome's spec.password at v1alpha1, which v1 has no field for, and the field
// that holds it in the version kube-apiserver sent. Its rules are the Welcome's, until v1alpha1 is
// no longer served.
type password struct {
	value string
	path  *field.Path
}

// validateWelcomeAt is ValidateWelcome, naming the password at passwordAt: where the version
// kube-apiserver sent keeps it. A v1alpha1 Welcome converted to v1 has its password where
// authv1alpha1.PasswordOf reads it.
func validateWelcomeAt(old, w *authv1.Welcome, policy *Policy, passwordAt *field.Path) (field.ErrorList, []Warning) {
	if errs := welcomeBounds(w); len(errs) > 0 {
		return errs, nil
	}
	pw := password{value: authv1alpha1.PasswordOf(w), path: passwordAt}
	errs, warnings := validateWelcome(w, pw, policy)
	if old != nil && len(errs) > 0 && len(welcomeBounds(old)) == 0 {
		oldPassword := password{value: authv1alpha1.PasswordOf(old), path: passwordAt}
		oldErrs, _ := validateWelcome(old, oldPassword, policy)
		// The password is a field of neither object, so the ratchet compares it here.
		unchanged := unchangedAt(old, w)
		errs = ratchetWhere(errs, oldErrs, func(path string) bool {
			if path == pw.path.String() {
				return oldPassword.value == pw.value
			}
			return unchanged(path)
		})
	}
	return errs, append(warnings, welcomeWarnings(&w.Spec, pw, field.NewPath("spec"))...)
}

// welcomeImageRules are the image rules as a Welcome's.
var welcomeImageRules = imageRules{
	reference: WelcomeImageReference, pinned: WelcomeImagePinned, registry: WelcomeImageRegistry, latestWithDigest: WelcomeImageLatestDigest,
}

func validateWelcome(w *authv1.Welcome, pw password, policy *Policy) (field.ErrorList, []Warning) {
	errs := tagged(validateObjectName(w.Name), WelcomeObjectName)
	errs = append(errs, validateWelcomeSpec(&w.Spec, pw, policy.MaxReplicas(), field.NewPath("spec"))...)
	if w.Spec.Image == "" {
		return errs, nil
	}
	imageErrs, warnings := validateImage(w.Spec.Image, policy.Images(), field.NewPath("spec", "image"), welcomeImageRules)
	return append(errs, imageErrs...), warnings
}

func validateWelcomeSpec(spec *authv1.WelcomeSpec, pw password, maxReplicas int32, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(spec.Name) == "" {
		errs = append(errs, field.Required(path.Child("name"), "the name to greet must not be empty").WithOrigin(string(WelcomeName)))
	}
	if len(spec.Name) > maxWelcomeNameBytes {
		errs = append(errs, tooLong(path.Child("name"), len(spec.Name), maxWelcomeNameBytes, "shorten the name to greet").
			WithOrigin(string(WelcomeNameLength)))
	}
	if spec.UserID != nil && (*spec.UserID < 1 || *spec.UserID > maxUserID) {
		errs = append(errs, field.Invalid(path.Child("userID"), *spec.UserID, "must be between 1 and 65535 when set").WithOrigin(string(WelcomeUserID)))
	}
	errs = append(errs, tagged(validateGroups(spec.Groups, path.Child("groups")), WelcomeGroups)...)
	errs = append(errs, tagged(validateGroupsSize(spec.Groups, path.Child("groups")), WelcomeGroupsSize)...)
	switch {
	case len(spec.Email) > maxEmailBytes:
		errs = append(errs, tooLong(path.Child("email"), len(spec.Email), maxEmailBytes, "no email address is longer (RFC 5321)").
			WithOrigin(string(WelcomeEmail)))
	case spec.Email != "" && !isEmailAddress(spec.Email):
		errs = append(errs, field.Invalid(path.Child("email"), spec.Email, "must be a bare email address such as user@example.com").WithOrigin(string(WelcomeEmail)))
	}
	if len(pw.value) > maxPasswordBytes {
		errs = append(errs, tooLong(pw.path, len(pw.value), maxPasswordBytes, "shorten it, or better, keep the secret in a Secret").
			WithOrigin(string(WelcomePasswordLength)))
	}
	if spec.Replicas != nil && *spec.Replicas < 0 {
		errs = append(errs, field.Invalid(path.Child("replicas"), *spec.Replicas, "must be 0 or more").WithOrigin(string(WelcomeReplicas)))
	}
	errs = append(errs, validateReplicasCap(spec.Replicas, maxReplicas, path.Child("replicas"), WelcomeReplicasMax)...)
	if spec.Port != nil {
		errs = append(errs, tagged(validatePort(*spec.Port, path.Child("port")), WelcomePort)...)
	}
	if spec.ServiceType != "" && !isOneOf(spec.ServiceType, welcomeServiceTypes) {
		errs = append(errs, field.NotSupported(path.Child("serviceType"), spec.ServiceType, welcomeServiceTypes).WithOrigin(string(WelcomeServiceType)))
	}
	return errs
}

func welcomeWarnings(spec *authv1.WelcomeSpec, pw password, path *field.Path) []Warning {
	var warnings []Warning
	if pw.value != "" {
		warnings = append(warnings, warning(WelcomePassword,
			"%s is stored unencrypted in etcd and shown to anyone who can read this Welcome; keep secrets in a Secret instead", pw.path))
	}
	if spec.Replicas != nil && *spec.Replicas == 0 {
		warnings = append(warnings, warning(WelcomeReplicasZero, "%s is 0: no web server pod will run until it is raised", path.Child("replicas")))
	}
	return warnings
}

func validateGroups(groups []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(groups))
	for i, g := range groups {
		switch {
		case strings.TrimSpace(g) == "":
			errs = append(errs, field.Required(path.Index(i), "group names must not be empty"))
		case seen[g]:
			errs = append(errs, field.Duplicate(path.Index(i), g))
		}
		seen[g] = true
	}
	return errs
}

// validateGroupsSize holds the groups to at most maxGroups names of at most maxGroupBytes each.
func validateGroupsSize(groups []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(groups) > maxGroups {
		tooMany := field.TooMany(path, len(groups), maxGroups)
		tooMany.Detail = fmt.Sprintf("must have at most %d groups; keep only the ones the app needs", maxGroups)
		errs = append(errs, tooMany)
	}
	for i, g := range groups {
		if len(g) > maxGroupBytes {
			errs = append(errs, tooLong(path.Index(i), len(g), maxGroupBytes, "shorten the group name"))
		}
	}
	return errs
}

// isEmailAddress reports whether s is a bare RFC 5322 address with a domain, without a display
// name or angle brackets.
func isEmailAddress(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Name == "" && addr.Address == s && strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".")
}

func isOneOf[T comparable](v T, allowed []T) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}
