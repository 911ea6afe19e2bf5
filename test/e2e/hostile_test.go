//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// The namespaces of the hostile-load spec: the tenant's, who attacks admission, and a neighbour's,
// another user of the cluster whose admissions must go on as usual.
const (
	tenantNamespace    = "e2e-tenant"
	neighbourNamespace = "e2e-neighbour"
)

// The hostile load. The neighbour sends 5 requests a second, a minute before the attack and a
// minute during it; the tenant sends its worst objects 3 times a second; a pod of the tenant keeps
// 100 connections to the webhook port, each stalled in the middle of a 7 MiB body.
const (
	neighbourInterval  = 200 * time.Millisecond
	neighbourPhase     = 300 // requests: a minute at neighbourInterval
	maxNeighbourFlight = 20
	tenantInterval     = 333 * time.Millisecond
	stalledConnections = 100
	stalledBodyBytes   = 7 << 20
)

var _ = Describe("Admission under a hostile tenant and a pod stalling connections to the webhook port", Ordered, func() {
	var rec *podRecorder

	// The default install, without mutual TLS: there any pod can reach the webhook port, and the
	// server's read deadline and its bounds on the bodies it reads at once are all that protect it.
	// (With config/webhook-client-ca, the same pod is refused 403 before its body: see the specs of
	// make deploy.)
	BeforeAll(func(ctx SpecContext) {
		rec = recordManagers("managers-hostile")
		deployWithNamespace(ctx, tenantNamespace, false)
		Expect(k8s.Create(ctx, restrictedNamespace(neighbourNamespace))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: neighbourNamespace}}))).To(Succeed())
		})
	}, NodeTimeout(4*time.Minute))

	It("answers another user's admissions as usual, restarts no replica and stays within the memory limit, while a tenant sends the worst objects and a pod stalls 100 connections to the webhook port", func(ctx SpecContext) {
		pods := waitManagerReady(ctx, time.Minute)
		exitsBefore := len(rec.exits())
		tenant := impersonating(ctx, tenantNamespace, "e2e-tenant", "edit")
		neighbour := impersonating(ctx, neighbourNamespace, "e2e-neighbour", "edit")
		// kube-controller-manager aggregates the operator's roles into edit a moment after the CRDs
		// are installed.
		Eventually(func(ctx context.Context) error {
			for _, r := range neighbourRequests {
				if failure := r.send(ctx, neighbour, 0); failure != "" {
					return fmt.Errorf("%s", failure)
				}
			}
			return nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the neighbour's requests, as edit allows them")

		// Each worst object alone, before any load, sent by the tenant with kubectl create, as a
		// user would: what it costs the API server and the webhooks, and what kubectl prints of
		// the refusal, at most webhooks.MaxListed causes and one counting the rest.
		var alone []string
		for _, w := range worstObjects {
			took, causes := createWithKubectl(ctx, "e2e-tenant", w)
			alone = append(alone, fmt.Sprintf("%s, %d KiB: kubectl create refused it in %s, printing %d causes",
				w.what, w.bytes>>10, took.Round(time.Millisecond), causes))
		}
		AddReportEntry("hostile: the tenant's worst objects, each alone, by kubectl create", strings.Join(alone, "\n"))

		token := metricsReaderToken(ctx, neighbourNamespace)
		var refusedBefore map[string]float64
		Eventually(func(g Gomega) { refusedBefore = refusedCalls(scrapeManagers(ctx, g, token)) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		memory := watchManagerMemory(ctx, pods)

		By("measuring the neighbour's admissions for a minute before the attack")
		stream := startNeighbourStream(ctx, neighbour)
		Eventually(stream.sent).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeNumerically(">=", neighbourPhase), "the baseline's requests")

		By("stalling 100 connections to the webhook port from a pod of the tenant, each in the middle of a 7 MiB body")
		stream.enter(phaseStarting)
		stall := callerPod(tenantNamespace, "stall", corev1.RestartPolicyAlways, map[string]string{
			"MODE": "stall", "TARGET": webhookTarget(ctx), "WEBHOOK_PATH": welcomeValidatePath + "?timeout=30s",
			"CONNECTIONS": strconv.Itoa(stalledConnections), "CONTENT_LENGTH": strconv.Itoa(stalledBodyBytes),
			"SEND": strconv.Itoa(64 << 10), "REPORT_SECONDS": "5",
		})
		Expect(tenant.Create(ctx, stall)).To(Succeed(), "the tenant runs a pod")
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, stall))).To(Succeed()) })
		Eventually(func(g Gomega) {
			logs, err := podLogs(ctx, stall)
			g.Expect(err).NotTo(HaveOccurred())
			report, found := lastStallReport(logs)
			g.Expect(found).To(BeTrue(), "the stall pod reported nothing yet")
			g.Expect(report.Opened).To(BeNumerically(">=", stalledConnections))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the stall pod opened its connections")

		By("sending the tenant's worst objects, 3 a second, while the neighbour's admissions are measured for a minute")
		attack := startTenantAttack(ctx, tenant)
		attackStart := stream.enter(phaseAttack)
		Eventually(stream.sent).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeNumerically(">=", attackStart+neighbourPhase), "the attack's requests")
		attackStats := attack.stop()
		results := stream.stop()
		stallLogs, err := podLogs(ctx, stall)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Delete(ctx, stall)).To(Succeed())
		peaks := memory.stop()
		var refusedAfter map[string]float64
		Eventually(func(g Gomega) { refusedAfter = refusedCalls(scrapeManagers(ctx, g, token)) }).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		baseline, during := results.summary(phaseBaseline), results.summary(phaseAttack)
		AddReportEntry("hostile: the neighbour's admissions before the attack", baseline.String())
		AddReportEntry("hostile: the neighbour's admissions during the attack", during.String())
		AddReportEntry("hostile: the tenant's worst objects", attackStats.String())
		stallReport, found := lastStallReport(stallLogs)
		AddReportEntry("hostile: the stall pod's calls of the webhook port", fmt.Sprintf("%+v", stallReport))
		AddReportEntry("hostile: webhook_operator_webhook_calls_refused_total, summed over the replicas (no series: none refused)",
			fmt.Sprintf("before %v, after %v", refusedBefore, refusedAfter))
		AddReportEntry("hostile: the managers' memory", peaks.String())
		_ = os.WriteFile(filepath.Join(kube.LogDir, "hostile-stall.log"), []byte(stallLogs), 0o644)

		Expect(results.failures).To(BeEmpty(), "the neighbour's admissions that failed")
		Expect(results.skipped).To(BeZero(), "the neighbour's requests not sent because %d were awaiting their answers", maxNeighbourFlight)
		Expect(baseline.n).To(Equal(baseline.sent), "the baseline's answers")
		Expect(baseline.n).To(BeNumerically(">=", neighbourPhase), "the baseline's answers")
		Expect(during.n).To(Equal(during.sent), "the answers during the attack")
		Expect(during.n).To(BeNumerically(">=", neighbourPhase), "the answers during the attack")
		Expect(attackStats.failures).To(BeEmpty(), "the tenant's worst objects not refused with a 422")
		Expect(attackStats.refused).To(BeNumerically(">=", len(worstObjects)), "the tenant's worst objects refused")

		// Every stalled call reached the server and was ended by it: the body's read deadline
		// runs from the request's start, so the calls queued behind the pod's share of bodies are
		// cut as soon as their turn comes; none outlived the longest deadline a request may ask
		// for.
		Expect(found).To(BeTrue(), "the stall pod's log:\n%s", stallLogs)
		Expect(stallReport.Opened).To(BeNumerically(">=", stalledConnections))
		Expect(stallReport.Opened-stallReport.Open).To(BeNumerically(">=", stalledConnections), "stalled calls the server ended")
		Expect(stallReport.LongestSeconds).To(BeNumerically("<", 35), "no call outlived the longest deadline the server gives one (30 s), and a little more")

		Expect(peaks.exceeded()).To(BeEmpty(), "managers past their memory limit")
		after := waitManagerReady(ctx, time.Minute)
		for _, pod := range after {
			Expect(slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.UID == pod.UID })).To(BeTrue(), "pod %s is new", pod.Name)
			Expect(restartCount(&pod)).To(Equal(restartCount(&pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.UID == pod.UID })])),
				"the manager of pod %s restarted", pod.Name)
		}
		expectNoExits(rec, exitsBefore)
	}, SpecTimeout(8*time.Minute))
})

