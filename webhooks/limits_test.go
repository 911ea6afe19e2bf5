package webhooks

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// ruled is a field error of rule id as Validate<Kind> returns it: the rule in its Origin.
func ruled(typ field.ErrorType, path string, value any, detail string, id RuleID) *field.Error {
	return &field.Error{Type: typ, Field: path, BadValue: value, Detail: detail, Origin: string(id)}
}

// tooLongError is the error of a value of size bytes at path, over limit, under rule id.
func tooLongError(path string, size, limit int, fix string, id RuleID) *field.Error {
	return ruled(field.ErrorTypeTooLong, path, "<value omitted>", fmt.Sprintf("is %d bytes, more than the %d allowed; %s", size, limit, fix), id)
}

const envValueFix = "read a long value from a ConfigMap with valueFrom.configMapKeyRef"

// replicasCapDetail is the detail of the refusal of more replicas than limit.
func replicasCapDetail(limit int) string {
	return fmt.Sprintf("must be at most %d; lower it, or ask a cluster admin to raise the cap: "+
		"the AdmissionPolicy's maxReplicas raises it, and setting this rule to Warn lifts it", limit)
}

// emailOfBytes is a bare address of size bytes, which isEmailAddress accepts at any length.
func emailOfBytes(size int) string {
	return strings.Repeat("a", 64) + "@" + strings.Repeat("b", size-len("@.com")-64) + ".com"
}

