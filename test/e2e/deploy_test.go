//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/test/e2e/cluster"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// samplesNamespace holds the samples; it enforces the restricted Pod Security Standard, so
// every pod the operator creates must meet it or never start.
const samplesNamespace = "e2e-samples"

var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

var _ = Describe("The operator installed with make deploy", Ordered, func() {
	var (
		// rec records how the manager's containers end, and their logs.
		rec *podRecorder
		// managers are the manager's pods, one per replica, as they were once running.
		managers []corev1.Pod
		// readyAt receives, for each manager, when its /readyz first answered 200.
		readyAt = map[string]chan time.Time{}
	)

	// A manager that dies mid-suite would show up later as webhook timeouts; say so at once.
	AfterEach(func() {
		if rec != nil {
			Expect(rec.exits()).To(BeEmpty(), "manager containers exited on their own")
		}
	})

	BeforeAll(func(ctx SpecContext) {
		rec = recordManagers("managers-deploy")
		start := time.Now()
		// The last spec removes the operator; if a failure skips it, the next container still
		// gets a cluster without the operator.
		DeferCleanup(forceUninstall)
		out, err := deployWithClientCA(ctx)
		Expect(err).NotTo(HaveOccurred(), "make deploy %s:\n%s", clientCADeployConfig, out)
		AddReportEntry("make deploy "+clientCADeployConfig, time.Since(start).Round(time.Millisecond).String())
	}, NodeTimeout(3*time.Minute))

	It("runs each of the manager's pods on the node, as a container of the image make images built", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			deployment := managerDeployment(ctx, g)
			managers = managerPods(ctx, g)
			g.Expect(managers).To(HaveLen(int(*deployment.Spec.Replicas)))
			for _, pod := range managers {
				g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
				status := managerStatus(&pod)
				g.Expect(status).NotTo(BeNil())
				g.Expect(status.State.Running).NotTo(BeNil(), "pod %s: %+v", pod.Name, status.State)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		AddReportEntry("manager replicas", len(managers))
		imageID := hostImageID(cfg.image)
		for i := range managers {
			pod := &managers[i]
			Expect(pod.Spec.NodeName).To(Equal(cluster.NodeName))
			Expect(managerContainer(pod).Image).To(Equal(cfg.image), "make deploy IMG= sets the manager's image")
			Expect(managerStatus(pod).ImageID).To(Equal(imageID), "the container runs this platform's image of the index make images wrote")
			Expect(net.ParseIP(pod.Status.PodIP).IsLoopback()).To(BeFalse())
			readyAt[pod.Name] = make(chan time.Time, 1)
			go watchReadiness(ctx, readinessURL(pod, managerContainer(pod)), readyAt[pod.Name])
		}
	}, SpecTimeout(3*time.Minute))

	It("gets its serving certificate from cert-manager, with the CA injected into both webhook configurations and the conversion webhook", func(ctx SpecContext) {
		Eventually(certificateReady).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		secret := servingSecretData(ctx)
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(secret.Data["ca.crt"]).NotTo(BeEmpty())

		Eventually(caBundles).WithContext(ctx).WithTimeout(time.Minute).Should(HaveEach(Equal(secret.Data["ca.crt"])),
			"every webhook's caBundle is the serving Secret's ca.crt")
		Expect(caBundles(ctx)).To(HaveLen(generatedWebhooks()+conversionWebhooks()),
			"one caBundle per webhook config/webhook generates, and one per conversion webhook of config/crd")

		leaf := parseCertificate(secret.Data["tls.crt"])
		Expect(leaf.DNSNames).To(ContainElement(fixtures.WebhookService + "." + fixtures.Namespace + ".svc"))
		Expect(leaf.PublicKeyAlgorithm).To(Equal(x509.ECDSA))
	}, SpecTimeout(2*time.Minute))

	It("starts each replica only once its certificate Secret exists, and turns it ready serving that certificate for the Service's name", func(ctx SpecContext) {
		secret := servingSecretData(ctx)
		bundles, err := caBundles(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, manager := range managers {
			var ready time.Time
			Eventually(readyAt[manager.Name]).WithContext(ctx).WithTimeout(time.Minute).Should(Receive(&ready))
			started := managerStatus(&manager).State.Running.StartedAt.Time
			AddReportEntry("manager ready after its container started: "+manager.Name, ready.Sub(started).Round(time.Second).String())

			Expect(secret.CreationTimestamp.Time).To(BeTemporally("<=", started),
				"kubelet starts a container only once its Secret volumes can be mounted")
			served, err := servedCertificate(manager.Status.PodIP, bundles[0])
			Expect(err).NotTo(HaveOccurred(), "the API server, trusting the injected caBundle, accepts the manager of pod %s", manager.Name)
			Expect(served.Raw).To(Equal(parseCertificate(secret.Data["tls.crt"]).Raw))
		}
	}, SpecTimeout(2*time.Minute))

	It("routes every admission webhook through the webhook Service", func(ctx SpecContext) {
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: fixtures.MutatingWebhookConfiguration}, mutating)).To(Succeed())
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: fixtures.ValidatingWebhookConfiguration}, validating)).To(Succeed())
		var configs []admissionregistrationv1.WebhookClientConfig
		for _, w := range mutating.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
		for _, w := range validating.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
		for _, c := range configs {
			Expect(c.URL).To(BeNil())
			Expect(c.Service).NotTo(BeNil())
			Expect(c.Service.Namespace).To(Equal(fixtures.Namespace))
			Expect(c.Service.Name).To(Equal(fixtures.WebhookService))
		}

		// The EndpointSlice the API server dials holds every replica's pod IP, each Ready by
		// its readiness probe.
		var ips []string
		for _, manager := range managers {
			ips = append(ips, manager.Status.PodIP)
		}
		Eventually(func(g Gomega) {
			g.Expect(readyEndpoints(ctx, g)).To(ConsistOf(ips))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: samplesNamespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		}}})).To(Succeed())
	}, SpecTimeout(time.Minute))

	// kube-apiserver presents the client certificate its AdmissionConfiguration gives it (see
	// test/e2e/cluster), signed by the CA in the ConfigMap config/webhook-client-ca mounts: every
	// admission of this install goes through that check. Anyone else who reaches the webhook port
	// from a pod is turned away before the server reads a byte of what it sends.
	It("serves only callers with a client certificate of the CA it was given: kube-apiserver, and no pod without one or with another CA's", func(ctx SpecContext) {
		deployment := managerDeployment(ctx, Default)
		Expect(managerContainer(&corev1.Pod{Spec: deployment.Spec.Template.Spec}).Args).
			To(ContainElement("--webhook-client-ca=/etc/webhook-operator/client-ca/ca.crt"), "config/webhook-client-ca sets the flag")
		Eventually(func(g Gomega) { expectAdmissionServed(ctx, g, samplesNamespace) }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "kube-apiserver, presenting its certificate, is served")
		token := metricsReaderToken(ctx, samplesNamespace)
		var before map[string]float64
		Eventually(func(g Gomega) { before = refusedCalls(scrapeManagers(ctx, g, token)) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		other, err := certs.NewCA("someone-else", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		forged, err := other.NewClientPair(pkix.Name{CommonName: "kube-apiserver-webhook-client"}, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		trusted, err := kube.WebhookClientCA.NewClientPair(pkix.Name{CommonName: "e2e-trusted-caller"}, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		calls := probeWebhookPort(ctx, samplesNamespace, map[string][2][]byte{
			"another-ca": {forged.CertPEM, forged.KeyPEM},
			"trusted":    {trusted.CertPEM, trusted.KeyPEM},
		})
		var lines []string
		for _, name := range []string{"none", "another-ca", "trusted"} {
			lines = append(lines, calls[name].String())
		}
		AddReportEntry("calls of the webhook port from a pod, each sending 1 KiB of a 1 MiB body", strings.Join(lines, "\n"))

		// The body never ends, so an answer at all says the server did not wait to read it.
		Expect(calls["none"]).To(And(HaveField("Stage", "answered"), HaveField("Status", http.StatusForbidden)),
			"a caller without a certificate is answered 403 before its body arrives: %s", calls["none"])
		Expect(calls["another-ca"]).To(And(HaveField("Stage", "handshake"), HaveField("Error", ContainSubstring("remote error: tls: bad certificate"))),
			"a certificate of another CA fails the handshake: %s", calls["another-ca"])
		// The CA's own certificate is let in, and then held to the body's read deadline.
		Expect(calls["trusted"].Status).NotTo(Equal(http.StatusForbidden), "a certificate of the CA is served: %s", calls["trusted"])
		Expect(calls["trusted"].Stage).To(BeElementOf("answered", "answer"), "%s", calls["trusted"])

		Eventually(func(g Gomega) {
			g.Expect(refusedCalls(scrapeManagers(ctx, g, token))["client_certificate"]).To(BeNumerically(">", before["client_certificate"]),
				"webhook_operator_webhook_calls_refused_total{reason=\"client_certificate\"} counts the caller without a certificate")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("applies every valid sample with kubectl, with the defaults admission promises", func(ctx SpecContext) {
		for _, path := range sampleFiles("") {
			s, err := readSample(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.kind.admit(s.obj)).To(BeEmpty(), "%s breaks the webhook's own rules", path)

			out, stderr, err := kubectl(ctx, "apply", "-n", samplesNamespace, "-f", path)
			Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s: %s", path, stderr)
			Expect(out).To(ContainSubstring("created"))

			stored := s.kind.newObject()
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: s.obj.GetName()}, stored)).To(Succeed())
			Expect(equality.Semantic.DeepEqual(s.kind.spec(stored), s.kind.spec(s.obj))).To(BeTrue(),
				"%s: stored spec\n%+v\nwant the defaulted spec\n%+v", filepath.Base(path), s.kind.spec(stored), s.kind.spec(s.obj))
		}
	}, SpecTimeout(2*time.Minute))

	It("lets whoever may edit a namespace create every kind in it, and whoever may view it read them but not create them, through the built-in roles", func(ctx SpecContext) {
		const ns = "e2e-rbac"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		var created []client.Object
		// The objects go first, and their Deployments and Services with them, then the namespace: a
		// namespace deleted under live objects refuses the controllers' writes to it.
		DeferCleanup(func(ctx SpecContext) {
			for _, obj := range created {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
			}
			Eventually(func(g Gomega, ctx context.Context) {
				for _, obj := range created {
					g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))).To(BeTrue())
				}
				for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}} {
					g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
					g.Expect(meta.LenList(list)).To(BeZero())
				}
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		}, NodeTimeout(2*time.Minute))
		editor, viewer := impersonating(ctx, ns, "e2e-editor", "edit"), impersonating(ctx, ns, "e2e-viewer", "view")

		for _, path := range sampleFiles("") {
			s, err := readSample(path)
			Expect(err).NotTo(HaveOccurred())
			obj := s.obj.DeepCopyObject().(client.Object)
			obj.SetNamespace(ns)
			// kube-controller-manager aggregates the roles into edit and view a moment after they
			// are created.
			Eventually(func(ctx context.Context) error { return editor.Create(ctx, obj.DeepCopyObject().(client.Object)) }).
				WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the editor creates %s", filepath.Base(path))
			created = append(created, obj)

			// kube-apiserver's authorizer reads the viewer's binding from its own informer, which
			// the editor's binding being seen does not wait for.
			Eventually(func(ctx context.Context) error {
				return viewer.Get(ctx, client.ObjectKeyFromObject(obj), s.kind.newObject())
			}).
				WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the viewer reads %s", filepath.Base(path))
			other := obj.DeepCopyObject().(client.Object)
			other.SetName(obj.GetName() + "-viewer")
			Expect(apierrors.IsForbidden(viewer.Create(ctx, other))).To(BeTrue(), "the viewer creates %s", filepath.Base(path))
		}
	}, SpecTimeout(2*time.Minute))

	It("refuses every invalid sample with the violations admission promises, storing nothing", func(ctx SpecContext) {
		for _, path := range sampleFiles("invalid") {
			s, err := readSample(path)
			Expect(err).NotTo(HaveOccurred())
			_, stderr, err := kubectl(ctx, "apply", "-n", samplesNamespace, "-f", path)
			Expect(err).To(HaveOccurred(), "kubectl apply -f %s was accepted", path)
			if want, ok := refusedBeforeAdmission[filepath.Base(path)]; ok {
				for _, part := range want {
					Expect(stderr).To(ContainSubstring(part), "%s", filepath.Base(path))
				}
			} else {
				Expect(refusalCauses(stderr)).To(ConsistOf(expectedRefusal(s)), "%s: kubectl printed\n%s", filepath.Base(path), stderr)
			}
			Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: s.obj.GetName()}, s.kind.newObject()))).
				To(BeTrue(), "%s was stored", path)
		}

		By("showing each refusal to the namespace's owner as a Warning Event")
		var shown string
		Eventually(func(g Gomega) {
			out, stderr, err := kubectl(ctx, "events", "-n", samplesNamespace, "--types=Warning")
			g.Expect(err).NotTo(HaveOccurred(), "kubectl events: %s", stderr)
			for _, path := range sampleFiles("invalid") {
				if _, before := refusedBeforeAdmission[filepath.Base(path)]; before {
					continue // kube-apiserver refused it before any webhook ran
				}
				s, err := readSample(path)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(out).To(MatchRegexp(`(?m)AdmissionRefused\s+(?i:%s)/%s\s+create refused: `,
					s.obj.GetObjectKind().GroupVersionKind().Kind, regexp.QuoteMeta(s.obj.GetName())), "%s", filepath.Base(path))
			}
			shown = out
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("kubectl events -n "+samplesNamespace+" --types=Warning", shown)
	}, SpecTimeout(2*time.Minute))

	// Every replica serves the webhooks, so every replica must apply the policy: each is asked
	// directly, with an AdmissionReview sent to its pod as kube-apiserver would send it.
	It("applies the AdmissionPolicy sample on every replica at once, and the default again once it is deleted", func(ctx SpecContext) {
		latest := filepath.Join(GinkgoT().TempDir(), "latest.yaml")
		Expect(os.WriteFile(latest, []byte("apiVersion: app.seedlabs.dev/v1\nkind: DeployObject\n"+
			"metadata: {name: moving}\nspec: {image: 'nginx:latest', ports: [{port: 80}]}\n"), 0o600)).To(Succeed())
		review := newReplicaReview(ctx, samplesNamespace, "moving", "nginx:latest")
		policy := filepath.Join(cfg.root, "config", "samples", "policy", "admissionpolicy.yaml")
		_, stderr, err := kubectl(ctx, "apply", "-f", policy)
		Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s: %s", policy, stderr)
		Eventually(func(g Gomega) {
			for pod, answer := range review.onEachReplica(ctx, g) {
				g.Expect(answer.Allowed).To(BeTrue(), "replica %s: %s", pod, answer.Result)
				g.Expect(answer.Warnings).To(ContainElement(And(HavePrefix(`spec.image: Invalid value: "nginx:latest"`),
					HaveSuffix("(rule deployobject.image.pinned)"))), "replica %s", pod)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "a moving tag is a warning under the policy, on every replica")
		_, stderr, err = kubectl(ctx, "apply", "--dry-run=server", "-n", samplesNamespace, "-f", latest)
		Expect(err).NotTo(HaveOccurred(), "kubectl apply --dry-run=server -f %s: %s", latest, stderr)
		Expect(stderr).To(ContainSubstring(`Warning: spec.image: Invalid value: "nginx:latest"`), "kubectl shows the warning")

		By("reporting the Warned rule on the stored object, which rolls out")
		_, stderr, err = kubectl(ctx, "apply", "-n", samplesNamespace, "-f", latest)
		Expect(err).NotTo(HaveOccurred(), "kubectl apply -f %s: %s", latest, stderr)
		Eventually(func(g Gomega) {
			d := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: "moving"}, d)).To(Succeed())
			compliant := meta.FindStatusCondition(d.Status.Conditions, conditions.Compliant)
			g.Expect(compliant).NotTo(BeNil())
			g.Expect(compliant.Message).To(HavePrefix("breaks deployobject.image.pinned (Warn): "))
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: "moving"}, &appsv1.Deployment{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		_, stderr, err = kubectl(ctx, "delete", "-n", samplesNamespace, "-f", latest, "--wait")
		Expect(err).NotTo(HaveOccurred(), "kubectl delete -f %s: %s", latest, stderr)

		_, stderr, err = kubectl(ctx, "delete", "-f", policy)
		Expect(err).NotTo(HaveOccurred(), "kubectl delete -f %s: %s", policy, stderr)
		Eventually(func(g Gomega) {
			for pod, answer := range review.onEachReplica(ctx, g) {
				g.Expect(answer.Allowed).To(BeFalse(), "replica %s", pod)
				g.Expect(answer.Result).NotTo(BeNil(), "replica %s", pod)
				g.Expect(answer.Result.Message).To(ContainSubstring("(rule deployobject.image.pinned)"), "replica %s", pod)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "a moving tag is refused again once the policy is deleted, on every replica")
		_, stderr, err = kubectl(ctx, "apply", "--dry-run=server", "-n", samplesNamespace, "-f", latest)
		Expect(err).To(HaveOccurred(), "kubectl apply --dry-run=server -f %s was admitted", latest)
		Expect(stderr).To(ContainSubstring("(rule deployobject.image.pinned)"))
	}, SpecTimeout(3*time.Minute))

	// The kubectl plugin runs the same admission offline: on PATH, `kubectl webhook-operator lint`
	// must admit what the cluster admits and refuse what it refuses, in the same words.

	It("lints every sample with kubectl webhook-operator as the cluster admits it", func(ctx SpecContext) {
		for _, path := range sampleFiles("") {
			out, stderr, err := kubectlPlugin(ctx, "webhook-operator", "lint", "-f", path)
			Expect(err).NotTo(HaveOccurred(), "kubectl webhook-operator lint -f %s: %s", path, stderr)
			Expect(out).To(HaveSuffix(" valid\n"), "%s", path)
		}
		for _, path := range sampleFiles("invalid") {
			_, applied, err := kubectl(ctx, "apply", "--dry-run=server", "-n", samplesNamespace, "-f", path)
			Expect(err).To(HaveOccurred(), "kubectl apply -f %s was accepted", path)
			_, linted, err := kubectlPlugin(ctx, "webhook-operator", "lint", "-f", path)
			var exit *exec.ExitError
			Expect(errors.As(err, &exit)).To(BeTrue(), "kubectl webhook-operator lint -f %s: %v", path, err)
			Expect(exit.ExitCode()).To(Equal(1), "%s", path)
			lintedMessage, found := strings.CutPrefix(linted, path+": ")
			Expect(found).To(BeTrue(), "lint printed %s", linted)
			Expect(lintedMessage).To(Equal(applied), "%s: lint's words are not kubectl's", filepath.Base(path))
		}
	}, SpecTimeout(2*time.Minute))

	// The refusals of the invalid samples are counted by rule on the replicas that answered them,
	// and every metric the Grafana dashboard queries is served, to a caller bound to metrics-reader.
	It("serves the admission metrics the Grafana dashboard reads over the secured metrics endpoint", func(ctx SpecContext) {
		token := metricsReaderToken(ctx, samplesNamespace)

		data, err := os.ReadFile(filepath.Join(cfg.root, "config", "grafana", "webhook-operator.json"))
		Expect(err).NotTo(HaveOccurred())
		queried := regexp.MustCompile(`\b(?:webhook_operator|controller_runtime)_[a-z_]+\b`).FindAllString(string(data), -1)
		Expect(queried).NotTo(BeEmpty())

		Eventually(func(g Gomega) {
			var all strings.Builder
			for _, metrics := range scrapeManagers(ctx, g, token) {
				all.WriteString(metrics)
			}
			served := all.String()
			g.Expect(served).To(MatchRegexp(`webhook_operator_rule_results_total\{action="denied",kind="Welcome",rule="welcome.port.range"\} [1-9]`))
			g.Expect(served).To(MatchRegexp(`webhook_operator_admission_decisions_total\{decision="denied",kind="DeployObject",operation="CREATE"\} [1-9]`))
			for _, name := range queried {
				g.Expect(served).To(ContainSubstring("# TYPE "+strings.TrimSuffix(name, "_bucket")+" "), "the dashboard queries %s", name)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	// Every sample runs an image built here, but the one pinned by digest to a registry that no
	// cluster can reach: its pods are created and kubelet's pulls fail, and the operator must not
	// call it Ready.
	It("rolls each sample out: a Deployment and a Service it owns, pods whose containers really run and turn Ready, status Ready", func(ctx SpecContext) {
		for _, path := range sampleFiles("") {
			s, err := readSample(path)
			Expect(err).NotTo(HaveOccurred())
			key := types.NamespacedName{Namespace: samplesNamespace, Name: s.obj.GetName()}
			obj := s.kind.newObject()
			Expect(k8s.Get(ctx, key, obj)).To(Succeed())
			pullable := true
			if d, ok := obj.(*appv1.DeployObject); ok {
				pullable = builtImage(d.Spec.Image)
			}

			Eventually(func(g Gomega) {
				deployments, services := ownedBy(ctx, g, obj)
				g.Expect(deployments).To(HaveLen(1))
				g.Expect(services).To(HaveLen(1))
				pods := controlledPods(ctx, g, controlledReplicaSets(ctx, g, &deployments[0]))
				g.Expect(pods).To(HaveLen(int(s.kind.replicas(obj))))
				if !pullable {
					for _, pod := range pods {
						g.Expect(pod.Status.ContainerStatuses).To(ContainElement(HaveField("State.Waiting.Reason", BeElementOf("ErrImagePull", "ImagePullBackOff"))),
							"pod %s, of an image no registry here serves", pod.Name)
					}
					g.Expect(s.kind.available(get(ctx, g, key, s.kind.newObject()))).NotTo(Succeed())
					return
				}
				for _, pod := range pods {
					g.Expect(pod.Spec.NodeName).To(Equal(cluster.NodeName))
					g.Expect(podReady(&pod)).To(BeTrue(), "pod %s: %+v", pod.Name, pod.Status.ContainerStatuses)
				}
				g.Expect(deployments[0].Status.ReadyReplicas).To(Equal(s.kind.replicas(obj)))
				g.Expect(s.kind.available(get(ctx, g, key, s.kind.newObject()))).To(Succeed())
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "%s", filepath.Base(path))
		}
	}, SpecTimeout(5*time.Minute))

	It("scales a Memcached with kubectl scale: the scale webhook refuses 4, and 2 is rolled out", func(ctx SpecContext) {
		_, stderr, err := kubectl(ctx, "scale", "-n", samplesNamespace, "memcached/memcached-sample", "--replicas=4")
		Expect(err).To(HaveOccurred(), "kubectl scale --replicas=4 was accepted")
		Expect(stderr).To(ContainSubstring("spec.size: Invalid value: 4: must be between 1 and 3"))

		_, stderr, err = kubectl(ctx, "scale", "-n", samplesNamespace, "memcached/memcached-sample", "--replicas=2")
		Expect(err).NotTo(HaveOccurred(), stderr)
		key := types.NamespacedName{Namespace: samplesNamespace, Name: "memcached-sample"}
		Eventually(func(g Gomega) {
			m := get(ctx, g, key, &cachev1.Memcached{}).(*cachev1.Memcached)
			g.Expect(m.Spec.Size).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(kinds["Memcached"].available(m)).To(Succeed())
			deployments, _ := ownedBy(ctx, g, m)
			g.Expect(deployments).To(HaveLen(1))
			g.Expect(controlledPods(ctx, g, controlledReplicaSets(ctx, g, &deployments[0]))).To(HaveLen(2))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("picks up a re-issued serving certificate without failing one admission request", func(ctx SpecContext) {
		before := servingSecretData(ctx)
		var ips []string
		for _, manager := range managers {
			ips = append(ips, manager.Status.PodIP)
		}
		load := startAdmissionLoad(ctx, samplesNamespace, ips)

		start := time.Now()
		renewCertificate(ctx)
		var after *corev1.Secret
		Eventually(func(g Gomega) {
			after = servingSecretData(ctx)
			g.Expect(after.Data["tls.crt"]).NotTo(Equal(before.Data["tls.crt"]))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(after.Data["ca.crt"]).To(Equal(before.Data["ca.crt"]), "the CA stays, so the caBundle stays valid")

		// Every running manager serves the new certificate once its mounted Secret is updated.
		newLeaf := parseCertificate(after.Data["tls.crt"])
		Expect(newLeaf.PublicKey).NotTo(Equal(parseCertificate(before.Data["tls.crt"]).PublicKey), "rotationPolicy Always gives the new certificate a new key")
		for _, manager := range managers {
			Eventually(func() ([]byte, error) {
				served, err := servedCertificate(manager.Status.PodIP, after.Data["ca.crt"])
				if err != nil {
					return nil, err
				}
				return served.Raw, nil
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(newLeaf.Raw), "pod %s", manager.Name)
		}
		AddReportEntry("re-issue to new certificate served", time.Since(start).Round(time.Millisecond).String())

		load.finish(ctx, "the rotation")
		Expect(caBundles(ctx)).To(HaveEach(Equal(after.Data["ca.crt"])))
	}, SpecTimeout(3*time.Minute))

	It("garbage-collects what a custom resource owns when it is deleted", func(ctx SpecContext) {
		// memcached-sample stays, for make undeploy.
		for _, path := range sampleFiles("") {
			s, err := readSample(path)
			Expect(err).NotTo(HaveOccurred())
			if s.obj.GetName() == "memcached-sample" {
				continue
			}
			obj := s.kind.newObject()
			Expect(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: s.obj.GetName()}, obj)).To(Succeed())
			deployments, services := ownedBy(ctx, Default, obj)
			Expect(deployments).To(HaveLen(1))
			Expect(services).To(HaveLen(1))
			replicaSets := controlledReplicaSets(ctx, Default, &deployments[0])
			Expect(replicaSets).NotTo(BeEmpty())
			Expect(controlledPods(ctx, Default, replicaSets)).NotTo(BeEmpty())

			_, stderr, err := kubectl(ctx, "delete", "-n", samplesNamespace, "-f", path)
			Expect(err).NotTo(HaveOccurred(), stderr)

			Eventually(func(g Gomega) {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&deployments[0]), &appsv1.Deployment{}))).To(BeTrue(), "the Deployment remains")
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&services[0]), &corev1.Service{}))).To(BeTrue(), "the Service remains")
				for _, rs := range replicaSets {
					g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&rs), &appsv1.ReplicaSet{}))).To(BeTrue(), "ReplicaSet %s remains", rs.Name)
				}
				g.Expect(controlledPods(ctx, g, replicaSets)).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "%s", filepath.Base(path))
		}
	}, SpecTimeout(3*time.Minute))

	It("has never been refused by RBAC: the ServiceAccount holds every permission the manager uses", func() {
		logs := rec.logs()
		// Only the leader runs the controllers, and every replica runs the webhooks.
		Expect(logs).To(ContainSubstring("Starting workers"), "the managers' logs are where the test reads them")
		// RBAC's refusal names the user and what it may not do: `... is forbidden: User "..." cannot
		// list resource ...`. A write to a namespace being deleted is forbidden too, by admission
		// (`unable to create new content in namespace ...`), which a reconcile from a cache a moment
		// behind may meet: that is no permission missing.
		var refused []string
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, `forbidden: User \"`) || strings.Contains(line, `forbidden: User "`) {
				refused = append(refused, line)
			}
		}
		Expect(refused).To(BeEmpty(), "a manager was refused by RBAC")
	})

	It("logs in one JSON stream, client-go's leader election included", func() {
		var notJSON []string
		acquired := false
		for _, line := range strings.Split(rec.logs(), "\n") {
			if line == "" || strings.HasPrefix(line, containerHeader) {
				continue // the recorder's own line before each container's logs
			}
			var entry struct {
				Logger string `json:"logger"`
				Msg    string `json:"msg"`
			}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				notJSON = append(notJSON, line)
				continue
			}
			acquired = acquired || (entry.Logger == "leaderelection" && entry.Msg == "Successfully acquired lease")
		}
		Expect(notJSON).To(BeEmpty(), "lines of the managers' logs are not JSON")
		Expect(acquired).To(BeTrue(), "no replica logged, as the logger leaderelection, that it acquired the lease")
	})

	It("is removed by make undeploy: custom resources first, then everything deploy created", func(ctx SpecContext) {
		remaining := &cachev1.Memcached{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: samplesNamespace, Name: "memcached-sample"}, remaining)).To(Succeed())
		deployments, services := ownedBy(ctx, Default, remaining)
		Expect(deployments).NotTo(BeEmpty())
		Expect(services).NotTo(BeEmpty())

		out, err := makeTarget(ctx, "undeploy")
		Expect(err).NotTo(HaveOccurred(), "make undeploy:\n%s", out)

		for _, manager := range managers {
			expectStoppedCleanly(ctx, rec, manager.Name)
		}
		expectSandboxesRemoved(ctx, fixtures.Namespace, "kubelet removed the manager's pods from the node")

		Eventually(func(g Gomega) {
			for _, d := range deployments {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&d), &appsv1.Deployment{}))).To(BeTrue(), "Deployment %s remains", d.Name)
			}
			for _, svc := range services {
				g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&svc), &corev1.Service{}))).To(BeTrue(), "Service %s remains", svc.Name)
			}
			crds := &apiextensionsv1.CustomResourceDefinitionList{}
			g.Expect(k8s.List(ctx, crds)).To(Succeed())
			for _, crd := range crds.Items {
				g.Expect(crd.Spec.Group).NotTo(HaveSuffix("seedlabs.dev"), "CRD %s remains", crd.Name)
			}
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: fixtures.Namespace}, &corev1.Namespace{}))).To(BeTrue(),
				"namespace %s remains", fixtures.Namespace)
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: fixtures.MutatingWebhookConfiguration}, &admissionregistrationv1.MutatingWebhookConfiguration{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: fixtures.ValidatingWebhookConfiguration}, &admissionregistrationv1.ValidatingWebhookConfiguration{}))).To(BeTrue())
			roles := &rbacv1.ClusterRoleList{}
			g.Expect(k8s.List(ctx, roles)).To(Succeed())
			for _, r := range roles.Items {
				g.Expect(r.Name).NotTo(HavePrefix(fixtures.NamePrefix))
			}
			bindings := &rbacv1.ClusterRoleBindingList{}
			g.Expect(k8s.List(ctx, bindings)).To(Succeed())
			for _, b := range bindings.Items {
				g.Expect(b.Name).NotTo(HavePrefix(fixtures.NamePrefix))
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})

