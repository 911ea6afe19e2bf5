package webhooks

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// Admission's own metrics, on the manager's metrics endpoint beside controller-runtime's
// controller_runtime_webhook_latency_seconds and controller_runtime_webhook_requests_total, which
// time and count every request per webhook. config/grafana shows them.
var (
	// ruleResults counts the validation requests in which a rule was broken, once per request
	// and rule, by what admission did about it.
	ruleResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhook_operator_rule_results_total",
		Help: "Validation requests in which a rule was broken, by kind, rule and action: denied (the request was refused), warned (admitted with a warning) or audited (admitted, only counted).",
	}, []string{"kind", "rule", "action"})

	// decisions counts the validation requests by their answer.
	decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webhook_operator_admission_decisions_total",
		Help: "Validation requests, by kind, operation (CREATE, UPDATE) and decision: allowed or denied.",
	}, []string{"kind", "operation", "decision"})

	// refusalEventsSuppressed counts the refusals recorded as no Event, past refusalEvents' limits.
	refusalEventsSuppressed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "webhook_operator_refusal_events_suppressed_total",
		Help: "Refusals not recorded as an Event: their namespace, or all namespaces together, recorded as many as they may, or the review named a namespace the manager does not know or an object name the API server would refuse.",
	})
)

// The actions a rule result is counted under.
const (
	actionDenied  = "denied"
	actionWarned  = "warned"
	actionAudited = "audited"
)

// malformedConversionData counts the Welcomes converted to v1alpha1 whose conversion-data
// annotation was ignored, as authv1alpha1 counts them.
var malformedConversionData = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "webhook_operator_conversion_data_malformed_total",
	Help: "Welcomes converted to auth.seedlabs.dev/v1alpha1 whose auth.seedlabs.dev/conversion-data annotation was not what a conversion writes, and was ignored: their spec.password is empty at v1alpha1.",
}, func() float64 { return float64(authv1alpha1.MalformedConversionData()) })

func init() {
	metrics.Registry.MustRegister(ruleResults, decisions, refusalEventsSuppressed, malformedConversionData)
}

// observe counts one validation request of kind: its decision, and each rule the policy's
// verdict names, once, under what admission did about it.
func observe(kind, operation string, v Judgement) {
	decision := "allowed"
	if len(v.Refused) > 0 {
		decision = "denied"
	}
	decisions.WithLabelValues(kind, operation, decision).Inc()
	for _, b := range v.Broken {
		ruleResults.WithLabelValues(kind, string(b.ID), resultOf[b.Action]).Inc()
	}
}

// resultOf is the action a rule result is counted under, by what the policy did about the rule.
var resultOf = map[policyv1.Action]string{
	policyv1.Enforce: actionDenied,
	policyv1.Warn:    actionWarned,
	policyv1.Audit:   actionAudited,
}