func TestWelcomeSizeLimits(t *testing.T) {
	// threeByteName is 259 bytes in 87 characters: too long in bytes only.
	threeByteName := strings.Repeat("€", 86) + "a"
	tests := []struct {
		name         string
		change       func(*authv1alpha1.WelcomeSpec)
		wantErrs     field.ErrorList
		wantWarnings admission.Warnings
	}{
		{
			name: "every field at its limit",
			change: func(s *authv1alpha1.WelcomeSpec) {
				s.Name = strings.Repeat("€", 85) + "a" // 256 bytes
				s.Email = emailOfBytes(254)
				s.Groups = fixtures.GroupsOf(32, 256)
				s.Password = strings.Repeat("p", 256)
				s.Replicas = ptr.To[int32](100)
			},
			wantWarnings: admission.Warnings{passwordWarning},
		},
		{
			name:     "a name of 257 bytes",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Name = strings.Repeat("n", 257) },
			wantErrs: field.ErrorList{tooLongError("spec.name", 257, 256, "shorten the name to greet", WelcomeNameLength)},
		},
		{
			name:     "a name of 87 characters, 86 of three bytes",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Name = threeByteName },
			wantErrs: field.ErrorList{tooLongError("spec.name", 259, 256, "shorten the name to greet", WelcomeNameLength)},
		},
		{
			name:   "a blank name of 300 bytes breaks both rules of spec.name",
			change: func(s *authv1alpha1.WelcomeSpec) { s.Name = strings.Repeat(" ", 300) },
			wantErrs: field.ErrorList{
				ruled(field.ErrorTypeRequired, "spec.name", "", nameDetail, WelcomeName),
				tooLongError("spec.name", 300, 256, "shorten the name to greet", WelcomeNameLength),
			},
		},
		{
			name:     "an email of 255 bytes is no address, whatever its form",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Email = emailOfBytes(255) },
			wantErrs: field.ErrorList{tooLongError("spec.email", 255, 254, "no email address is longer (RFC 5321)", WelcomeEmail)},
		},
		{
			name:   "33 groups",
			change: func(s *authv1alpha1.WelcomeSpec) { s.Groups = fixtures.GroupsOf(33, 8) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeTooMany, "spec.groups", 33,
				"must have at most 32 groups; keep only the ones the app needs", WelcomeGroupsSize)},
		},
		{
			name:     "a group of 257 bytes",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{"dev", strings.Repeat("g", 257)} },
			wantErrs: field.ErrorList{tooLongError("spec.groups[1]", 257, 256, "shorten the group name", WelcomeGroupsSize)},
		},
		{
			name:     "a group of 87 characters, 86 of three bytes",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Groups = []string{threeByteName} },
			wantErrs: field.ErrorList{tooLongError("spec.groups[0]", 259, 256, "shorten the group name", WelcomeGroupsSize)},
		},
		{
			name: "a long group repeated is a duplicate too",
			change: func(s *authv1alpha1.WelcomeSpec) {
				s.Groups = []string{strings.Repeat("g", 300), strings.Repeat("g", 300)}
			},
			wantErrs: field.ErrorList{
				ruled(field.ErrorTypeDuplicate, "spec.groups[1]", strings.Repeat("g", 300), "", WelcomeGroups),
				tooLongError("spec.groups[0]", 300, 256, "shorten the group name", WelcomeGroupsSize),
				tooLongError("spec.groups[1]", 300, 256, "shorten the group name", WelcomeGroupsSize),
			},
		},
		{
			name:   "a password of 257 bytes",
			change: func(s *authv1alpha1.WelcomeSpec) { s.Password = strings.Repeat("p", 257) },
			wantErrs: field.ErrorList{tooLongError("spec.password", 257, 256, "shorten it, or better, keep the secret in a Secret",
				WelcomePasswordLength)},
			wantWarnings: admission.Warnings{passwordWarning},
		},
		{
			name:     "101 replicas",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](101) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeInvalid, "spec.replicas", int32(101), replicasCapDetail(100), WelcomeReplicasMax)},
		},
		{
			name:     "the most replicas int32 holds",
			change:   func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To[int32](math.MaxInt32) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeInvalid, "spec.replicas", int32(math.MaxInt32), replicasCapDetail(100), WelcomeReplicasMax)},
		},
		{
			name: "every limit broken at once, in one reply",
			change: func(s *authv1alpha1.WelcomeSpec) {
				s.Name = strings.Repeat("n", 1<<20)
				s.Email = emailOfBytes(1000)
				s.Groups = append(fixtures.GroupsOf(32, 8), strings.Repeat("g", 257))
				s.Password = strings.Repeat("p", 257)
				s.Replicas = ptr.To[int32](300)
			},
			wantErrs: field.ErrorList{
				tooLongError("spec.name", 1<<20, 256, "shorten the name to greet", WelcomeNameLength),
				ruled(field.ErrorTypeTooMany, "spec.groups", 33, "must have at most 32 groups; keep only the ones the app needs", WelcomeGroupsSize),
				tooLongError("spec.groups[32]", 257, 256, "shorten the group name", WelcomeGroupsSize),
				tooLongError("spec.email", 1000, 254, "no email address is longer (RFC 5321)", WelcomeEmail),
				tooLongError("spec.password", 257, 256, "shorten it, or better, keep the secret in a Secret", WelcomePasswordLength),
				ruled(field.ErrorTypeInvalid, "spec.replicas", int32(300), replicasCapDetail(100), WelcomeReplicasMax),
			},
			wantWarnings: admission.Warnings{passwordWarning},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := Welcome.Validate(nil, welcome(tc.change), nil)
			if diff := gocmp.Diff(tc.wantErrs, errs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantWarnings, withoutRuleIDs(t, warnings), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// envOfBytes is an environment of n variables V000, V001, … whose names and values add up to
// total bytes, each value at most maxEnvValueBytes, the first ones full.
func envOfBytes(n, total int) []corev1.EnvVar {
	env := make([]corev1.EnvVar, n)
	left := total
	for i := range env {
		env[i].Name = fmt.Sprintf("V%03d", i)
		left -= len(env[i].Name)
	}
	for i := range env {
		size := min(left, maxEnvValueBytes)
		env[i].Value = strings.Repeat("v", size)
		left -= size
	}
	if left != 0 {
		panic(fmt.Sprintf("%d variables cannot hold %d bytes", n, total))
	}
	return env
}

func TestDeployObjectSizeLimits(t *testing.T) {
	totalDetail := func(total int) string {
		return fmt.Sprintf("the names and values add up to %d bytes, more than the 262144 allowed; "+
			"read long values from a ConfigMap with valueFrom.configMapKeyRef", total)
	}
	tests := []struct {
		name     string
		change   func(*appv1.DeployObjectSpec)
		wantErrs field.ErrorList
	}{
		{
			name: "every limit reached",
			change: func(s *appv1.DeployObjectSpec) {
				s.Replicas = ptr.To[int32](100)
				s.Env = envOfBytes(100, 256<<10)
			},
		},
		{
			name:     "101 replicas",
			change:   func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To[int32](101) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeInvalid, "spec.replicas", int32(101), replicasCapDetail(100), DeployObjectReplicasMax)},
		},
		{
			name:   "101 variables",
			change: func(s *appv1.DeployObjectSpec) { s.Env = envOfBytes(101, 1000) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeTooMany, "spec.env", 101,
				"must have at most 100 variables; drop the ones the app does not read", DeployObjectEnvSize)},
		},
		{
			name: "a value of 32 KiB and one byte",
			change: func(s *appv1.DeployObjectSpec) {
				s.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "BIG", Value: strings.Repeat("v", 32<<10+1)}}
			},
			wantErrs: field.ErrorList{tooLongError("spec.env[1].value", 32<<10+1, 32<<10, envValueFix, DeployObjectEnvSize)},
		},
		{
			name:     "names and values of 256 KiB and one byte",
			change:   func(s *appv1.DeployObjectSpec) { s.Env = envOfBytes(100, 256<<10+1) },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeTooLong, "spec.env", "<value omitted>", totalDetail(256<<10+1), DeployObjectEnvSize)},
		},
		{
			name:     "a name counts as much as a value",
			change:   func(s *appv1.DeployObjectSpec) { s.Env = []corev1.EnvVar{{Name: strings.Repeat("N", 256<<10+1)}} },
			wantErrs: field.ErrorList{ruled(field.ErrorTypeTooLong, "spec.env", "<value omitted>", totalDetail(256<<10+1), DeployObjectEnvSize)},
		},
		{
			name: "every limit broken at once, after the Pod API's own rules",
			change: func(s *appv1.DeployObjectSpec) {
				s.Replicas = ptr.To[int32](1000)
				s.Env = append([]corev1.EnvVar{{Name: "A=B", Value: strings.Repeat("v", 1<<20)}}, envOfBytes(100, 1000)...)
			},
			wantErrs: field.ErrorList{
				ruled(field.ErrorTypeInvalid, "spec.replicas", int32(1000), replicasCapDetail(100), DeployObjectReplicasMax),
				ruled(field.ErrorTypeInvalid, "spec.env[0].name", "A=B",
					"a valid environment variable name must consist only of printable ASCII characters other than '='", DeployObjectEnv),
				ruled(field.ErrorTypeTooMany, "spec.env", 101, "must have at most 100 variables; drop the ones the app does not read", DeployObjectEnvSize),
				tooLongError("spec.env[0].value", 1<<20, 32<<10, envValueFix, DeployObjectEnvSize),
				ruled(field.ErrorTypeTooLong, "spec.env", "<value omitted>", totalDetail(1<<20+3+1000), DeployObjectEnvSize),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateDeployObject(nil, deployObject(tc.change), nil)
			if diff := gocmp.Diff(tc.wantErrs, errs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings %v, want none", warnings)
			}
		})
	}
}

