package webhooks

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

var ruleIDFormat = regexp.MustCompile(`^(welcome|memcached|deployobject)\.[a-z0-9-]+\.[a-z0-9-]+$`)

func TestRulesAreWellFormed(t *testing.T) {
	seen := map[RuleID]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("rule %s is registered twice", r.ID)
		}
		seen[r.ID] = true
		if !ruleIDFormat.MatchString(string(r.ID)) {
			t.Errorf("rule %s is not <kind>.<field>.<rule> in lower case", r.ID)
		}
		if !strings.HasPrefix(string(r.ID), strings.ToLower(r.Kind)+".") {
			t.Errorf("rule %s holds a %s", r.ID, r.Kind)
		}
		switch {
		case r.Default == policyv1.Warn && slices.Equal(r.Actions, warnOnly):
		case r.Default == policyv1.Enforce && (slices.Equal(r.Actions, contract) || slices.Equal(r.Actions, anyAction)):
		default:
			t.Errorf("rule %s defaults to %s and allows %v: a rule is a contract (Enforce), a warning (Warn or Audit, Warn by default) or any action, Enforce by default", r.ID, r.Default, r.Actions)
		}
		// The registry allow-list is admission policy; the conversion data is read by no controller.
		if r.AdmissionOnly && !strings.HasSuffix(string(r.ID), ".image.registry") && r.ID != WelcomeConversionData {
			t.Errorf("rule %s is AdmissionOnly: only the registry allow-list and the conversion data, which no controller reads, hold no stored spec back", r.ID)
		}
		if r.Field == "" || r.Summary == "" {
			t.Errorf("rule %s has no field or summary", r.ID)
		}
	}
}

// TestEveryRuleIsReachable breaks every rule once and requires each violation and warning to name
// a registered rule, and every registered rule to be named by one: no rule is left without an ID,
// and no ID is left without its rule.
func TestEveryRuleIsReachable(t *testing.T) {
	strict, err := NewImagePolicy([]string{"ghcr.io"})
	if err != nil {
		t.Fatal(err)
	}
	named := map[RuleID]bool{}
	record := func(errs field.ErrorList, warnings []Warning) {
		t.Helper()
		for _, e := range errs {
			if !isRule(RuleID(e.Origin)) {
				t.Errorf("%s does not name a registered rule", e)
				continue
			}
			named[RuleID(e.Origin)] = true
		}
		for _, w := range warnings {
			id := w.Rule
			if !isRule(id) {
				t.Errorf("the warning %q does not name a registered rule", w)
				continue
			}
			named[id] = true
		}
	}

	for _, spec := range []authv1alpha1.WelcomeSpec{
		{Name: " ", UserID: ptr.To[int32](0), Groups: []string{"a", "a"}, Email: "nope", Replicas: ptr.To[int32](-1),
			Port: ptr.To[int32](0), ServiceType: "ExternalName", Password: "x", Image: "quay.io/a/b"},
		{Name: "Ada", Replicas: ptr.To[int32](0), Image: "bad image"},
		{Name: "Ada", Image: "quay.io/a/b:1"},
		{Name: strings.Repeat("a", 257), Groups: make([]string, 33), Password: strings.Repeat("p", 257), Replicas: ptr.To[int32](101)},
		{Name: "Ada", Image: "ghcr.io/a/b:latest@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	} {
		w := welcome()
		w.Name, w.Spec = "hello.world", spec
		record(Welcome.Validate(nil, w, DefaultPolicy(strict)))
	}
	// At v1, a conversion-data annotation no conversion writes.
	v1 := welcomeV1(welcome())
	v1.Annotations = map[string]string{authv1.ConversionDataAnnotation: "{not json"}
	record(WelcomeV1.Validate(nil, v1, DefaultPolicy(strict)))

	for _, c := range []struct{ old, size, port *int32 }{
		{nil, ptr.To[int32](4), ptr.To[int32](0)},
		{ptr.To[int32](7), ptr.To[int32](5), nil},
	} {
		m := memcached(c.size, c.port)
		m.Name = "hello.world"
		var old *cachev1alpha1.Memcached
		if c.old != nil {
			old = memcached(c.old, c.port)
			old.Name = m.Name
		}
		record(Memcached.Validate(old, m, nil))
	}

	for _, spec := range []appv1.DeployObjectSpec{
		{Image: "", Replicas: ptr.To[int32](-1), Ports: nil,
			Env: []corev1.EnvVar{{Name: "A=B"}, {Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}},
		{Image: "quay.io/a/b", Ports: []corev1.ServicePort{{Port: 80, AppProtocol: ptr.To("HTTP 2")}},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}},
		{Image: "quay.io/a/b:1.0", Ports: []corev1.ServicePort{{Port: 80}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: ""}}, ReadinessProbe: &corev1.Probe{}},
		{Image: "ghcr.io/a/b:1.0", Replicas: ptr.To[int32](101), Ports: []corev1.ServicePort{{Port: 80}},
			Env: slices.Repeat([]corev1.EnvVar{{Name: "A", Value: "x"}}, 101)},
		{Image: "ghcr.io/a/b:latest@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Ports: []corev1.ServicePort{{Port: 80}}},
	} {
		d := deployObject()
		d.Name, d.Spec = "hello.world", spec
		record(ValidateDeployObject(nil, d, DefaultPolicy(strict)))
	}

	for _, r := range Rules() {
		if !named[r.ID] {
			t.Errorf("no case breaks rule %s", r.ID)
		}
	}
	ids := make([]string, 0, len(named))
	for id := range named {
		ids = append(ids, string(id))
	}
	slices.Sort(ids)
	t.Logf("rules named: %s", strings.Join(ids, " "))
}
