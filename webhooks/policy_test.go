package webhooks

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

func admissionPolicy(rules ...policyv1.RulePolicy) *policyv1.AdmissionPolicy {
	return &policyv1.AdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
		Spec:       policyv1.AdmissionPolicySpec{Rules: rules},
	}
}

func TestValidateAdmissionPolicy(t *testing.T) {
	valid := admissionPolicy(
		policyv1.RulePolicy{ID: string(WelcomeEmail), Action: policyv1.Warn, Namespaces: []policyv1.NamespaceAction{
			{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, Action: policyv1.Enforce},
		}},
		policyv1.RulePolicy{ID: string(WelcomePassword), Action: policyv1.Audit},
	)
	valid.Spec.AllowedRegistries = []string{"ghcr.io"}
	if errs := ValidateAdmissionPolicy(valid); len(errs) > 0 {
		t.Errorf("a valid policy is refused: %v", errs)
	}

	bad := admissionPolicy(
		policyv1.RulePolicy{ID: "welcome.no.such-rule", Action: policyv1.Warn},
		policyv1.RulePolicy{ID: string(WelcomePort), Action: policyv1.Warn},
		policyv1.RulePolicy{ID: string(WelcomeEmail), Action: "Ignore", Namespaces: []policyv1.NamespaceAction{
			{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}, Action: policyv1.Audit},
		}},
		policyv1.RulePolicy{ID: string(WelcomePassword), Action: policyv1.Enforce},
		policyv1.RulePolicy{ID: string(DeployObjectEnv), Action: policyv1.Enforce, Namespaces: []policyv1.NamespaceAction{
			{Action: policyv1.Audit},
		}},
	)
	bad.Name = "mine"
	bad.Spec.AllowedRegistries = []string{"Not A Registry"}
	var got []string
	for _, e := range ValidateAdmissionPolicy(bad) {
		got = append(got, e.Field)
	}
	want := []string{
		"metadata.name", "spec.allowedRegistries[0]", "spec.rules[0].id", "spec.rules[1].action", "spec.rules[2].action",
		"spec.rules[2].namespaces[0].selector.matchExpressions[0].operator", "spec.rules[3].action", "spec.rules[4].namespaces[0].action",
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("fields refused (-want +got):\n%s", diff)
	}
}

// TestNewPolicyAppliesWhatIsValid: a policy stored past its webhook is applied except what cannot
// be, each part reported; registries are never widened by a bad entry, and a policy that names no
// registries takes the manager's.
func TestNewPolicyAppliesWhatIsValid(t *testing.T) {
	defaults := imagePolicy(t, "ghcr.io")
	for _, tc := range []struct {
		name       string
		registries []string
		rules      []policyv1.RulePolicy
		// wantRegistries is what Images().AllowedRegistries() gives: nil for any, [] for none.
		wantRegistries []string
		wantActions    map[RuleID]policyv1.Action
		wantErrs       []string
	}{{
		name:           "no allowedRegistries: the manager's",
		rules:          []policyv1.RulePolicy{{ID: string(WelcomeEmail), Action: policyv1.Audit}},
		wantRegistries: []string{"ghcr.io"},
		wantActions:    map[RuleID]policyv1.Action{WelcomeEmail: policyv1.Audit},
	}, {
		name:       "allowedRegistries []: any",
		registries: []string{},
	}, {
		name:           "a bad entry beside good ones: the good ones",
		registries:     []string{"registry.corp.example", "Not A Registry", " "},
		wantRegistries: []string{"registry.corp.example"},
		wantErrs:       []string{"spec.allowedRegistries[1]", "spec.allowedRegistries[2]"},
	}, {
		name:           "only bad entries: none, never any",
		registries:     []string{"https://registry.corp.example", ""},
		wantRegistries: []string{},
		wantErrs:       []string{"spec.allowedRegistries[0]", "spec.allowedRegistries[1]"},
	}, {
		// The reproducer of issue 20: once welcome.port.range became a contract rule, this policy
		// was dropped whole, and its allow-list with it.
		name:       "a contract rule relaxed, an unknown rule, a repeated one: each dropped, the rest applied",
		registries: []string{"registry.corp.example"},
		rules: []policyv1.RulePolicy{
			{ID: string(WelcomePort), Action: policyv1.Warn},
			{ID: "welcome.no.such-rule", Action: policyv1.Warn},
			{ID: string(WelcomeEmail), Action: policyv1.Warn},
			{ID: string(WelcomeEmail), Action: policyv1.Audit},
			{ID: string(WelcomePassword), Action: policyv1.Audit, Namespaces: []policyv1.NamespaceAction{
				{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}, Action: policyv1.Warn},
			}},
		},
		wantRegistries: []string{"registry.corp.example"},
		wantActions: map[RuleID]policyv1.Action{
			WelcomePort: policyv1.Enforce, WelcomeEmail: policyv1.Warn, WelcomePassword: policyv1.Warn,
		},
		wantErrs: []string{"spec.rules[0].action", "spec.rules[1].id", "spec.rules[3].id", "spec.rules[4].namespaces[0].selector.matchExpressions[0].operator"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ap := admissionPolicy(tc.rules...)
			ap.Spec.AllowedRegistries = tc.registries
			p, errs := NewPolicy(ap, defaults)
			if p == nil {
				t.Fatal("no policy")
			}
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if diff := gocmp.Diff(tc.wantErrs, fields); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.wantRegistries, p.Images().AllowedRegistries()); diff != "" {
				t.Errorf("allowed registries (-want +got):\n%s", diff)
			}
			for id, want := range tc.wantActions {
				if got := p.Action(id, nil); got != want {
					t.Errorf("Action(%s) = %s, want %s", id, got, want)
				}
			}
			if diff := gocmp.Diff(fields, causesOf(ValidateAdmissionPolicy(ap))); diff != "" {
				t.Errorf("the webhook refuses other fields than those not applied (-applied +refused):\n%s", diff)
			}
		})
	}

	t.Run("an image from a registry of no valid entry is refused, naming why", func(t *testing.T) {
		ap := admissionPolicy()
		ap.Spec.AllowedRegistries = []string{"not a registry"}
		p, _ := NewPolicy(ap, defaults)
		errs, _ := validateImage("evil.example/miner:1.0", p.Images(), nil, imageRules{})
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "allowed registries: none (the AdmissionPolicy names no valid registry)") {
			t.Errorf("validateImage: %v", errs)
		}
	})
}

