package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

const (
	passwordWarning     = "spec.password is stored unencrypted in etcd and shown to anyone who can read this Welcome; keep secrets in a Secret instead"
	zeroReplicasWarning = "spec.replicas is 0: no web server pod will run until it is raised"

	nameDetail        = "the name to greet must not be empty"
	userIDDetail      = "must be between 1 and 65535 when set"
	groupDetail       = "group names must not be empty"
	emailDetail       = "must be a bare email address such as user@example.com"
	replicasDetail    = "must be 0 or more"
	portDetail        = "must be between 1 and 65535"
	serviceTypeDetail = `supported values: "NodePort", "ClusterIP", "LoadBalancer"`
)

// fieldErrorView is the part of a field.Error a client sees: what kind of violation, where, which
// value and why, and whether it names its rule.
type fieldErrorView struct {
	Type     field.ErrorType
	Field    string
	BadValue any
	Detail   string
	Rule     string
}

// anyRule is the origin of an expected error: it matches an error of any registered rule.
const anyRule = "*"

// compareFieldErrors compares field errors on Type, Field, BadValue (including its dynamic type, so
// int32(0) and int(0) differ) and Detail, and requires of an error that it come from a registered
// rule, named in its Origin and not in its text, unless it is an expected error (anyRule).
var compareFieldErrors = gocmp.Transformer("fieldErrorView", func(e *field.Error) fieldErrorView {
	rule := "ok"
	switch {
	case e.Origin == anyRule:
	case !isRule(RuleID(e.Origin)):
		rule = fmt.Sprintf("no registered rule: origin %q", e.Origin)
	case strings.Contains(e.Detail, "(rule "):
		rule = "the detail names a rule"
	}
	return fieldErrorView{Type: e.Type, Field: e.Field, BadValue: e.BadValue, Detail: e.Detail, Rule: rule}
})

// compareUnruledErrors is compareFieldErrors for the errors of the functions that make them, to
// which the callers in Validate<Kind> give their rules.
var compareUnruledErrors = gocmp.Transformer("unruledFieldErrorView", func(e *field.Error) fieldErrorView {
	return fieldErrorView{Type: e.Type, Field: e.Field, BadValue: e.BadValue, Detail: e.Detail}
})

// isRule reports whether id is a registered rule's.
func isRule(id RuleID) bool {
	_, ok := ruleByID(id)
	return ok
}

// withoutRuleIDs are the messages of warnings, after checking that each is of a registered rule
// and does not name it in its text.
func withoutRuleIDs(t testing.TB, warnings []Warning) admission.Warnings {
	t.Helper()
	if warnings == nil {
		return nil
	}
	out := make(admission.Warnings, 0, len(warnings))
	for _, w := range warnings {
		if !isRule(w.Rule) || strings.Contains(w.Message, "(rule ") {
			t.Errorf("the warning %q is of no registered rule, or names one in its text", w)
			continue
		}
		out = append(out, w.Message)
	}
	return out
}

// sentWithoutRuleIDs are warnings as a client reads them, without the rule each names at its end,
// after checking that it is a registered one.
func sentWithoutRuleIDs(t testing.TB, warnings admission.Warnings) admission.Warnings {
	t.Helper()
	out := make(admission.Warnings, 0, len(warnings))
	for _, w := range warnings {
		m := ruleInMessage.FindStringSubmatch(w)
		if m == nil || !strings.HasSuffix(w, m[0]) || !isRule(RuleID(m[1])) {
			t.Errorf("the warning %q does not end with a registered rule", w)
			continue
		}
		out = append(out, strings.TrimSuffix(w, m[0]))
	}
	return out
}

// ruleInMessage is a rule's ID at the end of a cause's message, or inside a status message.
var ruleInMessage = regexp.MustCompile(` \(rule ([a-z0-9.-]+)\)`)

