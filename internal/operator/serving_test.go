package operator

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// servedBy is a TLS test server serving handler behind servingServer at /hook and at the
// conversion webhook's path, with extra TLS options.
func servedBy(t *testing.T, handler http.Handler, clientCertificates bool, tlsOptions ...func(*tls.Config)) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	s := servingServer{Server: muxServer{mux: mux}, stopping: new(atomic.Bool), bodies: newBodyBudget(bodyBytesPerCaller, bodyBytesInAll),
		clientCertificates: clientCertificates}
	s.Register("/hook", handler)
	s.Register(webhooks.ConvertPath, handler)
	server := httptest.NewUnstartedServer(mux)
	server.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	for _, o := range tlsOptions {
		o(server.TLS)
	}
	server.StartTLS()
	t.Cleanup(server.Close)
	return server
}

// TestAStalledBodyIsCut sends the headers of a request and part of its body, then nothing, as a
// caller that holds the server's memory would: the handler's read of the body must fail once the
// request's timeout passes, instead of waiting for ever.
func TestAStalledBodyIsCut(t *testing.T) {
	readErr := make(chan error, 1)
	server := servedBy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), false)
	conn, err := tls.Dial("tcp", server.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test's own server
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := fmt.Fprintf(conn, "POST /hook?timeout=200ms HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		1<<20, strings.Repeat("x", 4096)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readErr:
		var timeout net.Error
		if !errors.As(err, &timeout) || !timeout.Timeout() {
			t.Errorf("the read of the stalled body ended with %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the read of a stalled body did not end within 30s of its 200ms timeout")
	}
}

// TestTheRequestEndsAtItsTimeout requires the handler's context to end at the request's
// ?timeout=, as kube-apiserver states the webhook's timeoutSeconds, or at the default.
func TestTheRequestEndsAtItsTimeout(t *testing.T) {
	tests := []struct {
		query string
		want  time.Duration
	}{
		{query: "?timeout=1s", want: time.Second},
		{query: "?timeout=5m", want: maxRequestTimeout},
		{query: "?timeout=nonsense", want: defaultRequestTimeout},
		{query: "", want: defaultRequestTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			var left time.Duration
			h := servingServer{bodies: newBodyBudget(bodyBytesPerCaller, bodyBytesInAll), stopping: new(atomic.Bool)}.serve(
				http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					deadline, ok := r.Context().Deadline()
					if !ok {
						t.Error("the request has no deadline")
					}
					left = time.Until(deadline)
				}))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/hook"+tc.query, strings.NewReader("{}")))
			if left > tc.want || left < tc.want-10*time.Second {
				t.Errorf("the deadline is %v away, want %v", left, tc.want)
			}
		})
	}
}

// TestBodiesAreReadWithinABudget holds the budget of one caller with bodies being read, and
// requires another body from it to wait, and be refused 429 unread once its deadline passes,
// while another caller is served.
func TestBodiesAreReadWithinABudget(t *testing.T) {
	holding, release := make(chan struct{}), make(chan struct{})
	var served atomic.Int32
	h := servingServer{bodies: newBodyBudget(2<<20, 3<<20), stopping: new(atomic.Bool)}.serve(
		http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			served.Add(1)
			if r.Header.Get("Hold") != "" {
				close(holding)
				<-release
			}
		}))
	request := func(caller string, size int64, timeout string, hold bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hook?timeout="+timeout, strings.NewReader("{}"))
		r.RemoteAddr, r.ContentLength = caller+":40000", size
		if hold {
			r.Header.Set("Hold", "yes")
		}
		return r
	}
	held := make(chan struct{})
	go func() {
		defer close(held)
		h.ServeHTTP(httptest.NewRecorder(), request("10.0.0.9", 2<<20, "30s", true))
	}()
	<-holding
	busy := func() float64 { return testutil.ToFloat64(refusedCalls.WithLabelValues("busy")) }
	before := busy()

	refused := httptest.NewRecorder()
	h.ServeHTTP(refused, request("10.0.0.9", 1, "100ms", false))
	if refused.Code != http.StatusTooManyRequests || served.Load() != 1 {
		t.Errorf("a second body of a caller whose budget is held got %d and was served: %v", refused.Code, served.Load() != 1)
	}
	if busy()-before != 1 {
		t.Errorf("%v calls counted as refused busy, want 1", busy()-before)
	}
	other := httptest.NewRecorder()
	h.ServeHTTP(other, request("10.0.0.10", 1<<20, "100ms", false))
	if other.Code != http.StatusOK || served.Load() != 2 {
		t.Errorf("another caller got %d while the first held its budget, want 200", other.Code)
	}
	overall := httptest.NewRecorder()
	h.ServeHTTP(overall, request("10.0.0.11", 2<<20, "100ms", false))
	if overall.Code != http.StatusTooManyRequests {
		t.Errorf("a body past the overall budget got %d, want 429", overall.Code)
	}
	close(release)
	<-held
	again := httptest.NewRecorder()
	h.ServeHTTP(again, request("10.0.0.9", 2<<20, "100ms", false))
	if again.Code != http.StatusOK {
		t.Errorf("once the body was read, the caller's next got %d, want 200", again.Code)
	}
}

