//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// clientCAConfigMap is the ConfigMap, in the operator's namespace, whose ca.crt is the CA of the
// client certificate kube-apiserver presents to webhooks: config/webhook-client-ca mounts it, and
// the chart's webhook.clientCA.configMap names it.
const clientCAConfigMap = "webhook-client-ca"

// clientCADeployConfig is config/default with config/webhook-client-ca, the install of make
// deploy for the specs that run the operator with mutual TLS.
const clientCADeployConfig = "DEPLOY_CONFIG=e2e-client-ca"

// createClientCAConfigMap creates the operator's namespace, unless it exists, and in it the
// ConfigMap of the CA that signed kube-apiserver's client certificate, as a user turning on mutual
// TLS does before installing: the manager's pods mount it, and start only once it exists.
func createClientCAConfigMap(ctx context.Context) {
	GinkgoHelper()
	Eventually(func(ctx context.Context) error {
		if err := ignoreAlreadyExists(k8s.Create(ctx, restrictedNamespace(fixtures.Namespace))); err != nil {
			return err
		}
		// A namespace still being deleted refuses it for a while.
		return ignoreAlreadyExists(k8s.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: fixtures.Namespace, Name: clientCAConfigMap},
			Data:       map[string]string{"ca.crt": string(kube.WebhookClientCA.CertPEM)},
		}))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}

// deployWithClientCA runs make deploy of config/default with config/webhook-client-ca, once the
// ConfigMap it mounts exists: the managers serve only callers with a client certificate of the
// cluster's WebhookClientCA, which kube-apiserver presents.
func deployWithClientCA(ctx context.Context) (string, error) {
	createClientCAConfigMap(ctx)
	return makeTarget(ctx, "deploy", clientCADeployConfig)
}

// impersonating binds user to the cluster role in namespace and returns a client that acts as
// that user, as kubectl --as does.
func impersonating(ctx context.Context, namespace, user, role string) client.Client {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	config := rest.CopyConfig(kube.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	// A user's own pace, not client-go's default limit of 5 requests a second.
	config.QPS, config.Burst, config.Timeout = 100, 200, 30*time.Second
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// webhookTarget is the webhook Service's cluster IP and port, where a pod reaches the webhook
// port through kube-proxy.
func webhookTarget(ctx context.Context) string {
	GinkgoHelper()
	svc := &corev1.Service{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: fixtures.WebhookService}, svc)).To(Succeed())
	Expect(svc.Spec.Ports).NotTo(BeEmpty())
	target := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	// kube-apiserver calls the endpoints themselves, so admission is served before kube-proxy has
	// programmed the Service for them, which a pod's call of the cluster IP needs; until then it is
	// refused. The test's process reaches the cluster IP through the same rules.
	Eventually(func() error {
		conn, err := net.DialTimeout("tcp", target, time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}).WithContext(ctx).WithTimeout(serviceSync).WithPolling(100*time.Millisecond).Should(Succeed(), "the webhook Service at %s", target)
	return target
}

// welcomeValidatePath is the Welcome's validating webhook, which callers of the webhook port
// call here.
const welcomeValidatePath = "/validate-auth-seedlabs-dev-v1alpha1-welcome"

// callerPod is a pod of e2e-caller (test/e2e/images/caller), hardened for the restricted Pod
// Security Standard, calling the webhook Service with the environment env.
func callerPod(namespace, name string, restart corev1.RestartPolicy, env map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "caller",
				Image: cfg.caller,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: env[name]})
	}
	return pod
}

// podLogs reads the logs of pod's only container through the API server.
func podLogs(ctx context.Context, pod *corev1.Pod) (string, error) {
	clientset, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		return "", err
	}
	stream, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = stream.Close() }()
	data, err := io.ReadAll(stream)
	return string(data), err
}

// callerCall is how one call of e2e-caller's probe ended (its Call).
type callerCall struct {
	Name    string  `json:"name"`
	Stage   string  `json:"stage"`
	Error   string  `json:"error"`
	Status  int     `json:"status"`
	Sent    int     `json:"sent"`
	Seconds float64 `json:"seconds"`
}

func (c callerCall) String() string {
	return fmt.Sprintf("%s: %s after %.3fs, status %d, %d bytes of the body sent %s", c.Name, c.Stage, c.Seconds, c.Status, c.Sent, c.Error)
}