// sizeLimitRules are the rules of the size limits, which a cluster admin may relax to raise them.
var sizeLimitRules = []RuleID{
	WelcomeNameLength, WelcomeGroupsSize, WelcomePasswordLength, WelcomeReplicasMax, DeployObjectReplicasMax, DeployObjectEnvSize,
}

// TestSizeLimitsCanBeRaised holds that every size limit refuses by default, and that an
// AdmissionPolicy may relax it, for the cluster or for the namespaces it selects: Warned, a
// violation is admitted with a warning; Audited, silently.
func TestSizeLimitsCanBeRaised(t *testing.T) {
	w := welcome(func(s *authv1alpha1.WelcomeSpec) {
		s.Name, s.Groups, s.Password, s.Replicas = strings.Repeat("n", 257), fixtures.GroupsOf(33, 8), strings.Repeat("p", 257), ptr.To[int32](101)
	})
	welcomeErrs, _ := Welcome.Validate(nil, w, nil)
	d := deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas, s.Env = ptr.To[int32](101), envOfBytes(101, 1000) })
	deployObjectErrs, _ := ValidateDeployObject(nil, d, nil)
	errs := append(welcomeErrs, deployObjectErrs...)
	var broken []RuleID
	for _, e := range errs {
		if !slices.Contains(broken, RuleID(e.Origin)) {
			broken = append(broken, RuleID(e.Origin))
		}
	}
	if diff := gocmp.Diff(sizeLimitRules, broken, cmpopts.SortSlices(func(a, b RuleID) bool { return a < b })); diff != "" {
		t.Fatalf("rules broken (-want +got):\n%s", diff)
	}
	for _, id := range sizeLimitRules {
		if r, _ := ruleByID(id); !slices.Equal(r.Actions, anyAction) || r.Default != policyv1.Enforce {
			t.Errorf("%s is a contract or warning rule: an admin could not raise the limit", id)
		}
	}

	if j := DefaultPolicy(ImagePolicy{}).Judge(errs, nil, nil); len(j.Refused) != len(errs) {
		t.Fatalf("the default policy refuses %d of the %d violations", len(j.Refused), len(errs))
	}
	prod := metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	for _, action := range []policyv1.Action{policyv1.Warn, policyv1.Audit} {
		ap := admissionPolicy()
		for _, id := range sizeLimitRules {
			ap.Spec.Rules = append(ap.Spec.Rules, policyv1.RulePolicy{ID: string(id), Action: action,
				Namespaces: []policyv1.NamespaceAction{{Selector: prod, Action: policyv1.Enforce}}})
		}
		p, policyErrs := NewPolicy(ap, ImagePolicy{})
		if len(policyErrs) > 0 {
			t.Fatalf("a policy that sets the size limits to %s is refused: %v", action, policyErrs)
		}
		relaxed := p.Judge(errs, nil, labels.Set{"env": "dev"})
		if len(relaxed.Refused) > 0 {
			t.Errorf("%s: still refused: %v", action, relaxed.Refused)
		}
		wantWarnings := 0
		if action == policyv1.Warn {
			wantWarnings = len(errs)
		}
		if len(relaxed.Warnings) != wantWarnings {
			t.Errorf("%s: %d warnings, want %d: %v", action, len(relaxed.Warnings), wantWarnings, relaxed.Warnings)
		}
		if enforced := p.Judge(errs, nil, labels.Set{"env": "prod"}); len(enforced.Refused) != len(errs) {
			t.Errorf("%s with an override Enforcing in env=prod: %d of %d violations refused there", action, len(enforced.Refused), len(errs))
		}
	}
}