// statusWithoutRuleIDs is status without the rule IDs of its message and causes, after checking
// that every cause names a registered rule.
func statusWithoutRuleIDs(t testing.TB, status metav1.Status) metav1.Status {
	t.Helper()
	status.Message = ruleInMessage.ReplaceAllString(status.Message, "")
	if status.Details == nil {
		return status
	}
	details := *status.Details
	details.Causes = slices.Clone(details.Causes)
	for i, c := range details.Causes {
		m := ruleInMessage.FindStringSubmatch(c.Message)
		if m == nil || !strings.HasSuffix(c.Message, m[0]) || !isRule(RuleID(m[1])) {
			t.Errorf("the cause %q does not end with a registered rule", c.Message)
			continue
		}
		details.Causes[i].Message = strings.TrimSuffix(c.Message, m[0])
	}
	status.Details = &details
	return status
}

func required(path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeRequired, Field: path, BadValue: "", Detail: detail, Origin: anyRule}
}

func invalid(path string, value any, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: value, Detail: detail, Origin: anyRule}
}

func duplicate(path string, value any) *field.Error {
	return &field.Error{Type: field.ErrorTypeDuplicate, Field: path, BadValue: value, Origin: anyRule}
}

func notSupported(path string, value any, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: path, BadValue: value, Detail: detail, Origin: anyRule}
}

// welcome returns a Welcome with only spec.name set, changed by the given functions.
func welcome(changes ...func(*authv1alpha1.WelcomeSpec)) *authv1alpha1.Welcome {
	w := &authv1alpha1.Welcome{
		TypeMeta:   metav1.TypeMeta{APIVersion: "auth.seedlabs.dev/v1alpha1", Kind: "Welcome"},
		ObjectMeta: metav1.ObjectMeta{Name: "greeting", Namespace: "default"},
		Spec:       authv1alpha1.WelcomeSpec{Name: "Ada"},
	}
	for _, change := range changes {
		change(&w.Spec)
	}
	return w
}