// managerContainer is the manager's container of pod.
func managerContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == fixtures.ManagerContainer {
			return &pod.Spec.Containers[i]
		}
	}
	Fail(fmt.Sprintf("pod %s has no container %s", pod.Name, fixtures.ManagerContainer))
	return nil
}

// generatedWebhooks counts the webhooks in the configurations controller-gen generated.
func generatedWebhooks() int {
	data, err := os.ReadFile(filepath.Join(cfg.root, "config", "webhook", "manifests.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	n := 0
	for _, doc := range strings.Split(string(data), "\n---") {
		var configuration struct {
			Webhooks []any `json:"webhooks"`
		}
		ExpectWithOffset(1, yaml.Unmarshal([]byte(doc), &configuration)).To(Succeed())
		n += len(configuration.Webhooks)
	}
	ExpectWithOffset(1, n).To(BeNumerically(">", 0))
	return n
}

func sampleFiles(dir string) []string {
	files, err := filepath.Glob(filepath.Join(cfg.root, "config", "samples", dir, "*.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, files).NotTo(BeEmpty())
	return files
}

// refusedBeforeAdmission are samples kube-apiserver refuses itself before any webhook runs,
// with its own message: a negative size fails the scale subresource's replicas check.
var refusedBeforeAdmission = map[string][]string{
	"memcached-size-negative.yaml": {"spec.size", "should be a non-negative integer"},
}

// expectedRefusal is every distinct violation the webhooks' rules find in a sample, worded as
// the API server and kubectl word them.
func expectedRefusal(s sample) []string {
	errs := s.kind.admit(s.obj)
	ExpectWithOffset(1, errs).NotTo(BeEmpty(), "%s passes the webhook's own rules", s.file)
	var want []string
	for _, e := range webhooks.Rendered(errs) {
		if !slices.Contains(want, e.Error()) {
			want = append(want, e.Error())
		}
	}
	return want
}

// refusalCauses are the causes kubectl prints for a 422: one per "* " line, or the one after
// "is invalid: " when there is a single cause.
func refusalCauses(stderr string) []string {
	var causes []string
	for _, line := range strings.Split(stderr, "\n") {
		if cause, ok := strings.CutPrefix(line, "* "); ok {
			causes = append(causes, cause)
		}
	}
	if len(causes) == 0 {
		if _, cause, ok := strings.Cut(stderr, " is invalid: "); ok && strings.TrimSpace(cause) != "" {
			causes = append(causes, strings.TrimSpace(cause))
		}
	}
	return causes
}

func get(ctx context.Context, g Gomega, key types.NamespacedName, obj client.Object) client.Object {
	g.ExpectWithOffset(1, k8s.Get(ctx, key, obj)).To(Succeed())
	return obj
}

// ownedBy lists the Deployments and Services obj is the controller of.
func ownedBy(ctx context.Context, g Gomega, obj client.Object) ([]appsv1.Deployment, []corev1.Service) {
	deployments := &appsv1.DeploymentList{}
	g.ExpectWithOffset(1, k8s.List(ctx, deployments, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	services := &corev1.ServiceList{}
	g.ExpectWithOffset(1, k8s.List(ctx, services, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	return controlled(deployments.Items, obj), controlled(services.Items, obj)
}

// controlledReplicaSets lists the ReplicaSets of a Deployment.
func controlledReplicaSets(ctx context.Context, g Gomega, d *appsv1.Deployment) []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(d.Namespace))).To(Succeed())
	return controlled(list.Items, d)
}

// controlledPods lists the pods of any of the ReplicaSets.
func controlledPods(ctx context.Context, g Gomega, replicaSets []appsv1.ReplicaSet) []corev1.Pod {
	if len(replicaSets) == 0 {
		return nil
	}
	list := &corev1.PodList{}
	g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(replicaSets[0].Namespace))).To(Succeed())
	var pods []corev1.Pod
	for i := range replicaSets {
		pods = append(pods, controlled(list.Items, &replicaSets[i])...)
	}
	return pods
}

// controlled returns the items whose controller is owner.
func controlled[T any, PT interface {
	*T
	client.Object
}](items []T, owner client.Object) []T {
	var out []T
	for i := range items {
		if isControlledBy(PT(&items[i]), owner) {
			out = append(out, items[i])
		}
	}
	return out
}

func isControlledBy(obj, owner client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner.GetUID()
}

func certificate(ctx context.Context) (*unstructured.Unstructured, error) {
	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(certificateGVK)
	err := k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: fixtures.ServingCertificate}, cert)
	return cert, err
}

// certificateCondition finds a condition of the serving Certificate.
func certificateCondition(ctx context.Context, conditionType string) (map[string]any, error) {
	cert, err := certificate(ctx)
	if err != nil {
		return nil, err
	}
	conditions, _, err := unstructured.NestedSlice(cert.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == conditionType {
			return m, nil
		}
	}
	return nil, fmt.Errorf("certificate %s has no %s condition", fixtures.ServingCertificate, conditionType)
}

func certificateReady(ctx context.Context) error {
	ready, err := certificateCondition(ctx, "Ready")
	if err != nil {
		return err
	}
	if ready["status"] != "True" {
		return fmt.Errorf("certificate %s not Ready: %v", fixtures.ServingCertificate, ready["message"])
	}
	return nil
}

// renewCertificate asks cert-manager to re-issue the serving certificate now, as
// `cmctl renew` does: by setting the Issuing condition.
func renewCertificate(ctx context.Context) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cert, err := certificate(ctx)
		if err != nil {
			return err
		}
		conditions, _, err := unstructured.NestedSlice(cert.Object, "status", "conditions")
		if err != nil {
			return err
		}
		conditions = append(conditions, map[string]any{
			"type":               "Issuing",
			"status":             "True",
			"reason":             "ManuallyTriggered",
			"message":            "Certificate re-issuance manually triggered",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			"observedGeneration": cert.GetGeneration(),
		})
		if err := unstructured.SetNestedSlice(cert.Object, conditions, "status", "conditions"); err != nil {
			return err
		}
		return k8s.Status().Update(ctx, cert)
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

func servingSecretData(ctx context.Context) *corev1.Secret {
	secret := &corev1.Secret{}
	ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: fixtures.ServingSecret}, secret)).To(Succeed())
	return secret
}

