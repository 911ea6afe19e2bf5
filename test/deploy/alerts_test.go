package deploy

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// alertsRule is the name config/prometheus gives the PrometheusRule of the alerts.
const alertsRule = "controller-manager-alerts"

// prometheusRule is a prometheus-operator PrometheusRule of alerting rules. It decodes strictly,
// so a field this test would drop from the rule file it gives promtool fails instead.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleFile `json:"spec"`
}

// ruleFile is a PrometheusRule's spec, which is also a Prometheus rule file.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string         `json:"name"`
	Rules []alertingRule `json:"rules"`
}

type alertingRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// rules are the alerting rules of every group.
func (f ruleFile) rules() []alertingRule {
	var out []alertingRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// ruleTests is what this test reads of a promtool rule test file.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			EvalTime  string `json:"eval_time"`
			ExpAlerts []struct {
				ExpLabels map[string]string `json:"exp_labels"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// runPromtool runs promtool with args; the error holds what it printed.
func runPromtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), toolPath(t, "PROMTOOL"), args...).CombinedOutput()
	return string(out), err
}

// writeRuleTests writes spec as a rule file into dir, and beside it config/prometheus's unit tests
// of it, naming it in their rule_files; it returns the path of the tests.
func writeRuleTests(t *testing.T, dir string, spec ruleFile) string {
	t.Helper()
	rules, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(moduleRoot(t), "config", "prometheus", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules_test.yaml")
	if err := os.WriteFile(path, append([]byte("rule_files:\n- rules.yaml\n"), tests...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// alertsSpec is the spec of the PrometheusRule kustomize builds from config/prometheus.
func alertsSpec(t *testing.T) ruleFile {
	t.Helper()
	m := kustomizeBuild(t, filepath.Join(moduleRoot(t), "config", "prometheus"))
	return get[prometheusRule](t, m, "PrometheusRule", alertsRule).Spec
}

// TestAlerts runs promtool on the alerts of config/prometheus: they load, every alert has unit
// tests in which it fires and in which it does not, those tests pass, and they fail when a
// threshold or a for: moves.
func TestAlerts(t *testing.T) {
	toolPath(t, "PROMTOOL")
	spec := alertsSpec(t)
	if len(spec.rules()) == 0 {
		t.Fatalf("PrometheusRule %s has no rules", alertsRule)
	}

	t.Run("promtool check rules", func(t *testing.T) {
		dir := t.TempDir()
		writeRuleTests(t, dir, spec)
		if out, err := runPromtool(t, "check", "rules", filepath.Join(dir, "rules.yaml")); err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	})

	t.Run("every alert has a case in which it fires and one in which it does not", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(moduleRoot(t), "config", "prometheus", "rules_test.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var tests ruleTests
		if err := yaml.Unmarshal(data, &tests); err != nil {
			t.Fatal(err)
		}
		if len(tests.RuleFiles) != 0 {
			t.Errorf("config/prometheus/rules_test.yaml names rule_files %v; leave them out, this test names the file it writes", tests.RuleFiles)
		}
		// An alert is its name and severity: two rules may share a name at different severities.
		fires, quiet := map[string]bool{}, map[string]bool{}
		for _, test := range tests.Tests {
			for _, c := range test.AlertRuleTest {
				firing := map[string]bool{}
				for _, a := range c.ExpAlerts {
					firing[a.ExpLabels["severity"]] = true
				}
				for _, r := range spec.rules() {
					if r.Alert != c.Alertname {
						continue
					}
					key := r.Alert + " " + r.Labels["severity"]
					fires[key] = fires[key] || firing[r.Labels["severity"]]
					quiet[key] = quiet[key] || !firing[r.Labels["severity"]]
				}
			}
		}
		for _, r := range spec.rules() {
			key := r.Alert + " " + r.Labels["severity"]
			if !fires[key] || !quiet[key] {
				t.Errorf("%s: rules_test.yaml has a case in which it fires: %t, in which it does not: %t", key, fires[key], quiet[key])
			}
		}
	})

	// The Helm chart replaces this text of the rule file with 0.8 times webhook.timeoutSeconds.
	t.Run("the latency threshold the chart rewrites is written once, in the latency alert", func(t *testing.T) {
		const threshold = " > 0.8"
		data, err := os.ReadFile(filepath.Join(moduleRoot(t), "config", "prometheus", "rules.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), threshold); n != 1 {
			t.Fatalf("config/prometheus/rules.yaml holds %q %d times, want once: the chart rewrites every one", threshold, n)
		}
		if i := strings.Index(string(data), threshold) + len(threshold); i < len(data) && (data[i] == '.' || data[i] >= '0' && data[i] <= '9') {
			t.Errorf("config/prometheus/rules.yaml holds %q followed by %q: the chart would rewrite part of a number", threshold, data[i])
		}
		for _, r := range spec.rules() {
			if r.Alert == "WebhookOperatorWebhookLatencyNearTimeout" && !strings.Contains(r.Expr, threshold) {
				t.Errorf("WebhookOperatorWebhookLatencyNearTimeout's expr does not hold %q: %s", threshold, r.Expr)
			}
		}
	})

	t.Run("promtool test rules", func(t *testing.T) {
		if out, err := runPromtool(t, "test", "rules", writeRuleTests(t, t.TempDir(), spec)); err != nil {
			t.Errorf("promtool test rules: %v\n%s", err, out)
		}
	})

	// Each change makes one alert fire where the unit tests say it must not, or not where they say
	// it must.
	for _, mutation := range []struct {
		alert, field, from, to string
	}{
		{alert: "WebhookOperatorWebhookErrors", field: "expr", from: "> 0.05", to: "> 0.2"},
		{alert: "WebhookOperatorWebhookCallsFailing", field: "expr", from: `error_type="calling_webhook_error"`, to: `error_type=~".+"`},
		{alert: "WebhookOperatorWebhookFailingOpen", field: "expr", from: "> 0", to: "> 1"},
		{alert: "WebhookOperatorWebhookFailingOpen", field: "expr", from: "offset 10m", to: "offset 1m"},
		{alert: "WebhookOperatorWebhookLatencyNearTimeout", field: "expr", from: "> 0.8", to: "> 0.9"},
		{alert: "WebhookOperatorWebhookLatencyNearTimeout", field: "expr", from: "> 0.8", to: "> 0.7"},
		{alert: "WebhookOperatorReplicasNotReady", field: "expr", from: "<", to: "<="},
		{alert: "WebhookOperatorReplicasNotReady", field: "for", from: "10m", to: "5m"},
		{alert: "WebhookOperatorDown", field: "expr", from: "== 1)", to: ")"},
		{alert: "WebhookOperatorReconcileErrors", field: "for", from: "15m", to: "10m"},
		{alert: "WebhookOperatorCRDMissing", field: "expr", from: "max by (crd)", to: "min by (crd)"},
		{alert: "WebhookOperatorCRDMissing", field: "for", from: "5m", to: "3m"},
		{alert: "WebhookOperatorServingCertificateExpiring", field: "expr", from: "< 7 * 86400", to: "< 86400"},
		{alert: "WebhookOperatorServingCertificateExpiring", field: "expr", from: "< 86400", to: "< 2 * 86400"},
	} {
		t.Run(fmt.Sprintf("promtool test rules fails when %s's %s %q becomes %q", mutation.alert, mutation.field, mutation.from, mutation.to), func(t *testing.T) {
			mutated := ruleFile{Groups: slices.Clone(spec.Groups)}
			for g := range mutated.Groups {
				mutated.Groups[g].Rules = slices.Clone(mutated.Groups[g].Rules)
			}
			changed := 0
			for g := range mutated.Groups {
				for i := range mutated.Groups[g].Rules {
					r := &mutated.Groups[g].Rules[i]
					field := map[string]*string{"expr": &r.Expr, "for": &r.For}[mutation.field]
					if r.Alert == mutation.alert && strings.Contains(*field, mutation.from) {
						*field = strings.Replace(*field, mutation.from, mutation.to, 1)
						changed++
					}
				}
			}
			if changed != 1 {
				t.Fatalf("%d rules of %s have %q in their %s, want 1", changed, mutation.alert, mutation.from, mutation.field)
			}
			out, err := runPromtool(t, "test", "rules", writeRuleTests(t, t.TempDir(), mutated))
			if err == nil {
				t.Fatalf("promtool test rules passed:\n%s", out)
			}
			if !strings.Contains(out, "alertname: "+mutation.alert+",") {
				t.Errorf("promtool test rules failed, but not on %s:\n%s", mutation.alert, out)
			}
		})
	}
}

// vectorSelector is a metric name and its label matchers, as every selector of the alerts is
// written: name{label="value", ...}.
var vectorSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)

// labelMatcher is one label matcher of a selector, its value a PromQL double-quoted string.
var labelMatcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")`)

// selectsOurs requires the pattern of a selector of alert (a regular expression a label matches
// whole) to match each of ours and not another's.
func selectsOurs(t *testing.T, alert, selector, pattern string, ours []string, another string) {
	t.Helper()
	if pattern == "" {
		t.Errorf("%s: %s selects none of %q by a pattern", alert, selector, ours)
		return
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		t.Fatalf("%s: %s: %v", alert, selector, err)
	}
	for _, name := range ours {
		if !re.MatchString(name) {
			t.Errorf("%s: %s does not select %s", alert, selector, name)
		}
	}
	if re.MatchString(another) {
		t.Errorf("%s: %s selects another operator's %s", alert, selector, another)
	}
}

// TestAlertsSelectTheInstall holds the alerts' selectors to what config/default installs, with
// config/prometheus enabled: the manager's series are the ServiceMonitor's, those of
// kube-state-metrics the Deployment's, those of kube-apiserver the webhooks'; and the latency
// alert's threshold to the webhooks' timeout.
func TestAlertsSelectTheInstall(t *testing.T) {
	m := buildWithOptionalOverlays(t)
	rule := get[prometheusRule](t, m, "PrometheusRule", namePrefix+alertsRule)
	monitor := m.get(t, "ServiceMonitor", namePrefix+"controller-manager-metrics-monitor")
	if jobLabel, _, _ := unstructuredString(monitor, "spec", "jobLabel"); jobLabel != "" {
		t.Fatalf("%s sets jobLabel %s: the job label of its series is no longer the Service's name", monitor.key(), jobLabel)
	}
	service := get[corev1.Service](t, m, "Service", metricsService)
	deployment := getManager(t, m)
	var webhooks []string
	var timeouts []int32
	for _, c := range m.ofKind("MutatingWebhookConfiguration") {
		for _, w := range decode[admissionregistrationv1.MutatingWebhookConfiguration](t, c).Webhooks {
			webhooks, timeouts = append(webhooks, w.Name), append(timeouts, *w.TimeoutSeconds)
		}
	}
	for _, c := range m.ofKind("ValidatingWebhookConfiguration") {
		for _, w := range decode[admissionregistrationv1.ValidatingWebhookConfiguration](t, c).Webhooks {
			webhooks, timeouts = append(webhooks, w.Name), append(timeouts, *w.TimeoutSeconds)
		}
	}
	if len(webhooks) == 0 {
		t.Fatal("the build holds no webhooks")
	}
	var crds []string
	for _, c := range m.ofKind("CustomResourceDefinition") {
		crds = append(crds, c.GetName())
	}
	if len(crds) == 0 {
		t.Fatal("the build holds no CRDs")
	}

	// What each source's selectors must match on; the manager's own series come through the
	// ServiceMonitor.
	scraped := map[string]string{"job": service.Name, "namespace": service.Namespace}
	for _, r := range rule.Spec.rules() {
		selectors := vectorSelector.FindAllStringSubmatch(r.Expr, -1)
		if len(selectors) == 0 {
			t.Errorf("%s reads no metric: %s", r.Alert, r.Expr)
		}
		for _, s := range selectors {
			name, matchers := s[1], map[string]string{}
			for _, lm := range labelMatcher.FindAllStringSubmatch(s[2], -1) {
				value, err := strconv.Unquote(lm[3])
				if err != nil {
					t.Fatalf("%s: %s: %v", r.Alert, lm[0], err)
				}
				matchers[lm[1]+lm[2]] = value
			}
			var want map[string]string
			switch {
			case name == "up" || strings.HasPrefix(name, "controller_runtime_") || strings.HasPrefix(name, "webhook_operator_"):
				want = scraped
			case strings.HasPrefix(name, "kube_deployment_"):
				want = map[string]string{"namespace": deployment.Namespace, "deployment": deployment.Name}
			case strings.HasPrefix(name, "apiserver_admission_webhook_"):
				selectsOurs(t, r.Alert, s[0], matchers["name=~"], webhooks, "vother.example.com")
				continue
			case strings.HasPrefix(name, "apiserver_crd_conversion_webhook_"):
				selectsOurs(t, r.Alert, s[0], matchers["crd_name=~"], crds, "others.example.com")
				continue
			default:
				t.Errorf("%s reads %s, whose source this test does not know: add it", r.Alert, name)
				continue
			}
			for label, value := range want {
				if got, ok := matchers[label+"="]; !ok || got != value {
					t.Errorf("%s: %s must match %s=%q, as config/default installs it", r.Alert, s[0], label, value)
				}
			}
		}
	}

	t.Run("the latency alert fires at 80% of the webhooks' timeout", func(t *testing.T) {
		slices.Sort(timeouts)
		if timeouts[0] != timeouts[len(timeouts)-1] {
			t.Fatalf("the webhooks' timeoutSeconds range from %d to %d: give the latency alert one threshold per webhook", timeouts[0], timeouts[len(timeouts)-1])
		}
		var latency []alertingRule
		for _, r := range rule.Spec.rules() {
			if r.Alert == "WebhookOperatorWebhookLatencyNearTimeout" {
				latency = append(latency, r)
			}
		}
		if len(latency) != 1 {
			t.Fatalf("want one WebhookOperatorWebhookLatencyNearTimeout rule, found %d", len(latency))
		}
		threshold := regexp.MustCompile(`>\s*([0-9.]+)\s*$`).FindStringSubmatch(latency[0].Expr)
		if threshold == nil {
			t.Fatalf("WebhookOperatorWebhookLatencyNearTimeout does not end in > THRESHOLD: %s", latency[0].Expr)
		}
		got, err := strconv.ParseFloat(threshold[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if want := 0.8 * float64(timeouts[0]); math.Abs(got-want) > 1e-9 {
			t.Errorf("WebhookOperatorWebhookLatencyNearTimeout fires above %gs; the webhooks' timeout is %ds, so want %gs", got, timeouts[0], want)
		}
	})
}

// TestTheServiceMonitorPresentsATokenOfItsOwn holds the ServiceMonitor of config/prometheus and of
// the chart to a token Prometheus reads from a Secret, never a file of its own pod
// (bearerTokenFile: deprecated, and refused where a ServiceMonitor may not read files): the token
// of a ServiceAccount of their own, in the monitor's namespace, bound to metrics-reader, which may
// get /metrics and nothing else, and to no other role.
func TestTheServiceMonitorPresentsATokenOfItsOwn(t *testing.T) {
	for name, build := range map[string]func(*testing.T) manifests{
		"config/default with config/prometheus": buildWithOptionalOverlays,
		"the chart": func(t *testing.T) manifests {
			return helmTemplate(t, fixtures.Namespace, "serviceMonitor.enabled=true")
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := build(t)
			monitor := m.get(t, "ServiceMonitor", namePrefix+"controller-manager-metrics-monitor")
			endpoints, _, err := unstructuredSlice(monitor, "spec", "endpoints")
			if err != nil || len(endpoints) == 0 {
				t.Fatalf("%s has no endpoints: %v", monitor.key(), err)
			}
			for i, e := range endpoints {
				endpoint, _ := e.(map[string]any)
				for _, deprecated := range []string{"bearerTokenFile", "bearerTokenSecret"} {
					if _, ok := endpoint[deprecated]; ok {
						t.Errorf("%s endpoint %d sets %s", monitor.key(), i, deprecated)
					}
				}
				authorization := decodeAs[monitorAuthorization](t, endpoint["authorization"])
				if authorization.Type != "Bearer" || authorization.Credentials.Key != "token" {
					t.Fatalf("%s endpoint %d: authorization %+v, want the Bearer token under the key token", monitor.key(), i, authorization)
				}
				secret := get[corev1.Secret](t, m, "Secret", authorization.Credentials.Name)
				account := secret.Annotations[corev1.ServiceAccountNameKey]
				if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Namespace != monitor.GetNamespace() || account == "" {
					t.Fatalf("%s is a %s in %q for the ServiceAccount %q: want a token Secret of a ServiceAccount, in %s's namespace",
						monitor.key(), secret.Type, secret.Namespace, account, monitor.key())
				}
				if sa := get[corev1.ServiceAccount](t, m, "ServiceAccount", account); sa.Namespace != secret.Namespace {
					t.Fatalf("the ServiceAccount %s is in %q, not in its token's namespace", account, sa.Namespace)
				}
				if deployment := getManager(t, m); deployment.Spec.Template.Spec.ServiceAccountName == account {
					t.Fatalf("Prometheus would present the manager's own token (%s)", account)
				}
				var roles []rbacv1.RoleRef
				for _, b := range append(m.ofKind("ClusterRoleBinding"), m.ofKind("RoleBinding")...) {
					binding := decode[rbacv1.RoleBinding](t, b) // a ClusterRoleBinding decodes alike
					for _, s := range binding.Subjects {
						if s.Kind == rbacv1.ServiceAccountKind && s.Name == account && s.Namespace == secret.Namespace {
							roles = append(roles, binding.RoleRef)
						}
					}
				}
				if len(roles) != 1 || roles[0].Kind != "ClusterRole" {
					t.Fatalf("the ServiceAccount %s is bound to %+v, want metrics-reader alone", account, roles)
				}
				role := get[rbacv1.ClusterRole](t, m, "ClusterRole", roles[0].Name)
				want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
				if !equality.Semantic.DeepEqual(role.Rules, want) {
					t.Fatalf("the ServiceAccount %s is bound to %s, whose rules are %+v: want %+v", account, role.Name, role.Rules, want)
				}
			}
		})
	}
}

// monitorAuthorization is a ServiceMonitor endpoint's authorization, as prometheus-operator reads it.
type monitorAuthorization struct {
	Type        string `json:"type"`
	Credentials struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	} `json:"credentials"`
}

// decodeAs decodes v, a part of an unstructured object, into T, refusing fields T does not have.
func decodeAs[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	data, err := json.Marshal(v)
	if err == nil {
		err = yaml.UnmarshalStrict(data, &out)
	}
	if err != nil {
		t.Fatalf("%s does not decode into %T: %v", data, out, err)
	}
	return out
}
