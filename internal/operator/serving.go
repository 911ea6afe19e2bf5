package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/seedlabs/webhook-operator/webhooks"
)

// What one caller of the webhook server can make it hold. Whoever reaches the webhook port can
// call it (unless --webhook-client-ca is set, or a NetworkPolicy admits only the control plane),
// and controller-runtime reads a request body of up to 7 MiB into memory, with no deadline of its
// own: a client that sends most of one and stalls would hold it for as long as it liked.
const (
	// defaultRequestTimeout is how long a request may take when it does not say: kube-apiserver
	// sends the webhook's timeoutSeconds as ?timeout=, and its default is 10s.
	defaultRequestTimeout = 10 * time.Second
	// maxRequestTimeout is the longest a webhook's timeoutSeconds may be.
	maxRequestTimeout = 30 * time.Second
	// maxBodyReadTime is the longest a request body may take to arrive, however long the request
	// may take: kube-apiserver sends a body it holds in memory at once, in milliseconds.
	maxBodyReadTime = 5 * time.Second
	// maxRequestBytes is the largest body controller-runtime reads before it refuses a request.
	maxRequestBytes = 7 << 20
	// bodyBytesPerCaller is how many bytes of bodies are read at once from one address, and
	// bodyBytesInAll from all of them: a caller that stalls holds only its own share, while
	// kube-apiserver, calling from its own address, keeps its own.
	bodyBytesPerCaller = 8 << 20
	bodyBytesInAll     = 32 << 20
)

// refusedCalls counts the calls the webhook server refused before reading their body.
var refusedCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "webhook_operator_webhook_calls_refused_total",
	Help: "Calls to the webhook server refused before their body was read, by reason: client_certificate (none presented while --webhook-client-ca is set) or busy (the caller's, or every caller's, bodies being read at once were as many bytes as allowed until the request's deadline).",
}, []string{"reason"})

func init() {
	metrics.Registry.MustRegister(refusedCalls)
}

// servingServer is the webhook server of a Manager: every handler registered on it runs behind
// serve, which bounds what a caller can make the server hold, refuses a caller without a client
// certificate when one is required (but on the conversion webhook's path, Register), and closes
// connections while the manager stops.
type servingServer struct {
	webhook.Server
	// stopping is set once the manager is told to stop.
	stopping *atomic.Bool
	// bodies bound the request bodies being read at once.
	bodies *bodyBudget
	// clientCertificates, when set, is required of every caller; the TLS handshake verified it.
	clientCertificates bool
}

// Register implements webhook.Server. The conversion webhook asks no client certificate of its
// caller: kube-apiserver calls a CRD's conversion webhook with none (apiextensions-apiserver reads
// no kubeconfig for it, unlike the admission plugins' AdmissionConfiguration), so with one
// required every read of a Welcome at a version other than the one stored would fail. It is pure:
// it returns the objects it is sent, converted, and calls nothing, so a caller gets nothing it did
// not send; the body budget and deadlines bound it as every other path.
func (s servingServer) Register(path string, hook http.Handler) {
	if path == webhooks.ConvertPath {
		s.clientCertificates = false
	}
	s.Server.Register(path, s.serve(hook))
}