// caBundles returns the caBundle of every webhook in both configurations, and of the conversion
// webhook of every CRD of the operator's that has one.
func caBundles(ctx context.Context) ([][]byte, error) {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: fixtures.MutatingWebhookConfiguration}, mutating); err != nil {
		return nil, err
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: fixtures.ValidatingWebhookConfiguration}, validating); err != nil {
		return nil, err
	}
	var bundles [][]byte
	for _, w := range mutating.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	for _, w := range validating.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := k8s.List(ctx, crds); err != nil {
		return nil, err
	}
	for _, crd := range crds.Items {
		if c := crd.Spec.Conversion; strings.HasSuffix(crd.Spec.Group, ".seedlabs.dev") && c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil {
			bundles = append(bundles, c.Webhook.ClientConfig.CABundle)
		}
	}
	return bundles, nil
}

// conversionWebhooks is how many CRDs config/crd gives a conversion webhook (its patches).
func conversionWebhooks() int {
	patches, err := filepath.Glob(filepath.Join(cfg.root, "config", "crd", "patches", "*.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	n := 0
	for _, path := range patches {
		data, err := os.ReadFile(path)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		ExpectWithOffset(1, yaml.Unmarshal(data, &crd)).To(Succeed(), path)
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
			n++
		}
	}
	return n
}

func parseCertificate(pemData []byte) *x509.Certificate {
	block, _ := pem.Decode(pemData)
	ExpectWithOffset(1, block).NotTo(BeNil(), "no PEM block")
	cert, err := x509.ParseCertificate(block.Bytes)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cert
}

// servedCertificate completes a TLS handshake with the webhook server at the pod's IP, verifying
// it as kube-apiserver does: against the caBundle, for <service>.<namespace>.svc.
func servedCertificate(podIP string, caPEM []byte) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in the bundle")
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort(podIP, webhookPort), &tls.Config{
		RootCAs:    roots,
		ServerName: fixtures.WebhookService + "." + fixtures.Namespace + ".svc",
		MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// readinessURL is where kubelet would send the container's readiness probe.
func readinessURL(pod *corev1.Pod, c *corev1.Container) string {
	probe := c.ReadinessProbe
	ExpectWithOffset(1, probe).NotTo(BeNil())
	ExpectWithOffset(1, probe.HTTPGet).NotTo(BeNil())
	port := probe.HTTPGet.Port.IntValue()
	for _, p := range c.Ports {
		if p.Name == probe.HTTPGet.Port.String() {
			port = int(p.ContainerPort)
		}
	}
	ExpectWithOffset(1, port).NotTo(BeZero(), "readiness probe port %s", probe.HTTPGet.Port.String())
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + probe.HTTPGet.Path
}

// watchReadiness probes url every 50ms, as kubelet's probe would, and sends the time of the first
// 200 on readyAt.
func watchReadiness(ctx context.Context, url string, readyAt chan<- time.Time) {
	defer GinkgoRecover()
	httpClient := &http.Client{Timeout: time.Second}
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			readyAt <- time.Now()
			return
		}
	}
}