// TestPasswordLimitRatchets holds the password, which v1 keeps in an annotation, to the ratchet
// of every other field, at both versions: a password stored over its limit stays while an edit
// keeps it, and another one over the limit, even of the same length, is refused where the version
// keeps it.
func TestPasswordLimitRatchets(t *testing.T) {
	long, other := strings.Repeat("p", 300), strings.Repeat("q", 300)
	old := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Password = long })
	versions := map[string]func(old, w *authv1alpha1.Welcome) (field.ErrorList, []Warning){
		"spec.password": func(old, w *authv1alpha1.Welcome) (field.ErrorList, []Warning) {
			return Welcome.Validate(old, w, nil)
		},
		conversionDataPassword.String(): func(old, w *authv1alpha1.Welcome) (field.ErrorList, []Warning) {
			return WelcomeV1.Validate(welcomeV1(old), welcomeV1(w), nil)
		},
	}
	for path, validate := range versions {
		edited := old.DeepCopy()
		edited.Spec.Port = ptr.To[int32](9000)
		if errs, _ := validate(old, edited); len(errs) > 0 {
			t.Errorf("%s: an edit that keeps the stored password is refused: %v", path, errs)
		}
		edited.Spec.Password = other
		errs, _ := validate(old, edited)
		want := field.ErrorList{tooLongError(path, 300, 256, "shorten it, or better, keep the secret in a Secret", WelcomePasswordLength)}
		if diff := gocmp.Diff(want, errs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: another password over the limit (-want +got):\n%s", path, diff)
		}
	}
}

// TestSizeLimitsRatchet holds that an object stored before its limit existed can still be edited,
// as long as the edit keeps the value over the limit unchanged, and that a new value over it is
// refused.
func TestSizeLimitsRatchet(t *testing.T) {
	long := strings.Repeat("n", 300)
	old := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Name, s.Replicas = long, ptr.To[int32](150) })
	edited := old.DeepCopy()
	edited.Spec.Port = ptr.To[int32](9000)
	if errs, _ := Welcome.Validate(old, edited, nil); len(errs) > 0 {
		t.Errorf("an edit that keeps the stored name and replicas is refused: %v", errs)
	}
	edited.Spec.Name, edited.Spec.Replicas = long+"!", ptr.To[int32](151)
	errs, _ := Welcome.Validate(old, edited, nil)
	want := field.ErrorList{
		tooLongError("spec.name", 301, 256, "shorten the name to greet", WelcomeNameLength),
		ruled(field.ErrorTypeInvalid, "spec.replicas", int32(151), replicasCapDetail(100), WelcomeReplicasMax),
	}
	if diff := gocmp.Diff(want, errs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("an edit to new values over the limits (-want +got):\n%s", diff)
	}

	oldObject := deployObject(func(s *appv1.DeployObjectSpec) { s.Env = envOfBytes(101, 1000) })
	editedObject := oldObject.DeepCopy()
	editedObject.Spec.Image = "nginx:1.28"
	if errs, _ := ValidateDeployObject(oldObject, editedObject, nil); len(errs) > 0 {
		t.Errorf("an edit that keeps the stored environment is refused: %v", errs)
	}
	editedObject.Spec.Env = append(editedObject.Spec.Env, corev1.EnvVar{Name: "MORE", Value: "1"})
	errs, _ = ValidateDeployObject(oldObject, editedObject, nil)
	want = field.ErrorList{ruled(field.ErrorTypeTooMany, "spec.env", 102,
		"must have at most 100 variables; drop the ones the app does not read", DeployObjectEnvSize)}
	if diff := gocmp.Diff(want, errs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("an edit that adds a variable past the limit (-want +got):\n%s", diff)
	}
}