// neighbourRequest is one of the neighbour's requests: a dry-run create, valid or not, which the
// webhooks answer as they always do.
type neighbourRequest struct {
	what string
	// object is the object of the i-th request.
	object func(i int) client.Object
	// check says what went wrong with the answer, or "".
	check func(obj client.Object, err error) string
}

// send makes the request as c and says what went wrong, or "".
func (r neighbourRequest) send(ctx context.Context, c client.Client, i int) string {
	obj := r.object(i)
	err := c.Create(ctx, obj, client.DryRunAll)
	if problem := r.check(obj, err); problem != "" {
		return r.what + ": " + problem
	}
	return ""
}

var neighbourRequests = []neighbourRequest{
	{what: "valid Welcome",
		object: func(i int) client.Object {
			return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: neighbourNamespace, Name: "valid-" + strconv.Itoa(i)},
				Spec: authv1.WelcomeSpec{Name: "Neighbour", Image: cfg.welcome}}
		},
		check: func(obj client.Object, err error) string {
			switch {
			case err != nil:
				return fmt.Sprintf("refused: %v", err)
			case obj.(*authv1.Welcome).Spec.Replicas == nil:
				return "not defaulted by the mutating webhook"
			}
			return ""
		}},
	{what: "invalid Welcome",
		object: func(i int) client.Object {
			return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: neighbourNamespace, Name: "invalid-" + strconv.Itoa(i)},
				Spec: authv1.WelcomeSpec{Name: "Neighbour", Port: ptr.To[int32](70000)}}
		},
		check: refusedBy("welcome.port.range")},
	{what: "valid DeployObject",
		object: func(i int) client.Object {
			return &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Namespace: neighbourNamespace, Name: "valid-" + strconv.Itoa(i)},
				Spec: appv1.DeployObjectSpec{Image: cfg.echo + ":v1", Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
		},
		check: func(obj client.Object, err error) string {
			switch {
			case err != nil:
				return fmt.Sprintf("refused: %v", err)
			case obj.(*appv1.DeployObject).Spec.Ports[0].TargetPort.IntValue() == 0:
				return "the port's targetPort not defaulted by the mutating webhook"
			}
			return ""
		}},
	{what: "invalid DeployObject",
		object: func(i int) client.Object {
			return &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Namespace: neighbourNamespace, Name: "invalid-" + strconv.Itoa(i)},
				Spec: appv1.DeployObjectSpec{Image: "nginx:latest", Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
		},
		check: refusedBy("deployobject.image.pinned")},
}