func TestDefaultWelcome(t *testing.T) {
	tests := []struct {
		name string
		spec authv1alpha1.WelcomeSpec
		want authv1alpha1.WelcomeSpec
	}{
		{
			name: "empty spec gets every default",
			spec: authv1alpha1.WelcomeSpec{},
			want: authv1alpha1.WelcomeSpec{
				Replicas:    ptr.To[int32](1),
				Port:        ptr.To[int32](8088),
				ServiceType: corev1.ServiceTypeNodePort,
			},
		},
		{
			name: "replicas 0 is kept",
			spec: authv1alpha1.WelcomeSpec{Replicas: ptr.To[int32](0)},
			want: authv1alpha1.WelcomeSpec{
				Replicas:    ptr.To[int32](0),
				Port:        ptr.To[int32](8088),
				ServiceType: corev1.ServiceTypeNodePort,
			},
		},
		{
			name: "replicas 5 is kept",
			spec: authv1alpha1.WelcomeSpec{Replicas: ptr.To[int32](5)},
			want: authv1alpha1.WelcomeSpec{
				Replicas:    ptr.To[int32](5),
				Port:        ptr.To[int32](8088),
				ServiceType: corev1.ServiceTypeNodePort,
			},
		},
		{
			name: "port 9000 is kept",
			spec: authv1alpha1.WelcomeSpec{Port: ptr.To[int32](9000)},
			want: authv1alpha1.WelcomeSpec{
				Replicas:    ptr.To[int32](1),
				Port:        ptr.To[int32](9000),
				ServiceType: corev1.ServiceTypeNodePort,
			},
		},
		{
			name: "serviceType ClusterIP is kept",
			spec: authv1alpha1.WelcomeSpec{ServiceType: corev1.ServiceTypeClusterIP},
			want: authv1alpha1.WelcomeSpec{
				Replicas:    ptr.To[int32](1),
				Port:        ptr.To[int32](8088),
				ServiceType: corev1.ServiceTypeClusterIP,
			},
		},
		{
			name: "invalid values are kept for validation to refuse",
			spec: authv1alpha1.WelcomeSpec{Replicas: ptr.To[int32](-1), Port: ptr.To[int32](0), ServiceType: "ExternalName"},
			want: authv1alpha1.WelcomeSpec{Replicas: ptr.To[int32](-1), Port: ptr.To[int32](0), ServiceType: "ExternalName"},
		},
		{
			name: "fields without defaults are untouched",
			spec: authv1alpha1.WelcomeSpec{
				Name:     "Ada",
				UserID:   ptr.To[int32](1000),
				Groups:   []string{"admins", "dev"},
				Email:    "ada@example.com",
				Password: "hunter2",
				Image:    "example.com/welcome:v2",
			},
			want: authv1alpha1.WelcomeSpec{
				Name:        "Ada",
				UserID:      ptr.To[int32](1000),
				Groups:      []string{"admins", "dev"},
				Email:       "ada@example.com",
				Password:    "hunter2",
				Image:       "example.com/welcome:v2",
				Replicas:    ptr.To[int32](1),
				Port:        ptr.To[int32](8088),
				ServiceType: corev1.ServiceTypeNodePort,
			},
		},
		{
			name: "fully specified spec is unchanged",
			spec: authv1alpha1.WelcomeSpec{
				Name:        "Ada",
				Replicas:    ptr.To[int32](3),
				Port:        ptr.To[int32](80),
				ServiceType: corev1.ServiceTypeLoadBalancer,
			},
			want: authv1alpha1.WelcomeSpec{
				Name:        "Ada",
				Replicas:    ptr.To[int32](3),
				Port:        ptr.To[int32](80),
				ServiceType: corev1.ServiceTypeLoadBalancer,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &authv1alpha1.Welcome{
				ObjectMeta: metav1.ObjectMeta{Name: "greeting", Namespace: "default", Labels: map[string]string{"app": "welcome"}},
				Spec:       tc.spec,
				Status:     authv1alpha1.WelcomeStatus{ReadyReplicas: 2, ServiceURL: "http://greeting.default.svc:8088"},
			}
			wantMeta, wantStatus := *w.ObjectMeta.DeepCopy(), *w.Status.DeepCopy()

			Welcome.Default(w)

			if diff := gocmp.Diff(tc.want, w.Spec); diff != "" {
				t.Errorf("spec after defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantMeta, w.ObjectMeta); diff != "" {
				t.Errorf("metadata changed by defaulting (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(wantStatus, w.Status); diff != "" {
				t.Errorf("status changed by defaulting (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultWelcomeDoesNotShareDefaults(t *testing.T) {
	first, second := welcome(), welcome()
	Welcome.Default(first)
	Welcome.Default(second)

	*first.Spec.Replicas = 7
	*first.Spec.Port = 7

	if got := *second.Spec.Replicas; got != 1 {
		t.Errorf("second Welcome's replicas = %d after editing the first's, want 1: defaults share a pointer", got)
	}
	if got := *second.Spec.Port; got != 8088 {
		t.Errorf("second Welcome's port = %d after editing the first's, want 8088: defaults share a pointer", got)
	}
}

func TestValidateWelcome(t *testing.T) {
	tests := []struct {
		name         string
		welcome      *authv1alpha1.Welcome
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{
			name:    "minimal spec is valid",
			welcome: welcome(),
		},
		{
			name: "fully specified valid spec",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.UserID = ptr.To[int32](1000)
				s.Groups = []string{"admins", "dev"}
				s.Email = "ada@example.com"
				s.Replicas = ptr.To[int32](3)
				s.Port = ptr.To[int32](8080)
				s.Image = "example.com/welcome:v2"
				s.ServiceType = corev1.ServiceTypeLoadBalancer
			}),
		},
		{
			name:     "empty name",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name = "" }),
			wantErrs: field.ErrorList{required("spec.name", nameDetail)},
		},
		{
			name:     "whitespace name",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name = " \t\n" }),
			wantErrs: field.ErrorList{required("spec.name", nameDetail)},
		},
		{
			name:    "unset userID is valid",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = nil }),
		},
		{
			name:     "userID 0",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](0) }),
			wantErrs: field.ErrorList{invalid("spec.userID", int32(0), userIDDetail)},
		},
		{
			name:    "userID 1",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](1) }),
		},
		{
			name:    "userID 65535",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](65535) }),
		},
		{
			name:     "userID 65536",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](65536) }),
			wantErrs: field.ErrorList{invalid("spec.userID", int32(65536), userIDDetail)},
		},
		{
			name:     "userID -1",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](-1) }),
			wantErrs: field.ErrorList{invalid("spec.userID", int32(-1), userIDDetail)},
		},
		{
			name:    "unset port is valid",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = nil }),
		},
		{
			name:     "port 0",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](0) }),
			wantErrs: field.ErrorList{invalid("spec.port", int32(0), portDetail)},
		},
		{
			name:    "port 1",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](1) }),
		},
		{
			name:    "port 65535",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](65535) }),
		},
		{
			name:     "port 65536",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](65536) }),
			wantErrs: field.ErrorList{invalid("spec.port", int32(65536), portDetail)},
		},
		{
			name:     "port -1",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](-1) }),
			wantErrs: field.ErrorList{invalid("spec.port", int32(-1), portDetail)},
		},
		{
			name:    "unset replicas is valid",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = nil }),
		},
		{
			name:     "replicas -1",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](-1) }),
			wantErrs: field.ErrorList{invalid("spec.replicas", int32(-1), replicasDetail)},
		},
		{
			name:         "replicas 0 is allowed with a warning",
			welcome:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](0) }),
			wantWarnings: admission.Warnings{zeroReplicasWarning},
		},
		{
			name:    "replicas 1 has no warning",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](1) }),
		},
		{
			name:    "bare email address",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "a@example.com" }),
		},
		{
			name:    "email with plus tag and subdomains",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "ada+ops@mail.example.co.uk" }),
		},
		{
			name:     "email without @",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "not-an-email" }),
			wantErrs: field.ErrorList{invalid("spec.email", "not-an-email", emailDetail)},
		},
		{
			name:     "email with display name",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "Bob <bob@example.com>" }),
			wantErrs: field.ErrorList{invalid("spec.email", "Bob <bob@example.com>", emailDetail)},
		},
		{
			name:     "email in angle brackets",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "<bob@example.com>" }),
			wantErrs: field.ErrorList{invalid("spec.email", "<bob@example.com>", emailDetail)},
		},
		{
			name:     "email without a dot in the domain",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@localhost" }),
			wantErrs: field.ErrorList{invalid("spec.email", "bob@localhost", emailDetail)},
		},
		{
			name:     "email with leading space",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = " a@example.com" }),
			wantErrs: field.ErrorList{invalid("spec.email", " a@example.com", emailDetail)},
		},
		{
			name:     "email with trailing space",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "a@example.com " }),
			wantErrs: field.ErrorList{invalid("spec.email", "a@example.com ", emailDetail)},
		},
		{
			name:     "email with two @",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "a@b@example.com" }),
			wantErrs: field.ErrorList{invalid("spec.email", "a@b@example.com", emailDetail)},
		},
		{
			name:     "email with only a domain",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "@example.com" }),
			wantErrs: field.ErrorList{invalid("spec.email", "@example.com", emailDetail)},
		},
		{
			name:    "unique groups",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"admins", "dev", "ops"} }),
		},
		{
			name:    "empty group list",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{} }),
		},
		{
			name:     "duplicate group",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"admins", "dev", "admins"} }),
			wantErrs: field.ErrorList{duplicate("spec.groups[2]", "admins")},
		},
		{
			name:    "group appearing three times is reported at each repeat",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"dev", "dev", "dev"} }),
			wantErrs: field.ErrorList{
				duplicate("spec.groups[1]", "dev"),
				duplicate("spec.groups[2]", "dev"),
			},
		},
		{
			name:     "empty group",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"admins", ""} }),
			wantErrs: field.ErrorList{required("spec.groups[1]", groupDetail)},
		},
		{
			name:     "whitespace group",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"  ", "admins"} }),
			wantErrs: field.ErrorList{required("spec.groups[0]", groupDetail)},
		},
		{
			name:    "two empty groups are reported as empty, not as duplicates",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"", "admins", ""} }),
			wantErrs: field.ErrorList{
				required("spec.groups[0]", groupDetail),
				required("spec.groups[2]", groupDetail),
			},
		},
		{
			name:    "serviceType NodePort",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeNodePort }),
		},
		{
			name:    "serviceType ClusterIP",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeClusterIP }),
		},
		{
			name:    "serviceType LoadBalancer",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeLoadBalancer }),
		},
		{
			name:     "serviceType ExternalName",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeExternalName }),
			wantErrs: field.ErrorList{notSupported("spec.serviceType", corev1.ServiceTypeExternalName, serviceTypeDetail)},
		},
		{
			name:     "serviceType in the wrong case",
			welcome:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = "nodeport" }),
			wantErrs: field.ErrorList{notSupported("spec.serviceType", corev1.ServiceType("nodeport"), serviceTypeDetail)},
		},
		{
			name:         "plaintext password is allowed with a warning",
			welcome:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Password = "hunter2" }),
			wantWarnings: admission.Warnings{passwordWarning},
		},
		{
			name: "password and replicas 0 give both warnings",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Password = "hunter2"
				s.Replicas = ptr.To[int32](0)
			}),
			wantWarnings: admission.Warnings{passwordWarning, zeroReplicasWarning},
		},
		{
			name: "every rule broken at once returns every violation in field order",
			welcome: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Name = ""
				s.UserID = ptr.To[int32](0)
				s.Groups = []string{"a", "", "a"}
				s.Email = "not-an-email"
				s.Password = "hunter2"
				s.Replicas = ptr.To[int32](-1)
				s.Port = ptr.To[int32](70000)
				s.ServiceType = corev1.ServiceTypeExternalName
			}),
			wantErrs: field.ErrorList{
				required("spec.name", nameDetail),
				invalid("spec.userID", int32(0), userIDDetail),
				required("spec.groups[1]", groupDetail),
				duplicate("spec.groups[2]", "a"),
				invalid("spec.email", "not-an-email", emailDetail),
				invalid("spec.replicas", int32(-1), replicasDetail),
				invalid("spec.port", int32(70000), portDetail),
				notSupported("spec.serviceType", corev1.ServiceTypeExternalName, serviceTypeDetail),
			},
			wantWarnings: admission.Warnings{passwordWarning},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.welcome.DeepCopy()

			gotErrs, gotWarnings := Welcome.Validate(nil, tc.welcome, nil)

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(before, tc.welcome); diff != "" {
				t.Errorf("validation changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestValidateWelcomeUpdate(t *testing.T) {
	tests := []struct {
		name         string
		old, new     *authv1alpha1.Welcome
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{
			name: "valid to valid",
			old:  welcome(),
			new:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](3) }),
		},
		{
			name: "kept invalid email with another field changed is allowed",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@localhost" }),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Email = "bob@localhost"
				s.Replicas = ptr.To[int32](3)
			}),
		},
		{
			name: "invalid email changed to another invalid email is refused",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@localhost" }),
			new:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "not-an-email" }),
			wantErrs: field.ErrorList{
				invalid("spec.email", "not-an-email", emailDetail),
			},
		},
		{
			name: "invalid email fixed",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@localhost" }),
			new:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@example.com" }),
		},
		{
			name:     "valid to invalid is refused",
			old:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](8080) }),
			new:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Port = ptr.To[int32](0) }),
			wantErrs: field.ErrorList{invalid("spec.port", int32(0), portDetail)},
		},
		{
			name: "two violations, one fixed and one kept, is allowed",
			old: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Email = "bob@localhost"
				s.Port = ptr.To[int32](0)
			}),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Email = "bob@localhost"
				s.Port = ptr.To[int32](8080)
			}),
		},
		{
			name: "kept violations are forgiven but a new one is refused",
			old: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Email = "bob@localhost"
				s.Port = ptr.To[int32](0)
			}),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Email = "bob@localhost"
				s.Port = ptr.To[int32](0)
				s.UserID = ptr.To[int32](0)
			}),
			wantErrs: field.ErrorList{invalid("spec.userID", int32(0), userIDDetail)},
		},
		{
			name:     "negative replicas made more negative is refused",
			old:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](-1) }),
			new:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](-2) }),
			wantErrs: field.ErrorList{invalid("spec.replicas", int32(-2), replicasDetail)},
		},
		{
			name: "kept duplicate group is allowed",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"dev", "dev"} }),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Groups = []string{"dev", "dev"}
				s.Email = "ada@example.com"
			}),
		},
		{
			name:     "a different duplicate group is refused",
			old:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"dev", "dev"} }),
			new:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"ops", "ops"} }),
			wantErrs: field.ErrorList{duplicate("spec.groups[1]", "ops")},
		},
		{
			name: "kept unsupported serviceType is allowed",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.ServiceType = corev1.ServiceTypeExternalName }),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.ServiceType = corev1.ServiceTypeExternalName
				s.Port = ptr.To[int32](9000)
			}),
		},
		{
			name: "kept empty name is allowed",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name = "" }),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Name = ""
				s.Image = "example.com/welcome:v2"
			}),
		},
		{
			name:     "name emptied is refused",
			old:      welcome(),
			new:      welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name = "" }),
			wantErrs: field.ErrorList{required("spec.name", nameDetail)},
		},
		{
			name: "warnings are judged on the new object",
			old:  welcome(func(s *authv1alpha1.WelcomeSpec) { s.Password = "hunter2" }),
			new: welcome(func(s *authv1alpha1.WelcomeSpec) {
				s.Password = "hunter2"
				s.Replicas = ptr.To[int32](0)
			}),
			wantWarnings: admission.Warnings{passwordWarning, zeroReplicasWarning},
		},
		{
			name:         "warning dropped once the password is removed",
			old:          welcome(func(s *authv1alpha1.WelcomeSpec) { s.Password = "hunter2" }),
			new:          welcome(),
			wantWarnings: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotErrs, gotWarnings := Welcome.Validate(tc.old, tc.new, nil)

			if diff := gocmp.Diff(tc.wantErrs, gotErrs, compareFieldErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, gotWarnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWelcomeValidatorReturnsInvalidStatus(t *testing.T) {
	ctx := context.Background()
	bad := welcome(func(s *authv1alpha1.WelcomeSpec) {
		s.Name = ""
		s.Email = "Bob <bob@example.com>"
		s.Password = "hunter2"
		s.Port = ptr.To[int32](0)
	})
	bad.Name = "bad-greeting"

	warnings, err := welcomeValidator.ValidateCreate(ctx, bad)

	if diff := gocmp.Diff(admission.Warnings{passwordWarning + " (rule welcome.password.plaintext)"}, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("ValidateCreate error = %#v, want an apierrors.APIStatus", err)
	}
	// Every violation names its rule, as the client sees it.
	want := metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnprocessableEntity,
		Reason: metav1.StatusReasonInvalid,
		Message: `Welcome.auth.seedlabs.dev "bad-greeting" is invalid: [` +
			`spec.name: Required value: the name to greet must not be empty (rule welcome.name.required), ` +
			`spec.email: Invalid value: "Bob <bob@example.com>": must be a bare email address such as user@example.com (rule welcome.email.format), ` +
			`spec.port: Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)]`,
		Details: &metav1.StatusDetails{
			Name:  "bad-greeting",
			Group: "auth.seedlabs.dev",
			Kind:  "Welcome",
			Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.name", Message: "Required value: " + nameDetail + " (rule welcome.name.required)"},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.email", Message: `Invalid value: "Bob <bob@example.com>": ` + emailDetail + " (rule welcome.email.format)"},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.port", Message: "Invalid value: 0: " + portDetail + " (rule welcome.port.range)"},
			},
		},
	}
	if diff := gocmp.Diff(want, status.Status()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	t.Run("valid object", func(t *testing.T) {
		warnings, err := welcomeValidator.ValidateCreate(ctx, welcome())
		if err != nil {
			t.Errorf("ValidateCreate error = %v, want nil", err)
		}
		if len(warnings) != 0 {
			t.Errorf("ValidateCreate warnings = %q, want none", warnings)
		}
	})

	t.Run("valid object with warnings", func(t *testing.T) {
		warnings, err := welcomeValidator.ValidateCreate(ctx, welcome(func(s *authv1alpha1.WelcomeSpec) {
			s.Replicas = ptr.To[int32](0)
			s.Password = "hunter2"
		}))
		if err != nil {
			t.Errorf("ValidateCreate error = %v, want nil", err)
		}
		if diff := gocmp.Diff(admission.Warnings{passwordWarning, zeroReplicasWarning}, sentWithoutRuleIDs(t, warnings)); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("update keeping a violation", func(t *testing.T) {
		old := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Email = "bob@localhost" })
		updated := welcome(func(s *authv1alpha1.WelcomeSpec) {
			s.Email = "bob@localhost"
			s.Replicas = ptr.To[int32](0)
		})
		warnings, err := welcomeValidator.ValidateUpdate(ctx, old, updated)
		if err != nil {
			t.Errorf("ValidateUpdate error = %v, want nil", err)
		}
		if diff := gocmp.Diff(admission.Warnings{zeroReplicasWarning}, sentWithoutRuleIDs(t, warnings)); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("update adding a violation", func(t *testing.T) {
		updated := welcome(func(s *authv1alpha1.WelcomeSpec) { s.UserID = ptr.To[int32](65536) })
		_, err := welcomeValidator.ValidateUpdate(ctx, welcome(), updated)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("ValidateUpdate error = %v, want an Invalid status error", err)
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("ValidateUpdate error = %#v, want an apierrors.APIStatus", err)
		}
		wantCauses := []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.userID", Message: "Invalid value: 65536: " + userIDDetail + " (rule welcome.user-id.range)"},
		}
		if diff := gocmp.Diff(wantCauses, status.Status().Details.Causes); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	})

	t.Run("delete is always allowed", func(t *testing.T) {
		warnings, err := welcomeValidator.ValidateDelete(ctx, bad)
		if err != nil || warnings != nil {
			t.Errorf("ValidateDelete = %q, %v, want no warnings and no error", warnings, err)
		}
	})
}

