package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

// series are the series of the metric name whose labels include labels, in the registry the
// Manager serves.
func series(name string, labels map[string]string) []*dto.Metric {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var found []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if labelValue(m, k) != v {
					continue metric
				}
			}
			found = append(found, m)
		}
	}
	return found
}

// counterValue is the value of the counter name with the labels given (its first series with
// them), 0 when absent.
func counterValue(name string, labels map[string]string) float64 {
	for _, m := range series(name, labels) {
		return m.GetCounter().GetValue()
	}
	return 0
}

// gaugeSum is the sum of the gauge name's series with the labels given.
func gaugeSum(name string, labels map[string]string) (sum float64) {
	for _, m := range series(name, labels) {
		sum += m.GetGauge().GetValue()
	}
	return sum
}

// awaitControllerIdle waits until the controller named controller has nothing queued and nothing
// in hand: a spec that made many objects for it calls it as it ends, so that the next spec's
// objects do not wait behind them. It waits for as long as a few hundred reconciles may take on a
// loaded machine.
func awaitControllerIdle(ctx SpecContext, controller string) {
	Eventually(func() float64 {
		return gaugeSum("workqueue_depth", map[string]string{"name": controller}) +
			gaugeSum("controller_runtime_active_workers", map[string]string{"controller": controller})
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(BeZero(), "the %s controller's queue and workers", controller)
}

// dashboardMetric is a metric name in a PromQL expression of ours or controller-runtime's.
var dashboardMetric = regexp.MustCompile(`\b(?:webhook_operator|controller_runtime)_[a-z_]+\b`)

// selectedMetric is the metric name of a vector selector with label matchers, name{...}, as every
// selector of the alerts is written.
var selectedMetric = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)

// managerMetric is a metric name the manager serves itself: ours, controller-runtime's, and
// controller-runtime's certwatcher's.
var managerMetric = regexp.MustCompile(`^(?:webhook_operator|controller_runtime|certwatcher)_`)

// notServedByTheManager are the metrics the alerts read from others, which the manager does not
// serve: Prometheus's own up of the scrape, kube-state-metrics' readiness of the Deployment, and
// kube-apiserver's record of its calls to the webhooks and of its conversions (which the
// conversion specs find in kube-apiserver's metrics).
var notServedByTheManager = map[string]bool{
	"up":                                    true,
	"kube_deployment_status_replicas_ready": true,
	"kube_deployment_spec_replicas":         true,
	"apiserver_admission_webhook_rejection_count":             true,
	"apiserver_admission_webhook_request_total":               true,
	"apiserver_admission_webhook_fail_open_count":             true,
	"apiserver_crd_conversion_webhook_duration_seconds_count": true,
}

var _ = Describe("The admission metrics", func() {
	It("count each refusal by rule and decision, and hold every metric the Grafana dashboard and the alerts read", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		denied := map[string]string{"kind": "Welcome", "rule": "welcome.port.range", "action": "denied"}
		warned := map[string]string{"kind": "Welcome", "rule": "welcome.password.plaintext", "action": "warned"}
		refusals := map[string]string{"kind": "Welcome", "operation": "CREATE", "decision": "denied"}
		before := []float64{counterValue("webhook_operator_rule_results_total", denied),
			counterValue("webhook_operator_rule_results_total", warned),
			counterValue("webhook_operator_admission_decisions_total", refusals)}

		err := k8s.Create(ctx, withPassword(newWelcome(ns, "bad-port", authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)}), "p"))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(k8s.Create(ctx, withPassword(newWelcome(ns, "warned", authv1.WelcomeSpec{Name: "Ada",
			ServiceType: corev1.ServiceTypeClusterIP}), "p"))).To(Succeed())

		after := []float64{counterValue("webhook_operator_rule_results_total", denied),
			counterValue("webhook_operator_rule_results_total", warned),
			counterValue("webhook_operator_admission_decisions_total", refusals)}
		// At least, not exactly: the API server may admit a request more than once.
		Expect(after[0]).To(BeNumerically(">=", before[0]+1), "welcome.port.range denied")
		Expect(after[1]).To(BeNumerically(">=", before[1]+2), "welcome.password.plaintext warned, refused or not")
		Expect(after[2]).To(BeNumerically(">=", before[2]+1), "Welcome creates denied")

		By("reading the dashboard's queries")
		root, err := testenv.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(filepath.Join(root, "config", "grafana", "webhook-operator.json"))
		Expect(err).NotTo(HaveOccurred())
		var dashboard struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		Expect(json.Unmarshal(data, &dashboard)).To(Succeed())
		Expect(dashboard.Panels).NotTo(BeEmpty())

		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		served := map[string]bool{}
		for _, f := range families {
			served[f.GetName()] = true
		}
		read := 0
		for _, p := range dashboard.Panels {
			Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
			for _, t := range p.Targets {
				names := dashboardMetric.FindAllString(t.Expr, -1)
				Expect(names).NotTo(BeEmpty(), "panel %q reads no metric of ours: %s", p.Title, t.Expr)
				for _, name := range names {
					family := strings.TrimSuffix(name, "_bucket")
					Expect(served).To(HaveKey(family), "panel %q reads %s, which the manager does not serve", p.Title, name)
					read++
				}
			}
		}
		AddReportEntry("dashboard queries checked against the served metrics", read)

		By("reading the alerts' expressions")
		data, err = os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var rule struct {
			Spec struct {
				Groups []struct {
					Rules []struct {
						Alert string `json:"alert"`
						Expr  string `json:"expr"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"spec"`
		}
		Expect(yaml.Unmarshal(data, &rule)).To(Succeed())
		Expect(rule.Spec.Groups).NotTo(BeEmpty())
		read = 0
		for _, g := range rule.Spec.Groups {
			for _, r := range g.Rules {
				matches := selectedMetric.FindAllStringSubmatch(r.Expr, -1)
				Expect(matches).NotTo(BeEmpty(), "alert %s reads no metric: %s", r.Alert, r.Expr)
				for _, m := range matches {
					name := m[1]
					if notServedByTheManager[name] {
						continue
					}
					Expect(name).To(MatchRegexp(managerMetric.String()),
						"alert %s reads %s, neither the manager's nor one of notServedByTheManager", r.Alert, name)
					family := strings.TrimSuffix(name, "_bucket")
					Expect(served).To(HaveKey(family), "alert %s reads %s, which the manager does not serve", r.Alert, name)
					read++
				}
			}
		}
		AddReportEntry("alert expressions' metrics checked against the served metrics", read)
	})
})

var _ = Describe("A refusal", func() {
	It("is recorded as a Warning Event in the object's namespace, a repeat in the Event's series, and a dry run not at all", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		bad := func(name string) *authv1.Welcome {
			return newWelcome(ns, name, authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)})
		}
		err := k8s.Create(ctx, bad("dry"), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		for range 2 {
			err := k8s.Create(ctx, bad("refused"))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		}

		var refusal eventsv1.Event
		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var found []eventsv1.Event
			for _, e := range list.Items {
				if e.Reason == conditions.EventReasonAdmissionRefused {
					found = append(found, e)
				}
			}
			g.Expect(found).To(HaveLen(1), "one Event for the refused Welcome, none for the dry run")
			refusal = found[0]
			g.Expect(refusal.Series).NotTo(BeNil(), "the repeated refusal is in the Event's series")
			g.Expect(refusal.Series.Count).To(BeNumerically(">=", 2))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(refusal.Type).To(Equal(corev1.EventTypeWarning))
		Expect(refusal.Action).To(Equal("Create"))
		Expect(refusal.Regarding).To(MatchFields(IgnoreExtras, Fields{
			"Kind": Equal("Welcome"), "APIVersion": Equal("auth.seedlabs.dev/v1"), "Namespace": Equal(ns), "Name": Equal("refused"),
		}))
		Expect(refusal.Note).To(Equal("create refused: spec.port: Invalid value: 0: must be between 1 and 65535 (rule welcome.port.range)"))
	})
})