// refusedBy checks that a request was refused with the webhook's 422 naming rule.
func refusedBy(rule string) func(client.Object, error) string {
	return func(_ client.Object, err error) string {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "(rule "+rule+")") {
			return fmt.Sprintf("want the webhook's 422 naming rule %s, got %v", rule, err)
		}
		return ""
	}
}

// The phases of the neighbour's stream.
const (
	phaseBaseline = "baseline"
	// phaseStarting is while the attack starts: its requests are held to the same answers, and
	// counted in neither phase's latencies.
	phaseStarting = "starting"
	phaseAttack   = "attack"
)

// neighbourStream sends the neighbour's requests at a steady pace, each in turn, whatever the
// answers' pace (at most maxNeighbourFlight at once), and records each one's latency by phase.
type neighbourStream struct {
	mu        sync.Mutex
	phase     string
	requests  int
	sentIn    map[string]int
	latencies map[string][]time.Duration
	failures  []string
	skipped   int

	// stopSending ends the pace; the requests sent are answered.
	stopSending context.CancelFunc
	done        chan struct{}
}

func startNeighbourStream(ctx context.Context, c client.Client) *neighbourStream {
	requestCtx := context.WithoutCancel(ctx)
	sending, stopSending := context.WithCancel(requestCtx)
	s := &neighbourStream{phase: phaseBaseline, sentIn: map[string]int{}, latencies: map[string][]time.Duration{},
		stopSending: stopSending, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(s.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		inFlight := make(chan struct{}, maxNeighbourFlight)
		ticker := time.NewTicker(neighbourInterval)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-sending.Done():
				return
			case <-ticker.C:
			}
			select {
			case inFlight <- struct{}{}:
			default:
				s.mu.Lock()
				s.skipped++
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			phase := s.phase
			s.requests++
			s.sentIn[phase]++
			s.mu.Unlock()
			wg.Go(func() {
				defer func() { <-inFlight }()
				r := neighbourRequests[i%len(neighbourRequests)]
				start := time.Now()
				problem := r.send(requestCtx, c, i)
				took := time.Since(start)
				s.mu.Lock()
				defer s.mu.Unlock()
				if problem != "" {
					s.failures = append(s.failures, fmt.Sprintf("%s %s (%s, after %s)", start.Format("15:04:05.000"), problem, phase, took.Round(time.Millisecond)))
					_, _ = fmt.Fprintln(GinkgoWriter, "neighbour's request failed:", s.failures[len(s.failures)-1])
					return
				}
				if took > 500*time.Millisecond {
					_, _ = fmt.Fprintf(GinkgoWriter, "neighbour's %s at %s answered after %s (%s)\n", r.what, start.Format("15:04:05.000"), took.Round(time.Millisecond), phase)
				}
				s.latencies[phase] = append(s.latencies[phase], took)
			})
		}
	}()
	DeferCleanup(func() { s.stop() })
	return s
}

