package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// blockingManager stands in for controller-runtime's Manager: Start returns when its context ends.
type blockingManager struct {
	ctrl.Manager
	stopped chan time.Time
}

func (b *blockingManager) Start(ctx context.Context) error {
	<-ctx.Done()
	b.stopped <- time.Now()
	return nil
}

func TestStartStopsAfterTheShutdownDelayAndFailsReadinessAtOnce(t *testing.T) {
	const delay = 300 * time.Millisecond
	inner := &blockingManager{stopped: make(chan time.Time, 1)}
	m := newManager(inner, delay, nil)
	if err := m.readyUntilStopping(nil); err != nil {
		t.Fatalf("ready before the stop: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	signalled := time.Now()
	cancel()

	expectStoppedAfterTheDelay(t, m, inner, signalled, delay)
	if err := <-done; err != nil {
		t.Errorf("Start() = %v", err)
	}
}

// expectStoppedAfterTheDelay requires the inner manager of m to stop no sooner than delay after
// asked, and m to report not ready by then.
func expectStoppedAfterTheDelay(t *testing.T, m *Manager, inner *blockingManager, asked time.Time, delay time.Duration) {
	t.Helper()
	select {
	case stoppedAt := <-inner.stopped:
		if waited := stoppedAt.Sub(asked); waited < delay {
			t.Errorf("the manager stopped %v after it was asked to, before the shutdown delay of %v", waited, delay)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager never stopped")
	}
	if err := m.readyUntilStopping(nil); err == nil {
		t.Error("still ready while stopping")
	}
}

func TestStartReturnsWhenTheManagerStopsOnItsOwn(t *testing.T) {
	m := newManager(&failingManager{}, time.Hour, nil)
	if err := m.Start(context.Background()); !errors.Is(err, errLostLease) {
		t.Errorf("Start() = %v, want the manager's own error", err)
	}
	if err := m.readyUntilStopping(nil); err != nil {
		t.Errorf("not ready although nobody asked it to stop: %v", err)
	}
}

func TestStopStopsGracefullyAndStartReturnsItsCause(t *testing.T) {
	const delay = 300 * time.Millisecond
	inner := &blockingManager{stopped: make(chan time.Time, 1)}
	m := newManager(inner, delay, nil)
	done := make(chan error, 1)
	go func() { done <- m.Start(context.Background()) }()
	asked := time.Now()
	m.stop(ErrLeadershipLost)
	m.stop(errors.New("a second cause, which is ignored"))

	expectStoppedAfterTheDelay(t, m, inner, asked, delay)
	if err := <-done; !errors.Is(err, ErrLeadershipLost) || err.Error() != ErrLeadershipLost.Error() {
		t.Errorf("Start() = %v, want %v", err, ErrLeadershipLost)
	}
}

// muxServer stands in for controller-runtime's webhook server: it serves what is registered.
type muxServer struct {
	webhook.Server
	mux *http.ServeMux
}

func (s muxServer) Register(path string, hook http.Handler) { s.mux.Handle(path, hook) }

func TestTheWebhookServerClosesEachConnectionOnceTheManagerIsStopping(t *testing.T) {
	stopping := new(atomic.Bool)
	mux := http.NewServeMux()
	servingServer{Server: muxServer{mux: mux}, stopping: stopping, bodies: newBodyBudget(bodyBytesPerCaller, bodyBytesInAll)}.Register("/validate", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	server := httptest.NewServer(mux)
	defer server.Close()
	inner := &blockingManager{stopped: make(chan time.Time, 1)}
	m := newManager(inner, time.Hour, stopping)

	// post sends a request and reports whether it went down a pooled connection and whether the
	// server closed the connection after answering.
	post := func() (reused, closed bool) {
		t.Helper()
		var conn httptrace.GotConnInfo
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { conn = info },
		}), http.MethodPost, server.URL+"/validate", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return conn.Reused, resp.Close
	}

	post()
	if reused, closed := post(); !reused || closed {
		t.Fatalf("before the stop: reused %t, closed %t; want the connection kept alive and reused", reused, closed)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = m.Start(ctx) }()
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for m.readyUntilStopping(nil) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the manager never started stopping")
		}
		runtime.Gosched()
	}
	if reused, closed := post(); !reused || !closed {
		t.Errorf("while stopping: reused %t, closed %t; want the pooled connection answered and then closed", reused, closed)
	}
	if reused, closed := post(); reused || !closed {
		t.Errorf("the next request: reused %t, closed %t; want a new connection, closed again", reused, closed)
	}
}

var errLostLease = errors.New("lost the lease")

type failingManager struct{ ctrl.Manager }

func (failingManager) Start(context.Context) error { return errLostLease }