// serve runs next under the request's own deadline and within the body budget.
//
// The request's context ends at its timeout, ?timeout= as kube-apiserver sends the webhook's
// timeoutSeconds, so that the handlers stop working on a request no one waits for. Its body must
// arrive within that timeout, or maxBodyReadTime if shorter: the connection's read deadline cuts a
// caller that stalls. Before the body is read, the request takes its Content-Length (or the most a
// body may be) from the budget of its address and from the overall one, waiting for them until
// its deadline; a request that cannot is answered 429, without reading its body.
//
// Once the manager is stopping, every answer carries Connection: close. kube-apiserver keeps its
// connections to a replica alive in a pool, and removing the replica from the Service's endpoints
// does not close them; a request sent down one of them just as the server shuts down fails, and
// kube-apiserver does not retry it. Closing each connection after its answer during the shutdown
// delay makes kube-apiserver dial again, through the Service, onto a replica that stays.
func (s servingServer) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.stopping.Load() {
			w.Header().Set("Connection", "close")
		}
		if s.clientCertificates && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0) {
			refusedCalls.WithLabelValues("client_certificate").Inc()
			w.Header().Set("Connection", "close")
			http.Error(w, "a client certificate is required", http.StatusForbidden)
			return
		}
		start := time.Now()
		timeout := requestTimeout(r)
		ctx, cancel := context.WithDeadline(r.Context(), start.Add(timeout))
		defer cancel()
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(start.Add(min(timeout, maxBodyReadTime)))
		_ = rc.SetWriteDeadline(start.Add(timeout + time.Second))

		size := r.ContentLength
		if size < 0 || size > maxRequestBytes {
			size = maxRequestBytes
		}
		release, err := s.bodies.take(ctx, callerOf(r), size)
		if err != nil {
			refusedCalls.WithLabelValues("busy").Inc()
			w.Header().Set("Connection", "close")
			http.Error(w, "too many request bodies are being read: "+err.Error(), http.StatusTooManyRequests)
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requestTimeout is the timeout a request states in ?timeout=, within maxRequestTimeout, or
// defaultRequestTimeout when it states none.
func requestTimeout(r *http.Request) time.Duration {
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || d <= 0 {
		return defaultRequestTimeout
	}
	return min(d, maxRequestTimeout)
}

// callerOf is the address a request comes from, without its port.
func callerOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bodyBudget bounds the bytes of the request bodies being read at once: per caller, and in all.
type bodyBudget struct {
	perCaller int64
	all       *semaphore.Weighted

	mu      sync.Mutex
	callers map[string]*callerBudget
}

// callerBudget is one caller's budget, kept while it has requests.
type callerBudget struct {
	budget   *semaphore.Weighted
	requests int
}

func newBodyBudget(perCaller, all int64) *bodyBudget {
	return &bodyBudget{perCaller: perCaller, all: semaphore.NewWeighted(all), callers: map[string]*callerBudget{}}
}

// take takes size bytes from caller's budget and from the overall one, waiting until ctx ends,
// and returns what gives them back.
func (b *bodyBudget) take(ctx context.Context, caller string, size int64) (func(), error) {
	b.mu.Lock()
	c := b.callers[caller]
	if c == nil {
		c = &callerBudget{budget: semaphore.NewWeighted(b.perCaller)}
		b.callers[caller] = c
	}
	c.requests++
	b.mu.Unlock()
	done := func() {
		b.mu.Lock()
		if c.requests--; c.requests == 0 {
			delete(b.callers, caller)
		}
		b.mu.Unlock()
	}

	if err := c.budget.Acquire(ctx, size); err != nil {
		done()
		return nil, fmt.Errorf("%s is sending as many bytes at once as one caller may (%d)", caller, b.perCaller)
	}
	if err := b.all.Acquire(ctx, size); err != nil {
		c.budget.Release(size)
		done()
		return nil, errors.New("all callers together are sending as many bytes at once as the server reads")
	}
	return func() {
		b.all.Release(size)
		c.budget.Release(size)
		done()
	}, nil
}

// clientCAs are the CA certificates of a file that verify the webhook server's callers, read
// again whenever the file changes, so that a CA rotated in a mounted ConfigMap or Secret is
// trusted without a restart.
type clientCAs struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	pool    *x509.CertPool
}

// newClientCAs reads path, which must hold at least one PEM certificate.
func newClientCAs(path string) (*clientCAs, error) {
	c := &clientCAs{path: path}
	if _, err := c.current(); err != nil {
		return nil, err
	}
	return c, nil
}

// current is the pool of the file as it is now; when the file cannot be read, or holds no
// certificate, the pool read before stays.
func (c *clientCAs) current() (*x509.CertPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, err := os.Stat(c.path)
	if err == nil && c.pool != nil && info.ModTime().Equal(c.modTime) && info.Size() == c.size {
		return c.pool, nil
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(c.path)
	}
	pool := x509.NewCertPool()
	if err == nil && !pool.AppendCertsFromPEM(data) {
		err = fmt.Errorf("%s holds no PEM certificate", c.path)
	}
	if err != nil {
		if c.pool != nil {
			return c.pool, nil
		}
		return nil, fmt.Errorf("reading the webhook's client CAs: %w", err)
	}
	c.pool, c.modTime, c.size = pool, info.ModTime(), info.Size()
	return pool, nil
}

// tlsOption has the server ask every caller for a certificate and accept one only if it is a
// client certificate a CA of the file signed. A caller may still connect without one, so that
// the manager's own readiness check, which dials without a certificate, can reach the server;
// servingServer answers such a caller 403 without reading its body. The certificate is verified
// here rather than by Go's ClientCAs, which controller-runtime reads once, from the serving
// certificate's directory.
func (c *clientCAs) tlsOption(cfg *tls.Config) {
	cfg.ClientAuth = tls.RequestClientCert
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return nil
		}
		pool, err := c.current()
		if err != nil {
			return err
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, der := range raw {
			if certs[i], err = x509.ParseCertificate(der); err != nil {
				return fmt.Errorf("the client certificate does not parse: %w", err)
			}
		}
		intermediates := x509.NewCertPool()
		for _, cert := range certs[1:] {
			intermediates.AddCert(cert)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{
			Roots: pool, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return fmt.Errorf("the client certificate of %s is not trusted: %w", strconv.Quote(certs[0].Subject.String()), err)
		}
		return nil
	}
}