// sent counts the requests sent so far.
func (s *neighbourStream) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// enter starts phase with the next request, and returns how many were sent before it.
func (s *neighbourStream) enter(phase string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase = phase
	return s.requests
}

// neighbourResults are the answers of a stopped neighbourStream.
type neighbourResults struct {
	sentIn    map[string]int
	latencies map[string][]time.Duration
	failures  []string
	skipped   int
}

// stop stops sending, and waits until every request sent is answered.
func (s *neighbourStream) stop() neighbourResults {
	s.stopSending()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return neighbourResults{sentIn: s.sentIn, latencies: s.latencies, failures: s.failures, skipped: s.skipped}
}

func (r neighbourResults) summary(phase string) latencySummary {
	summary := summarize(r.latencies[phase])
	summary.sent = r.sentIn[phase]
	return summary
}

// latencySummary is the distribution of the latencies of answered requests.
type latencySummary struct {
	// sent counts the requests, n those answered as expected.
	sent, n       int
	p50, p99, max time.Duration
}

func summarize(latencies []time.Duration) latencySummary {
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	s := latencySummary{n: len(sorted)}
	if len(sorted) > 0 {
		s.p50, s.p99, s.max = percentile(sorted, 0.50), percentile(sorted, 0.99), sorted[len(sorted)-1]
	}
	return s
}

// percentile is the p-th quantile of sorted, by the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func (s latencySummary) String() string {
	return fmt.Sprintf("%d of %d answered as expected: p50 %s, p99 %s, max %s", s.n, s.sent,
		s.p50.Round(100*time.Microsecond), s.p99.Round(100*time.Microsecond), s.max.Round(100*time.Microsecond))
}

// worstObject is one of the costliest objects a tenant can send admission (see webhooks'
// BenchmarkWorstRequests): each is refused with a 422, by a webhook's rules or by the CRD's
// schema before any webhook.
type worstObject struct {
	what string
	obj  *unstructured.Unstructured
	// bytes is the size of its JSON.
	bytes int
}

// worstObjects are built once: the largest is 2.8 MiB, within kube-apiserver's 3 MiB limit on a
// request.
var worstObjects = func() []worstObject {
	repeated := func(n int, item func(i int) string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = item(i)
		}
		return strings.Join(items, ",")
	}
	deployObject := func(name, spec string) string {
		return `{"apiVersion":"app.seedlabs.dev/v1","kind":"DeployObject","metadata":{"name":"` + name + `","namespace":"` + tenantNamespace + `"},` +
			`"spec":{"image":"registry.local/app:v1","replicas":1,` + spec + `}}`
	}
	welcome := func(name, spec string) string {
		return `{"apiVersion":"auth.seedlabs.dev/v1alpha1","kind":"Welcome","metadata":{"name":"` + name + `","namespace":"` + tenantNamespace + `"},` +
			`"spec":{"name":"n",` + spec + `}}`
	}
	cases := []struct{ what, json string }{
		{"DeployObject: 1000 env variables named \"=\" (validating webhook)",
			deployObject("worst-env", `"env":[`+repeated(1000, func(int) string { return `{"name":"="}` })+`]`)},
		{"DeployObject: 100 ports of 63-character names, the same port and no targetPort (mutating and validating webhooks)",
			deployObject("worst-ports", `"ports":[`+repeated(100, func(i int) string { return fmt.Sprintf(`{"name":"p%062d","port":65535}`, i) })+`]`)},
		{"Welcome: 1000 duplicate groups (validating webhook)",
			welcome("worst-groups", `"groups":[`+repeated(1000, func(int) string { return `"a"` })+`]`)},
		{"Welcome: 700 groups of 4096 characters (both webhooks)",
			welcome("worst-long-groups", `"groups":[`+repeated(700, func(i int) string { return `"` + fmt.Sprintf("%04d", i) + strings.Repeat("g", 4092) + `"` })+`]`)},
		{"Welcome: 40000 groups, past the schema's 1024",
			welcome("past-groups", `"groups":[`+repeated(40000, func(int) string { return `"a"` })+`]`)},
		{"DeployObject: 40000 ports without targetPort, past the schema's 100",
			deployObject("past-ports", `"ports":[`+repeated(40000, func(int) string { return `{"port":1}` })+`]`)},
		{"DeployObject: 20000 env variables named \"=\", past the schema's 1000",
			deployObject("past-env", `"env":[`+repeated(20000, func(int) string { return `{"name":"="}` })+`]`)},
	}
	objects := make([]worstObject, 0, len(cases))
	for _, c := range cases {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(c.json), &u.Object); err != nil {
			panic(fmt.Sprintf("%s: %v", c.what, err))
		}
		objects = append(objects, worstObject{what: c.what, obj: u, bytes: len(c.json)})
	}
	return objects
}()