// TestWelcomeValidatingHandler drives the validating webhook over HTTP, as the API server does,
// and checks what the API server gets back.
func TestWelcomeValidatingHandler(t *testing.T) {
	handler := testWebhooks(ImagePolicy{})[welcomeKind.validate]

	t.Run("invalid create", func(t *testing.T) {
		raw := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
			`"metadata":{"name":"greeting","namespace":"default"},` +
			`"spec":{"name":"x","port":0,"replicas":0,"groups":["a","a"]}}`
		resp, _ := admit(t, handler, welcomeRequest(admissionv1.Create, raw, ""))

		if resp.Allowed {
			t.Fatalf("response allowed, want denied")
		}
		if resp.Result == nil {
			t.Fatalf("response has no result")
		}
		if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
			t.Errorf("result code, reason = %d, %q, want 422, %q", resp.Result.Code, resp.Result.Reason, metav1.StatusReasonInvalid)
		}
		wantDetails := &metav1.StatusDetails{
			Name:  "greeting",
			Group: "auth.seedlabs.dev",
			Kind:  "Welcome",
			Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueDuplicate, Field: "spec.groups[1]", Message: `Duplicate value: "a": (rule welcome.groups.valid)`},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.port", Message: "Invalid value: 0: " + portDetail + " (rule welcome.port.range)"},
			},
		}
		if diff := gocmp.Diff(wantDetails, resp.Result.Details); diff != "" {
			t.Errorf("result details (-want +got):\n%s", diff)
		}
		if diff := gocmp.Diff([]string{zeroReplicasWarning + " (rule welcome.replicas.zero)"}, resp.Warnings); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("update keeping an old violation", func(t *testing.T) {
		old := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
			`"metadata":{"name":"greeting","namespace":"default"},"spec":{"name":"x","email":"bob@localhost"}}`
		updated := `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
			`"metadata":{"name":"greeting","namespace":"default"},"spec":{"name":"y","email":"bob@localhost"}}`
		resp, _ := admit(t, handler, welcomeRequest(admissionv1.Update, updated, old))

		if !resp.Allowed {
			t.Errorf("response denied with %+v, want allowed", resp.Result)
		}
	})
}

func TestWelcomeDefaultingPatch(t *testing.T) {
	handler := testWebhooks(ImagePolicy{})[welcomeKind.mutate]

	allDefaults := []jsonpatch.Operation{
		{Operation: "add", Path: "/spec/port", Value: float64(8088)},
		{Operation: "add", Path: "/spec/replicas", Value: float64(1)},
		{Operation: "add", Path: "/spec/serviceType", Value: "NodePort"},
	}
	tests := []struct {
		name      string
		operation admissionv1.Operation
		object    string
		oldObject string
		want      []jsonpatch.Operation
	}{
		{
			name:      "object as kubectl sends it gets the three defaults and nothing else",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},"spec":{"name":"x"}}`,
			want: allDefaults,
		},
		{
			name:      "fully specified object, replicas 0 included, is not patched",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},` +
				`"spec":{"name":"x","replicas":0,"port":9000,"serviceType":"ClusterIP"}}`,
		},
		{
			name:      "only the unset field is added",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},` +
				`"spec":{"name":"x","replicas":5,"serviceType":"LoadBalancer"}}`,
			want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/port", Value: float64(8088)}},
		},
		{
			name:      "invalid values are left for validation",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},` +
				`"spec":{"name":"","replicas":-1,"port":0,"serviceType":"ExternalName"}}`,
		},
		{
			name:      "fields unknown to Go and status get no removal operations",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default","labels":{"app":"welcome"},` +
				`"annotations":{"note":"hi"},"creationTimestamp":null},` +
				`"spec":{"name":"x","futureField":{"a":1},"email":"","groups":[],"userID":1000},` +
				`"status":{"readyReplicas":2,"serviceURL":"http://greeting.default.svc:8088","futureStatus":true},` +
				`"extraTopLevel":"kept"}`,
			want: allDefaults,
		},
		{
			name:      "empty status gets no removal operation",
			operation: admissionv1.Create,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},"spec":{"name":"x"},"status":{}}`,
			want: allDefaults,
		},
		{
			name:      "delete is allowed without a patch",
			operation: admissionv1.Delete,
			oldObject: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default"},"spec":{"name":"x"}}`,
		},
		{
			name:      "update that drops the defaulted fields gets them back",
			operation: admissionv1.Update,
			object: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default","resourceVersion":"7"},"spec":{"name":"y"}}`,
			oldObject: `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome",` +
				`"metadata":{"name":"greeting","namespace":"default","resourceVersion":"7"},` +
				`"spec":{"name":"x","replicas":3,"port":9000,"serviceType":"ClusterIP"}}`,
			want: allDefaults,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, ops := admit(t, handler, welcomeRequest(tc.operation, tc.object, tc.oldObject))

			if !resp.Allowed {
				t.Fatalf("response denied with %+v, want allowed", resp.Result)
			}
			got := slices.SortedFunc(slices.Values(ops), func(a, b jsonpatch.Operation) int {
				return cmp.Compare(a.Path, b.Path)
			})
			if diff := gocmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patch operations (-want +got):\n%s", diff)
			}
			var wantPatchType *admissionv1.PatchType
			if len(tc.want) > 0 {
				wantPatchType = ptr.To(admissionv1.PatchTypeJSONPatch)
			}
			if diff := gocmp.Diff(wantPatchType, resp.PatchType); diff != "" {
				t.Errorf("patch type (-want +got):\n%s", diff)
			}
		})
	}
}
