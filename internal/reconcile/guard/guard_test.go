package guard

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

const (
	pinned   = "registry.example.test/team/shop:2.4.1"
	unpinned = "registry.example.test/team/shop"
)

func deployObject(image string) *appv1.DeployObject {
	return &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "demo", Generation: 3},
		Spec:       appv1.DeployObjectSpec{Image: image, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

func policy(t *testing.T, spec policyv1.AdmissionPolicySpec) webhooks.PolicySource {
	t.Helper()
	p, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}, Spec: spec}, webhooks.ImagePolicy{})
	if len(errs) > 0 {
		t.Fatalf("the test's policy is refused: %v", errs)
	}
	return webhooks.StaticPolicy{Policy: p}
}

// namespaces answers every lookup with labels, or with err.
type namespaces struct {
	labels map[string]string
	err    error
}

func (n namespaces) NamespaceLabels(context.Context, string) (map[string]string, error) {
	return n.labels, n.err
}

func (n namespaces) HasNamespace(context.Context, string) bool { return n.err == nil }

func TestCheck(t *testing.T) {
	ctx := context.Background()
	allowCorp := policyv1.AdmissionPolicySpec{AllowedRegistries: []string{"registry.corp.example"}}
	warnUnpinned := policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{ID: string(webhooks.DeployObjectImagePinned), Action: policyv1.Warn}}}
	warnUnpinnedInTeams := policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{
		ID: string(webhooks.DeployObjectImagePinned), Action: policyv1.Enforce,
		Namespaces: []policyv1.NamespaceAction{{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}, Action: policyv1.Warn}},
	}}}

	tests := []struct {
		name       string
		image      string
		policy     webhooks.PolicySource
		namespaces webhooks.Namespaces
		// wantEnforced are the fields of the violations that hold the spec back.
		wantEnforced []string
		wantStatus   metav1.ConditionStatus
		// wantRules is the start of the Compliant message: the rules broken and their actions.
		wantRules string
		wantEvent bool
		wantErr   bool
	}{
		{name: "a valid spec without a policy", image: pinned, wantStatus: metav1.ConditionTrue,
			wantRules: "the spec breaks no rule of the admission policy"},
		{name: "an enforced rule holds the spec back; its InvalidSpec Event says so, not the audit", image: unpinned,
			wantEnforced: []string{"spec.image"}, wantStatus: metav1.ConditionFalse, wantRules: "breaks deployobject.image.pinned (Enforce)"},
		{name: "a rule the policy Warns about is rolled out, and audited", image: unpinned, policy: policy(t, warnUnpinned),
			wantStatus: metav1.ConditionFalse, wantRules: "breaks deployobject.image.pinned (Warn)", wantEvent: true},
		{name: "the registry allow-list never holds a running spec back, and is audited", image: pinned, policy: policy(t, allowCorp),
			wantStatus: metav1.ConditionFalse, wantRules: "breaks deployobject.image.registry (Enforce)", wantEvent: true},
		{name: "a namespace override applies", image: unpinned, policy: policy(t, warnUnpinnedInTeams),
			namespaces: namespaces{labels: map[string]string{"team": "shop"}},
			wantStatus: metav1.ConditionFalse, wantRules: "breaks deployobject.image.pinned (Warn)", wantEvent: true},
		{name: "outside the override the rule is enforced", image: unpinned, policy: policy(t, warnUnpinnedInTeams),
			namespaces:   namespaces{labels: map[string]string{"team": "other"}},
			wantEnforced: []string{"spec.image"}, wantStatus: metav1.ConditionFalse, wantRules: "breaks deployobject.image.pinned (Enforce)"},
		{name: "a namespace an override needs that cannot be read is an error, not a guess", image: unpinned, policy: policy(t, warnUnpinnedInTeams),
			namespaces: namespaces{err: errors.New("namespaces is forbidden")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			g := Guard{Policy: tt.policy, Namespaces: tt.namespaces, Recorder: rec}
			obj := deployObject(tt.image)
			stored := obj.DeepCopy()

			desired, enforced, err := Check(ctx, g, obj, webhooks.DeployObject)
			if tt.wantErr {
				if err == nil {
					t.Fatal("Check() succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			var fields []string
			for _, e := range enforced {
				fields = append(fields, e.Field)
			}
			if !reflect.DeepEqual(fields, tt.wantEnforced) {
				t.Errorf("enforced violations on %q, want %q (%v)", fields, tt.wantEnforced, enforced)
			}
			if ptr.Deref(desired.Spec.Replicas, 0) != appv1.DefaultReplicas || obj.Spec.Replicas != nil {
				t.Errorf("desired.spec.replicas = %v, stored %v: want the default on the copy only", desired.Spec.Replicas, obj.Spec.Replicas)
			}
			c := meta.FindStatusCondition(obj.Status.Conditions, conditions.Compliant)
			obj.Status.Conditions = nil
			if !reflect.DeepEqual(obj, stored) {
				t.Errorf("Check changed the object beyond its Compliant condition:\n%+v\nwant\n%+v", obj, stored)
			}
			if c == nil {
				t.Fatal("no Compliant condition")
			}
			if c.Status != tt.wantStatus || !strings.HasPrefix(c.Message, tt.wantRules) || c.ObservedGeneration != 3 {
				t.Errorf("Compliant = %s %q at generation %d, want %s %q… at 3", c.Status, c.Message, c.ObservedGeneration, tt.wantStatus, tt.wantRules)
			}
			events := drain(rec)
			if tt.wantEvent != (len(events) == 1) || len(events) > 1 {
				t.Errorf("events = %q, want a PolicyViolation Event: %t", events, tt.wantEvent)
			}
			if tt.wantEvent && len(events) == 1 && events[0] != "Warning PolicyViolation the spec "+tt.wantRules {
				t.Errorf("event = %q, want %q", events[0], "Warning PolicyViolation the spec "+tt.wantRules)
			}
		})
	}
}

// TestCheckRecordsAnEventOnlyWhenTheBrokenRulesChange checks that re-checking an object whose
// broken rules are the same records nothing, and that other rules are news.
func TestCheckRecordsAnEventOnlyWhenTheBrokenRulesChange(t *testing.T) {
	ctx := context.Background()
	rec := events.NewFakeRecorder(10)
	g := Guard{Recorder: rec, Policy: policy(t, policyv1.AdmissionPolicySpec{
		AllowedRegistries: []string{"registry.corp.example"},
		Rules:             []policyv1.RulePolicy{{ID: string(webhooks.DeployObjectImagePinned), Action: policyv1.Audit}},
	})}
	obj := deployObject(pinned)
	check := func() {
		t.Helper()
		if _, _, err := Check(ctx, g, obj, webhooks.DeployObject); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if got := drain(rec); len(got) != 1 {
		t.Fatalf("first audit: events = %q, want one", got)
	}
	obj.Generation++
	check()
	if got := drain(rec); len(got) != 0 {
		t.Errorf("same rules broken at the next generation: events = %q, want none", got)
	}
	obj.Spec.Image = unpinned
	check()
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], string(webhooks.DeployObjectImagePinned)+" (Audit)") {
		t.Errorf("another rule broken: events = %q, want one naming %s (Audit)", got, webhooks.DeployObjectImagePinned)
	}
}

// countingNamespaces counts the lookups of namespace labels.
type countingNamespaces struct {
	namespaces
	reads *int
}

func (n countingNamespaces) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	*n.reads++
	return n.namespaces.NamespaceLabels(ctx, name)
}