// admissionLoad sends admission requests in a loop: dry-run creates of a valid Welcome, which
// the mutating and validating webhooks must both admit, and of an invalid one, which the
// validating webhook must refuse with its own message. Anything else is a failed request.
//
// kube-apiserver keeps its connections to a webhook open, so on its own it might not shake
// hands again until well after a rotation. Each round therefore also makes the handshake a new
// connection of the API server would make at that moment: to the pod, verified against the
// caBundle then in the webhook configuration, for the Service's name, with each replica.
type admissionLoad struct {
	// answered counts the admission requests answered as expected; reads, the lists that succeeded.
	answered, reads atomic.Int64
	// reading is whether the load lists too.
	reading bool
	stop    func() []string

	mu       sync.Mutex
	failures []string
}

func (l *admissionLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf(format, args...))
}

// finish requires that admission goes on answering, 20 requests more, stops the load, requires
// that no request failed during what, and reports how many were answered.
func (l *admissionLoad) finish(ctx context.Context, what string) {
	served := l.answered.Load()
	EventuallyWithOffset(1, l.answered.Load).WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically(">=", served+20),
		"admission keeps answering after "+what)
	ExpectWithOffset(1, l.stop()).To(BeEmpty(), "failed admission requests during "+what)
	AddReportEntry(what+": admission requests answered", l.answered.Load())
	if l.reading {
		AddReportEntry(what+": lists of every kind served", l.reads.Load())
	}
}

