package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/webhooks"
)

var _ = Describe("The Manager", func() {
	get := func(ctx SpecContext, path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.ProbeAddress+path, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	dial := func(config *tls.Config) (*tls.Conn, error) {
		config.InsecureSkipVerify = true //nolint:gosec // the handshake parameters are under test, not the peer
		return tls.DialWithDialer(&net.Dialer{}, "tcp", env.WebhookAddress, config)
	}

	It("is ready once its webhook server completes a TLS handshake", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			code, body := get(ctx, "/readyz?verbose")
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(body).To(ContainSubstring("[+]webhook ok"))
		}).Should(Succeed())
		code, _ := get(ctx, "/healthz")
		Expect(code).To(Equal(http.StatusOK))
	})

	It("turns unready once the API server has not confirmed the policy in force for the staleness, and ready again once it has, under the policy changed meanwhile", func(ctx SpecContext) {
		const staleness = 2 * time.Second
		link := &cuttableLink{}
		cfg := rest.CopyConfig(env.Config)
		cfg.Dial = link.dial
		suiteOptions := env.ManagerOptions
		env.ManagerConfig = cfg
		env.ManagerOptions = func(o *operator.Options) {
			if suiteOptions != nil {
				suiteOptions(o)
			}
			o.PolicyStaleness = staleness
		}
		DeferCleanup(func(ctx SpecContext) {
			env.ManagerConfig, env.ManagerOptions = nil, suiteOptions
			link.restore()
			Expect(env.RestartManager()).To(Succeed())
			deletePolicy(ctx)
		})
		Expect(env.RestartManager()).To(Succeed())
		ready := func(g Gomega) {
			code, body := get(ctx, "/readyz?verbose")
			g.Expect(code).To(Equal(http.StatusOK), body)
		}
		Eventually(ready).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("cutting the manager off the API server")
		link.cut()
		Eventually(func(g Gomega) {
			code, body := get(ctx, "/readyz?verbose")
			g.Expect(code).To(Equal(http.StatusInternalServerError), body)
			g.Expect(body).To(ContainSubstring("[-]admission-policy failed"))
		}).WithContext(ctx).WithTimeout(staleness + 10*time.Second).Should(Succeed())
		_, body := get(ctx, "/readyz/admission-policy")
		Expect(body).To(MatchRegexp(`the API server has not confirmed the policy in force for [\d.]+s, over the 2s allowed: `))

		By("changing the AdmissionPolicy meanwhile, and restoring the link")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Warn)}})
		stored := &policyv1.AdmissionPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: policyv1.PolicyName}, stored)).To(Succeed())
		Consistently(func(g Gomega) {
			code, body := get(ctx, "/readyz")
			g.Expect(code).To(Equal(http.StatusInternalServerError), body)
		}).WithContext(ctx).WithTimeout(staleness).WithPolling(200*time.Millisecond).Should(Succeed(), "ready while cut off")
		link.restore()
		Eventually(ready).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(policyGeneration()).To(BeEquivalentTo(stored.Generation), "ready before the policy changed meanwhile is in force")
		Expect(link.dials.Load()).To(BeNumerically(">", 0))
	})

	It("serves webhooks over TLS 1.2 or newer only", func() {
		_, err := dial(&tls.Config{MaxVersion: tls.VersionTLS11})
		Expect(err).To(HaveOccurred())

		conn, err := dial(&tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().Version).To(BeEquivalentTo(tls.VersionTLS12))
		Expect(conn.Close()).To(Succeed())
	})

	It("does not offer HTTP/2 on the webhook server", func() {
		conn, err := dial(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
		Expect(conn.Close()).To(Succeed())
	})
})

// cuttableLink dials the API server for a Manager, and can cut every connection it made and
// refuse new ones, as a broken link between the Manager and the API server would.
type cuttableLink struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
	dials atomic.Int64
}

func (l *cuttableLink) dial(ctx context.Context, network, address string) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return nil, errors.New("the link to the API server is cut")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err == nil {
		l.dials.Add(1)
		l.conns = append(l.conns, conn)
	}
	return conn, err
}

// cut closes every connection and refuses new ones until restore.
func (l *cuttableLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

func (l *cuttableLink) restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}