// tenantAttack sends the worst objects as the tenant, one after another at tenantInterval, and
// records how each was answered.
type tenantAttack struct {
	mu        sync.Mutex
	latencies map[string][]time.Duration
	refused   int
	failures  []string

	cancel context.CancelFunc
	done   chan struct{}
}

// sendWorst sends w as the tenant and says what went wrong, or "", and how long the answer took.
func sendWorst(ctx context.Context, tenant client.Client, w worstObject) (string, time.Duration) {
	start := time.Now()
	// A refused create leaves the object as it was, so every request sends the same one.
	err := tenant.Create(ctx, w.obj)
	took := time.Since(start)
	if !apierrors.IsInvalid(err) {
		return fmt.Sprintf("%s %s: want a 422, got %v", start.Format("15:04:05.000"), w.what, truncated(err)), took
	}
	return "", took
}

// createWithKubectl creates w with kubectl as user, from a file as a user would, and returns how
// long kubectl took and the number of causes it printed: it fails the spec unless kubectl prints
// a 422 refusal of at most webhooks.MaxListed causes and one counting the rest.
func createWithKubectl(ctx context.Context, user string, w worstObject) (time.Duration, int) {
	GinkgoHelper()
	data, err := json.Marshal(w.obj)
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(GinkgoT().TempDir(), w.obj.GetName()+".json")
	Expect(os.WriteFile(file, data, 0o600)).To(Succeed())
	start := time.Now()
	_, stderr, err := kubectl(ctx, "create", "--as", user, "-f", file)
	took := time.Since(start)
	Expect(err).To(HaveOccurred(), "kubectl create accepted %s", w.what)
	Expect(stderr).To(ContainSubstring(fmt.Sprintf("%s %q is invalid: ", w.obj.GetKind(), w.obj.GetName())), "%s: kubectl printed\n%s", w.what, truncatedText(stderr))
	causes := refusalCauses(stderr)
	Expect(len(causes)).To(BeNumerically("<=", webhooks.MaxListed+1), "%s: kubectl printed\n%s", w.what, truncatedText(stderr))
	return took, len(causes)
}

func startTenantAttack(ctx context.Context, tenant client.Client) *tenantAttack {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &tenantAttack{latencies: map[string][]time.Duration{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(a.done)
		ticker := time.NewTicker(tenantInterval)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			w := worstObjects[i%len(worstObjects)]
			failure, took := sendWorst(ctx, tenant, w)
			if ctx.Err() != nil {
				return
			}
			a.mu.Lock()
			a.latencies[w.what] = append(a.latencies[w.what], took)
			if failure == "" {
				a.refused++
			} else {
				a.failures = append(a.failures, failure)
			}
			a.mu.Unlock()
		}
	}()
	DeferCleanup(func() { a.stop() })
	return a
}

// truncated is an error's message, cut short: a refusal of a big object can quote much of it.
func truncated(err error) string {
	if err == nil {
		return "<nil>"
	}
	return truncatedText(err.Error())
}