// startAdmissionLoad starts an admissionLoad in namespace, shaking hands with the webhook server at
// each of podIPs, and waits for its first 20 answers.
func startAdmissionLoad(ctx context.Context, namespace string, podIPs []string) *admissionLoad {
	return startAdmissionLoadAt(ctx, namespace, podIPs, "v1", nil)
}

// welcomeAt is w at version of auth.seedlabs.dev, which has v1's fields but for v1alpha1's
// password, which w does not set: for a request at a version other than the one the Go types are.
func welcomeAt(w *authv1.Welcome, version string) *unstructured.Unstructured {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(authv1.GroupVersion.WithKind("Welcome"))
	obj.SetAPIVersion(authv1.GroupVersion.Group + "/" + version)
	return obj
}

// createByGVR creates the Welcome obj in a server-side dry run through the dynamic client, by its
// group, version and resource rather than through the client's REST mapper, which does not learn
// of a version served after it first looked; obj becomes the API server's answer.
func createByGVR(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return err
	}
	created, err := dyn.Resource(gv.WithResource("welcomes")).Namespace(obj.GetNamespace()).
		Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		obj.Object = created.Object
	}
	return err
}

// readLoadResources are the resources the read load lists: every kind at each of versions, but the
// DeployObject, at v1, its only version.
func readLoadResources(versions []string) []schema.GroupVersionResource {
	if len(versions) == 0 {
		return nil
	}
	resources := []schema.GroupVersionResource{appv1.GroupVersion.WithResource("deployobjects")}
	for _, v := range versions {
		for _, gr := range []schema.GroupResource{
			{Group: authv1.GroupVersion.Group, Resource: "welcomes"},
			{Group: cachev1.GroupVersion.Group, Resource: "memcacheds"},
			{Group: policyv1.GroupVersion.Group, Resource: "admissionpolicies"},
		} {
			resources = append(resources, gr.WithVersion(v))
		}
	}
	return resources
}