// probeWebhookPort runs e2e-caller's probe in a pod of namespace: one call of the webhook Service
// without a client certificate, then one with each of pairs (name to PEM certificate and key),
// each sending its headers and part of a body that never ends. It returns how each call ended,
// by name ("none" without a certificate).
func probeWebhookPort(ctx context.Context, namespace string, pairs map[string][2][]byte) map[string]callerCall {
	GinkgoHelper()
	encoded := map[string]map[string]string{}
	for name, pair := range pairs {
		encoded[name] = map[string]string{"cert": string(pair[0]), "key": string(pair[1])}
	}
	data, err := json.Marshal(encoded)
	Expect(err).NotTo(HaveOccurred())
	pod := callerPod(namespace, "webhook-port-probe", corev1.RestartPolicyNever, map[string]string{
		"MODE": "probe", "TARGET": webhookTarget(ctx), "WEBHOOK_PATH": welcomeValidatePath + "?timeout=10s",
		"CONTENT_LENGTH": strconv.Itoa(1 << 20), "SEND": strconv.Itoa(1 << 10), "CLIENT_PAIRS": string(data),
	})
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, pod))).To(Succeed()) })
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded), "%+v", pod.Status.ContainerStatuses)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	logs, err := podLogs(ctx, pod)
	Expect(err).NotTo(HaveOccurred())
	calls := map[string]callerCall{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var c callerCall
		Expect(json.Unmarshal([]byte(line), &c)).To(Succeed(), "e2e-caller printed %q", line)
		calls[c.Name] = c
	}
	Expect(calls).To(HaveLen(len(pairs)+1), "e2e-caller printed\n%s", logs)
	return calls
}

// metricsReaderToken creates a ServiceAccount in namespace bound to the operator's metrics-reader
// role, as a Prometheus would be, and returns a token of it.
func metricsReaderToken(ctx context.Context, namespace string) string {
	GinkgoHelper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "metrics-scraper"}}
	Expect(ignoreAlreadyExists(k8s.Create(ctx, sa))).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-scraper-" + namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fixtures.NamePrefix + "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}
	Expect(ignoreAlreadyExists(k8s.Create(ctx, binding))).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, binding))).To(Succeed()) })
	token := &authenticationv1.TokenRequest{}
	Expect(k8s.SubResource("token").Create(ctx, sa, token)).To(Succeed())
	return token.Status.Token
}

func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// scrapeManagers reads every running manager's metrics over its secured endpoint with token, by
// pod name.
func scrapeManagers(ctx context.Context, g Gomega, token string) map[string]string {
	scraped := map[string]string{}
	for _, pod := range managerPods(ctx, g) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(pod.Status.PodIP, "8443")+"/metrics", nil)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		// The serving certificate is cert-manager's; what is checked here is what is served.
		transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec
		resp, err := (&http.Client{Transport: transport, Timeout: 5 * time.Second}).Do(req)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		g.ExpectWithOffset(1, resp.StatusCode).To(Equal(http.StatusOK), "%s: %s", pod.Name, body)
		scraped[pod.Name] = string(body)
	}
	return scraped
}

// refusedCallsSeries matches a series of webhook_operator_webhook_calls_refused_total.
var refusedCallsSeries = regexp.MustCompile(`(?m)^webhook_operator_webhook_calls_refused_total\{reason="([a-z_]+)"\} (\S+)$`)

// refusedCalls sums webhook_operator_webhook_calls_refused_total over the scraped managers, by
// reason.
func refusedCalls(scraped map[string]string) map[string]float64 {
	sums := map[string]float64{}
	for _, text := range scraped {
		for _, m := range refusedCallsSeries.FindAllStringSubmatch(text, -1) {
			v, err := strconv.ParseFloat(m[2], 64)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			sums[m[1]] += v
		}
	}
	return sums
}

// stallReport is a line e2e-caller's stall mode prints (its Counts).
type stallReport struct {
	Open           int            `json:"open"`
	MostOpen       int            `json:"mostOpen"`
	Opened         int            `json:"opened"`
	DialErrors     int            `json:"dialErrors"`
	Failed         int            `json:"failed"`
	Answered       map[string]int `json:"answered"`
	Cut            int            `json:"cut"`
	LongestSeconds float64        `json:"longestSeconds"`
}

// lastStallReport is the last line of counts in e2e-caller's stall log.
func lastStallReport(logs string) (stallReport, bool) {
	var last stallReport
	found := false
	scanner := bufio.NewScanner(strings.NewReader(logs))
	for scanner.Scan() {
		var r stallReport
		if json.Unmarshal(scanner.Bytes(), &r) == nil && r.Answered != nil {
			last, found = r, true
		}
	}
	return last, found
}