// truncatedText is msg cut to 500 bytes.
func truncatedText(msg string) string {
	if len(msg) > 500 {
		return msg[:500] + "..."
	}
	return msg
}

// tenantStats are the answers of a stopped tenantAttack.
type tenantStats struct {
	lines    []string
	refused  int
	failures []string
}

func (s tenantStats) String() string {
	return strings.Join(s.lines, "\n") + fmt.Sprintf("\n%d refused with a 422, %d not", s.refused, len(s.failures))
}

func (a *tenantAttack) stop() tenantStats {
	a.cancel()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	s := tenantStats{refused: a.refused, failures: a.failures}
	for _, w := range worstObjects {
		latencies := summarize(a.latencies[w.what])
		s.lines = append(s.lines, fmt.Sprintf("%s, %d KiB: sent %d, answered in p50 %s, max %s", w.what, w.bytes>>10, latencies.n,
			latencies.p50.Round(time.Millisecond), latencies.max.Round(time.Millisecond)))
	}
	return s
}

// memoryWatch samples the resident memory of each manager's process every second, as the kernel
// reports it in /proc/<pid>/status, the process found on the node with crictl inspect.
type memoryWatch struct {
	mu    sync.Mutex
	peaks map[string]*memoryPeak

	cancel context.CancelFunc
	done   chan struct{}
}

// memoryPeak is what a memoryWatch saw of one manager.
type memoryPeak struct {
	pid     int
	limit   int64
	samples int
	// sampled is the largest VmRSS sampled; highWater, the process's own peak (VmHWM), when last read.
	sampled, highWater int64
	err                string
}

func watchManagerMemory(ctx context.Context, pods []corev1.Pod) *memoryWatch {
	GinkgoHelper()
	w := &memoryWatch{peaks: map[string]*memoryPeak{}, done: make(chan struct{})}
	for i := range pods {
		pod := &pods[i]
		status := managerStatus(pod)
		Expect(status).NotTo(BeNil())
		out, err := kube.Crictl(ctx, "inspect", "--output=go-template", "--template={{.info.pid}}", runtimeID(status.ContainerID))
		Expect(err).NotTo(HaveOccurred())
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		Expect(err).NotTo(HaveOccurred(), "crictl inspect printed %q", out)
		limit := managerContainer(pod).Resources.Limits.Memory()
		Expect(limit.IsZero()).To(BeFalse(), "the manager of pod %s has no memory limit", pod.Name)
		w.peaks[pod.Name] = &memoryPeak{pid: pid, limit: limit.Value()}
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			w.sample()
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(func() { w.stop() })
	return w
}

func (w *memoryWatch) sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.peaks {
		rss, hwm, err := processMemory(p.pid)
		if err != nil {
			p.err = err.Error()
			continue
		}
		p.samples++
		p.sampled, p.highWater = max(p.sampled, rss), hwm
	}
}

// processMemory reads a process's VmRSS and VmHWM, in bytes.
func processMemory(pid int) (rss, hwm int64, err error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, found := strings.Cut(line, ":")
		if !found || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s", pid, line)
		}
		if name == "VmRSS" {
			rss = kib << 10
		} else {
			hwm = kib << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return rss, hwm, nil
}

// memoryPeaks are what a stopped memoryWatch saw, by pod.
type memoryPeaks map[string]memoryPeak

func (w *memoryWatch) stop() memoryPeaks {
	w.cancel()
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	peaks := memoryPeaks{}
	for name, p := range w.peaks {
		peaks[name] = *p
	}
	return peaks
}

func (m memoryPeaks) String() string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p := m[name]
		lines = append(lines, fmt.Sprintf("%s: peak RSS %d MiB sampled (%d samples), %d MiB VmHWM, limit %d MiB %s",
			name, p.sampled>>20, p.samples, p.highWater>>20, p.limit>>20, p.err))
	}
	return strings.Join(lines, "\n")
}

// exceeded lists the managers whose peak reached their limit, or whose memory could not be read.
func (m memoryPeaks) exceeded() []string {
	var over []string
	for name, p := range m {
		if p.err != "" || p.samples == 0 || p.highWater >= p.limit || p.sampled >= p.limit {
			over = append(over, fmt.Sprintf("%s: %d MiB of %d MiB %s", name, max(p.highWater, p.sampled)>>20, p.limit>>20, p.err))
		}
	}
	return over
}