// startAdmissionLoadAt is startAdmissionLoad writing Welcomes at version, which every version of
// an upgrade serves, and at v1 too once a read finds Welcomes served at it. It reads too: each
// round lists every kind in namespace (the AdmissionPolicies, cluster-scoped, in the cluster) at
// each of reads (readLoadResources), a Welcome read through the conversion webhook when the version
// is not the one stored, and requires every list to succeed once its kind has been served at its
// version (v1 becomes served during an upgrade from the release that listed it unserved).
func startAdmissionLoadAt(ctx context.Context, namespace string, podIPs []string, version string, reads []string) *admissionLoad {
	dyn, err := dynamic.NewForConfig(kube.Config)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	load := &admissionLoad{reading: len(reads) > 0}
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		// served are the resources a list has found served.
		served := map[schema.GroupVersionResource]bool{}
		for i := 0; ctx.Err() == nil; i++ {
			// At version, and at v1 too once it is served (during an upgrade from the release
			// that listed it unserved, the previous replicas answer its webhooks).
			versions := []string{version}
			if version != "v1" && served[authv1.GroupVersion.WithResource("welcomes")] {
				versions = append(versions, "v1")
			}
			for _, v := range versions {
				valid := welcomeAt(&authv1.Welcome{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "load-" + strconv.Itoa(i)},
					Spec:       authv1.WelcomeSpec{Name: "Load"},
				}, v)
				err := createByGVR(ctx, dyn, valid)
				if ctx.Err() != nil {
					return
				}
				replicas, _, _ := unstructured.NestedInt64(valid.Object, "spec", "replicas")
				switch {
				case err != nil:
					load.fail("valid Welcome at %s refused: %v", v, err)
				case replicas != 1:
					load.fail("valid Welcome at %s not defaulted by the mutating webhook", v)
				default:
					load.answered.Add(1)
				}

				invalid := welcomeAt(&authv1.Welcome{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "load-invalid-" + strconv.Itoa(i)},
					Spec:       authv1.WelcomeSpec{Name: "Load", Replicas: ptr.To[int32](-1)},
				}, v)
				err = createByGVR(ctx, dyn, invalid)
				if ctx.Err() != nil {
					return
				}
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
					load.fail("invalid Welcome at %s: want the webhook's 422 on spec.replicas, got %v", v, err)
				} else {
					load.answered.Add(1)
				}
			}

			for _, gvr := range readLoadResources(reads) {
				// By group, version and resource, as createByGVR writes; the AdmissionPolicy is
				// cluster-scoped.
				var err error
				if gvr.Resource == "admissionpolicies" {
					_, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
				} else {
					_, err = dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
				}
				switch {
				case ctx.Err() != nil:
					return
				case err == nil:
					served[gvr] = true
					load.reads.Add(1)
				case served[gvr] || !apierrors.IsNotFound(err):
					load.fail("listing %s: %v", gvr, err)
				}
			}

			bundles, err := caBundles(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				load.fail("reading the caBundle: %v", err)
				continue
			}
			for _, podIP := range podIPs {
				if _, err := servedCertificate(podIP, bundles[0]); err != nil {
					load.fail("a new connection to %s verified against the current caBundle: %v", podIP, err)
				}
			}
		}
	}()
	load.stop = func() []string {
		cancel()
		<-done
		load.mu.Lock()
		defer load.mu.Unlock()
		return load.failures
	}
	EventuallyWithOffset(1, load.answered.Load).WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically(">=", 20),
		func() string {
			load.mu.Lock()
			defer load.mu.Unlock()
			return fmt.Sprintf("the admission load's first answers; its failures: %q", load.failures[:min(len(load.failures), 5)])
		})
	return load
}
