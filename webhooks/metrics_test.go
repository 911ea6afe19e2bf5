package webhooks

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
)

// TestAdmissionMetrics sends reviews to the Welcome's validating webhook, and requires each to be
// counted: its decision, and each
// rule broken once per request under what admission did.
func TestAdmissionMetrics(t *testing.T) {
	handler := testWebhooks(ImagePolicy{})[welcomeKind.validate]
	const meta = `"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"greeting","namespace":"default"}`
	rule := func(id RuleID, action string) float64 {
		return testutil.ToFloat64(ruleResults.WithLabelValues("Welcome", string(id), action))
	}
	decision := func(op, d string) float64 {
		return testutil.ToFloat64(decisions.WithLabelValues("Welcome", op, d))
	}
	type counts struct{ port, groups, password, zero, denied, allowed float64 }
	snapshot := func() counts {
		return counts{
			port: rule(WelcomePort, actionDenied), groups: rule(WelcomeGroups, actionDenied),
			password: rule(WelcomePassword, actionWarned), zero: rule(WelcomeReplicasZero, actionWarned),
			denied: decision("CREATE", "denied"), allowed: decision("CREATE", "allowed"),
		}
	}

	before := snapshot()
	// Two duplicate groups break one rule: it is counted once per request.
	admit(t, handler, welcomeRequest(admissionv1.Create,
		`{`+meta+`,"spec":{"name":"x","port":0,"password":"p","groups":["a","a","a"]}}`, ""))
	admit(t, handler, welcomeRequest(admissionv1.Create, `{`+meta+`,"spec":{"name":"x","replicas":0}}`, ""))
	after := snapshot()

	want := counts{port: 1, groups: 1, password: 1, zero: 1, denied: 1, allowed: 1}
	got := counts{
		port: after.port - before.port, groups: after.groups - before.groups,
		password: after.password - before.password, zero: after.zero - before.zero,
		denied: after.denied - before.denied, allowed: after.allowed - before.allowed,
	}
	if got != want {
		t.Errorf("counted %+v, want %+v", got, want)
	}
}