func causesOf(errs field.ErrorList) []string {
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	return fields
}

func TestPolicyActions(t *testing.T) {
	p, errs := NewPolicy(admissionPolicy(
		policyv1.RulePolicy{ID: string(WelcomeEmail), Action: policyv1.Warn, Namespaces: []policyv1.NamespaceAction{
			{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, Action: policyv1.Enforce},
			{Selector: metav1.LabelSelector{}, Action: policyv1.Audit},
		}},
		policyv1.RulePolicy{ID: string(WelcomePassword), Action: policyv1.Audit},
	), ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !p.SelectsNamespaces() {
		t.Error("a policy with overrides does not select namespaces")
	}
	for _, c := range []struct {
		id     RuleID
		labels labels.Set
		want   policyv1.Action
	}{
		{WelcomeEmail, labels.Set{"env": "prod"}, policyv1.Enforce},
		{WelcomeEmail, labels.Set{"env": "dev"}, policyv1.Audit}, // the empty selector selects every namespace
		{WelcomePassword, nil, policyv1.Audit},
		{WelcomePort, nil, policyv1.Enforce},      // not listed: a refusing rule's default
		{WelcomeReplicasZero, nil, policyv1.Warn}, // not listed: a warning rule's default
		{"welcome.unknown.rule", nil, policyv1.Enforce},
	} {
		if got := p.Action(c.id, c.labels); got != c.want {
			t.Errorf("Action(%s, %v) = %s, want %s", c.id, c.labels, got, c.want)
		}
	}
	var nilPolicy *Policy
	if got := nilPolicy.Action(WelcomeEmail, nil); got != policyv1.Enforce {
		t.Errorf("a nil policy: %s, want Enforce", got)
	}
}

// TestPolicyJudge applies a policy to what the Welcome rules find: Warned violations become
// warnings in the client's words, Audited ones and Audited warnings only name their rule, and
// Enforced ones are refused.
func TestPolicyJudge(t *testing.T) {
	p, errs := NewPolicy(admissionPolicy(
		policyv1.RulePolicy{ID: string(WelcomeEmail), Action: policyv1.Warn},
		policyv1.RulePolicy{ID: string(WelcomeUserID), Action: policyv1.Audit},
		policyv1.RulePolicy{ID: string(WelcomePassword), Action: policyv1.Audit},
	), ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w := welcome(func(s *authv1alpha1.WelcomeSpec) {
		s.Email, s.UserID, s.Port, s.Password, s.Replicas = "nope", ptr.To[int32](0), ptr.To[int32](0), "p", ptr.To[int32](0)
	})
	found, warnings := Welcome.Validate(nil, w, nil)
	j := p.Judge(found, warnings, nil)

	var refused []string
	for _, e := range j.Refused {
		refused = append(refused, e.Field)
	}
	if diff := gocmp.Diff([]string{"spec.port"}, refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		`spec.email: Invalid value: "nope": must be a bare email address such as user@example.com (rule welcome.email.format)`,
		"spec.replicas is 0: no web server pod will run until it is raised (rule welcome.replicas.zero)",
	}
	if diff := gocmp.Diff(wantWarnings, []string(ListedWarnings(j.Warnings))); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff([]RuleID{WelcomeUserID, WelcomePassword}, j.Audited()); diff != "" {
		t.Errorf("audited (-want +got):\n%s", diff)
	}

	// The default policy refuses and warns as the rules do.
	j = DefaultPolicy(ImagePolicy{}).Judge(found, warnings, nil)
	if len(j.Refused) != len(found) || len(j.Warnings) != len(warnings) || len(j.Audited()) != 0 {
		t.Errorf("the default policy changed what the rules found: %+v", j)
	}
}

func TestPolicyString(t *testing.T) {
	p, _ := NewPolicy(admissionPolicy(), ImagePolicy{})
	if s := p.String(); !strings.Contains(s, "default") {
		t.Errorf("String() = %q", s)
	}
}