// TestClientCertificates serves with --webhook-client-ca: a caller without a certificate is
// refused 403 before its body is read, one whose certificate the CA signed is served, one of
// another CA fails the handshake; and a CA written into the file later is trusted without a
// restart.
func TestClientCertificates(t *testing.T) {
	trusted, err := certs.NewCA("kube-apiserver-client-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA("someone-else", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(file, trusted.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cas, err := newClientCAs(file)
	if err != nil {
		t.Fatal(err)
	}
	var bodiesRead atomic.Int32
	server := servedBy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		bodiesRead.Add(1)
	}), true, cas.tlsOption)
	callAt := func(path string, ca *certs.CA) (int, error) {
		config := &tls.Config{RootCAs: x509.NewCertPool(), InsecureSkipVerify: true} //nolint:gosec // the test's own server
		if ca != nil {
			pair, err := ca.NewClientPair(pkix.Name{CommonName: "kube-apiserver"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			config.Certificates = []tls.Certificate{cert}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: config}}
		defer client.CloseIdleConnections()
		resp, err := client.Post(server.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		return resp.StatusCode, nil
	}
	call := func(ca *certs.CA) (int, error) { return callAt("/hook", ca) }
	refusedBefore := testutil.ToFloat64(refusedCalls.WithLabelValues("client_certificate"))

	if code, err := call(nil); err != nil || code != http.StatusForbidden {
		t.Errorf("a caller without a certificate got %d, %v; want 403", code, err)
	}
	if bodiesRead.Load() != 0 {
		t.Error("the body of a caller without a certificate was read")
	}
	if got := testutil.ToFloat64(refusedCalls.WithLabelValues("client_certificate")) - refusedBefore; got != 1 {
		t.Errorf("%v calls counted as refused for their certificate, want 1", got)
	}
	if code, err := call(trusted); err != nil || code != http.StatusOK {
		t.Errorf("a caller with a certificate of the CA got %d, %v; want 200", code, err)
	}
	if _, err := call(other); err == nil {
		t.Error("a caller with a certificate of another CA was served")
	}
	// kube-apiserver calls the conversion webhook without a certificate; one of another CA still
	// fails the handshake there.
	if code, err := callAt(webhooks.ConvertPath, nil); err != nil || code != http.StatusOK || bodiesRead.Load() != 2 {
		t.Errorf("the conversion webhook, called without a certificate, answered %d, %v (bodies read: %d); want 200, the body read", code, err, bodiesRead.Load())
	}
	if _, err := callAt(webhooks.ConvertPath, other); err == nil {
		t.Error("the conversion webhook served a caller with a certificate of another CA")
	}

	// The CA rotates: the file is replaced, as the kubelet updates a mounted ConfigMap.
	later := time.Now().Add(time.Minute)
	if err := os.WriteFile(file, other.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if code, err := call(other); err != nil || code != http.StatusOK {
		t.Errorf("after the file changed, a caller of its new CA got %d, %v; want 200", code, err)
	}
	if _, err := call(trusted); err == nil {
		t.Error("after the file changed, a caller of the CA it no longer holds was served")
	}
	// A file that can no longer be read keeps the CAs read before.
	if err := os.WriteFile(file, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, err := call(other); err != nil || code != http.StatusOK {
		t.Errorf("with the file unreadable, a caller of the CA read before got %d, %v; want 200", code, err)
	}

	if _, err := newClientCAs(filepath.Join(t.TempDir(), "missing.crt")); err == nil {
		t.Error("a missing --webhook-client-ca file is accepted")
	}
}