// TestCheckJudgesOnce checks that one Check runs the kind's rules once and reads the namespace's
// labels once, for a spec that breaks a rule held back (pinned), an AdmissionOnly one (registry)
// and a warning, under a policy whose override selects namespaces.
func TestCheckJudgesOnce(t *testing.T) {
	validations, reads := 0, 0
	kind := webhooks.DeployObject
	validate := kind.Validate
	kind.Validate = func(old, obj *appv1.DeployObject, p *webhooks.Policy) (field.ErrorList, []webhooks.Warning) {
		validations++
		return validate(old, obj, p)
	}
	g := Guard{Recorder: events.NewFakeRecorder(10), Namespaces: countingNamespaces{namespaces{labels: map[string]string{"team": "shop"}}, &reads},
		Policy: policy(t, policyv1.AdmissionPolicySpec{
			AllowedRegistries: []string{"registry.corp.example"},
			Rules: []policyv1.RulePolicy{{ID: string(webhooks.DeployObjectEnvDuplicate), Action: policyv1.Warn,
				Namespaces: []policyv1.NamespaceAction{{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}, Action: policyv1.Audit}}}},
		})}
	obj := deployObject(unpinned)
	obj.Spec.Env = []corev1.EnvVar{{Name: "A"}, {Name: "A"}}

	_, heldBack, err := Check(context.Background(), g, obj, kind)
	if err != nil {
		t.Fatal(err)
	}
	if validations != 1 || reads != 1 {
		t.Errorf("one Check validated %d times and read the namespace %d times, want once each", validations, reads)
	}
	if len(heldBack) != 1 || heldBack[0].Origin != string(webhooks.DeployObjectImagePinned) {
		t.Errorf("held back by %v, want deployobject.image.pinned alone", heldBack)
	}
	c := meta.FindStatusCondition(obj.Status.Conditions, conditions.Compliant)
	want := "breaks deployobject.image.pinned (Enforce), deployobject.image.registry (Enforce), deployobject.env.duplicate (Audit): "
	if c == nil || !strings.HasPrefix(c.Message, want) {
		t.Errorf("Compliant = %v, want a message starting %q", c, want)
	}
}

func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