// TestMaxReplicasRaisesTheCap holds the AdmissionPolicy's maxReplicas: it raises the cap of both
// kinds' replica rules to the number it gives, is refused below the default cap, which then stays,
// and leaves the rules' actions as they are.
func TestMaxReplicasRaisesTheCap(t *testing.T) {
	compile := func(t *testing.T, maxReplicas *int32, rules ...policyv1.RulePolicy) (*Policy, field.ErrorList) {
		t.Helper()
		ap := admissionPolicy()
		ap.Spec.MaxReplicas, ap.Spec.Rules = maxReplicas, rules
		return NewPolicy(ap, ImagePolicy{})
	}
	validate := func(p *Policy, replicas int32) field.ErrorList {
		w := welcome(func(s *authv1alpha1.WelcomeSpec) { s.Replicas = ptr.To(replicas) })
		d := deployObject(func(s *appv1.DeployObjectSpec) { s.Replicas = ptr.To(replicas) })
		welcomeErrs, _ := Welcome.Validate(nil, w, p)
		deployObjectErrs, _ := ValidateDeployObject(nil, d, p)
		return append(welcomeErrs, deployObjectErrs...)
	}

	raised, errs := compile(t, ptr.To[int32](150))
	if len(errs) > 0 {
		t.Fatalf("maxReplicas 150 is refused: %v", errs)
	}
	if got := raised.MaxReplicas(); got != 150 {
		t.Errorf("MaxReplicas() = %d, want 150", got)
	}
	if errs := validate(raised, 150); len(errs) > 0 {
		t.Errorf("150 replicas under a cap of 150: %v", errs)
	}
	want := field.ErrorList{
		ruled(field.ErrorTypeInvalid, "spec.replicas", int32(151), replicasCapDetail(150), WelcomeReplicasMax),
		ruled(field.ErrorTypeInvalid, "spec.replicas", int32(151), replicasCapDetail(150), DeployObjectReplicasMax),
	}
	if diff := gocmp.Diff(want, validate(raised, 151)); diff != "" {
		t.Errorf("151 replicas under a cap of 150 (-want +got):\n%s", diff)
	}

	for _, m := range []*int32{nil, ptr.To[int32](defaultMaxReplicas)} {
		p, errs := compile(t, m)
		if len(errs) > 0 || p.MaxReplicas() != defaultMaxReplicas {
			t.Errorf("maxReplicas %v: cap %d, errors %v; want %d and none", m, p.MaxReplicas(), errs, defaultMaxReplicas)
		}
	}
	var unset *Policy
	if got := unset.MaxReplicas(); got != defaultMaxReplicas {
		t.Errorf("a nil policy's cap is %d, want %d", got, defaultMaxReplicas)
	}

	lowered, errs := compile(t, ptr.To[int32](50), policyv1.RulePolicy{ID: string(WelcomeReplicasMax), Action: policyv1.Warn})
	wantErrs := field.ErrorList{field.Invalid(field.NewPath("spec", "maxReplicas"), int32(50),
		"may only raise the cap of 100 replicas: the API server does not call the Welcome's webhook for 100 or fewer; to refuse fewer, set a ResourceQuota")}
	if diff := gocmp.Diff(wantErrs, errs); diff != "" {
		t.Errorf("maxReplicas 50 (-want +got):\n%s", diff)
	}
	if got := lowered.MaxReplicas(); got != defaultMaxReplicas {
		t.Errorf("maxReplicas 50, refused, gives a cap of %d, want %d", got, defaultMaxReplicas)
	}
	if got := lowered.Action(WelcomeReplicasMax, nil); got != policyv1.Warn {
		t.Errorf("the rule beside a refused maxReplicas is %s, want Warn: only maxReplicas is dropped", got)
	}
	if got := len(validate(lowered, 60)); got != 0 {
		t.Errorf("60 replicas under a refused maxReplicas of 50: %d errors, want none", got)
	}
}
