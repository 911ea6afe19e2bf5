package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	const plainText = "text/plain; charset=utf-8"
	tests := []struct {
		name        string
		greet       string
		method      string
		target      string
		wantStatus  int
		wantBody    string
		wantHeaders map[string]string
	}{
		{
			name: "GET greets the configured name", greet: "Gopher",
			method: http.MethodGet, target: "/hello/",
			wantStatus: http.StatusOK, wantBody: "Hello Gopher",
			wantHeaders: map[string]string{"Content-Type": plainText, "Content-Length": "12", "X-Content-Type-Options": "nosniff", "Allow": ""},
		},
		{
			name: "GET below the prefix greets without reflecting the path or query", greet: "Gopher",
			method: http.MethodGet, target: "/hello/<script>alert(1)</script>?name=Mallory",
			wantStatus: http.StatusOK, wantBody: "Hello Gopher",
			wantHeaders: map[string]string{"Content-Type": plainText},
		},
		{
			name: "GET sends markup in the name as plain text", greet: "<b>Ada</b>",
			method: http.MethodGet, target: "/hello/",
			wantStatus: http.StatusOK, wantBody: "Hello <b>Ada</b>",
			wantHeaders: map[string]string{"Content-Type": plainText, "Content-Length": "16"},
		},
		{
			name: "HEAD answers headers without a body", greet: "Gopher",
			method: http.MethodHead, target: "/hello/",
			wantStatus: http.StatusOK, wantBody: "",
			wantHeaders: map[string]string{"Content-Type": plainText, "Content-Length": "12"},
		},
		{
			name: "POST is refused with the allowed methods", greet: "Gopher",
			method: http.MethodPost, target: "/hello/",
			wantStatus: http.StatusMethodNotAllowed, wantBody: "Method Not Allowed\n",
			wantHeaders: map[string]string{"Allow": "GET, HEAD", "Content-Type": plainText},
		},
		{
			name: "DELETE on the health endpoint is refused", greet: "Gopher",
			method: http.MethodDelete, target: "/healthz",
			wantStatus: http.StatusMethodNotAllowed, wantBody: "Method Not Allowed\n",
			wantHeaders: map[string]string{"Allow": "GET, HEAD"},
		},
		{
			name: "root is not found", greet: "Gopher",
			method: http.MethodGet, target: "/",
			wantStatus: http.StatusNotFound, wantBody: "404 page not found\n",
			wantHeaders: map[string]string{"Allow": ""},
		},
		{
			name: "other path is not found", greet: "Gopher",
			method: http.MethodGet, target: "/other",
			wantStatus: http.StatusNotFound, wantBody: "404 page not found\n",
		},
		{
			name: "hello without trailing slash is not found", greet: "Gopher",
			method: http.MethodGet, target: "/hello",
			wantStatus: http.StatusNotFound, wantBody: "404 page not found\n",
		},
		{
			name: "POST to an unknown path is not found", greet: "Gopher",
			method: http.MethodPost, target: "/other",
			wantStatus: http.StatusNotFound, wantBody: "404 page not found\n",
			wantHeaders: map[string]string{"Allow": ""},
		},
		{
			name: "health endpoint answers ok", greet: "Gopher",
			method: http.MethodGet, target: "/healthz",
			wantStatus: http.StatusOK, wantBody: "ok",
			wantHeaders: map[string]string{"Content-Type": plainText, "Content-Length": "2"},
		},
		{
			name: "HEAD on the health endpoint answers without a body", greet: "Gopher",
			method: http.MethodHead, target: "/healthz",
			wantStatus: http.StatusOK, wantBody: "",
			wantHeaders: map[string]string{"Content-Length": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newHandler(tt.greet).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))

			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if got := rec.Body.String(); got != tt.wantBody {
				t.Errorf("body = %q, want %q", got, tt.wantBody)
			}
			for key, want := range tt.wantHeaders {
				if got := rec.Header().Get(key); got != want {
					t.Errorf("header %s = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestHandlerOverHTTPHeadHasNoBody(t *testing.T) {
	srv := httptest.NewServer(newHandler("Gopher"))
	t.Cleanup(srv.Close)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, srv.URL+"/hello/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status = %d, want %d", resp.StatusCode, http.StatusOK)
	}
	if resp.ContentLength != 12 {
		t.Errorf("Content-Length = %d, want 12", resp.ContentLength)
	}
	if len(body) != 0 {
		t.Errorf("body = %q, want empty", body)
	}
}

func TestLoadConfig(t *testing.T) {
	const badPort = "must be a whole number between 1 and 65535, or unset for 8088"
	tests := []struct {
		name        string
		env         map[string]string
		want        config
		wantAddress string
		wantErr     string
	}{
		{
			name:        "port defaults to 8088",
			env:         map[string]string{"NAME": "Gopher"},
			want:        config{name: "Gopher", port: 8088},
			wantAddress: ":8088",
		},
		{
			name:        "custom port",
			env:         map[string]string{"NAME": "Gopher", "PORT": "9090"},
			want:        config{name: "Gopher", port: 9090},
			wantAddress: ":9090",
		},
		{
			name:        "lowest port",
			env:         map[string]string{"NAME": "Gopher", "PORT": "1"},
			want:        config{name: "Gopher", port: 1},
			wantAddress: ":1",
		},
		{
			name:        "highest port",
			env:         map[string]string{"NAME": "Gopher", "PORT": "65535"},
			want:        config{name: "Gopher", port: 65535},
			wantAddress: ":65535",
		},
		{
			name:    "port 0 is refused",
			env:     map[string]string{"NAME": "Gopher", "PORT": "0"},
			wantErr: `PORT="0" is not a valid port: ` + badPort,
		},
		{
			name:    "port 65536 is refused",
			env:     map[string]string{"NAME": "Gopher", "PORT": "65536"},
			wantErr: `PORT="65536" is not a valid port: ` + badPort,
		},
		{
			name:    "negative port is refused",
			env:     map[string]string{"NAME": "Gopher", "PORT": "-80"},
			wantErr: `PORT="-80" is not a valid port: ` + badPort,
		},
		{
			name:    "non-numeric port is refused",
			env:     map[string]string{"NAME": "Gopher", "PORT": "abc"},
			wantErr: `PORT="abc" is not a valid port: ` + badPort,
		},
		{
			name:    "empty NAME is refused",
			env:     map[string]string{"PORT": "9090"},
			wantErr: "NAME is not set: set it to the name to greet",
		},
		{
			name:    "every problem is reported at once",
			env:     map[string]string{"PORT": "abc"},
			wantErr: "NAME is not set: set it to the name to greet\n" + `PORT="abc" is not a valid port: ` + badPort,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadConfig(func(key string) string { return tt.env[key] })
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("loadConfig() = %+v, want error %q", got, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("error = %q, want %q", err.Error(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadConfig() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("loadConfig() = %+v, want %+v", got, tt.want)
			}
			if got.address() != tt.wantAddress {
				t.Errorf("address() = %q, want %q", got.address(), tt.wantAddress)
			}
		})
	}
}

// TestRunFinishesInFlightRequestOnShutdown holds the response of one request
// on the wire while another connection sits idle, cancels the context, and
// checks that run closes the listener and the idle connection but keeps the
// busy one open, lets the held request complete with 200 and returns nil.
func TestRunFinishesInFlightRequestOnShutdown(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newTrackingListener(inner)
	addr := inner.Addr().String()
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- run(ctx, config{name: "Gopher", port: 0}, ln, logger) }()

	idle := get(t, "http://"+addr+healthPath)
	if got := receive(t, idle, "the health response"); got.err != nil || got.status != http.StatusOK || got.body != "ok" {
		t.Fatalf("health response = %d %q %v, want 200 \"ok\" <nil>", got.status, got.body, got.err)
	}
	idleConn := receive(t, ln.accepted, "the idle connection")

	ln.holdWrites.Store(true)
	inFlight := get(t, "http://"+addr+"/hello/")
	busyConn := receive(t, ln.accepted, "the in-flight connection")
	waitFor(t, busyConn.writeStarted, "the server to start writing the in-flight response")

	cancel()
	waitFor(t, ln.closed, "run to close the listener")
	waitFor(t, idleConn.closed, "run to close the idle connection")
	select {
	case <-busyConn.closed:
		t.Fatal("run closed the connection of the in-flight request")
	case err := <-runErr:
		t.Fatalf("run returned %v while a request was still in flight", err)
	default:
	}

	close(busyConn.releaseWrites)
	got := receive(t, inFlight, "the in-flight response")
	if got.err != nil {
		t.Fatalf("in-flight request failed: %v", got.err)
	}
	if got.status != http.StatusOK || got.body != "Hello Gopher" {
		t.Errorf("in-flight response = %d %q, want 200 %q", got.status, got.body, "Hello Gopher")
	}
	if err := receive(t, runErr, "run to return"); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		_ = conn.Close()
		t.Errorf("dialing %s after shutdown succeeded, want connection refused", addr)
	}

	wantLogs := []map[string]any{
		{"level": "INFO", "msg": "serving", "address": addr, "name": "Gopher"},
		{"level": "INFO", "msg": "request", "method": "GET", "path": "/healthz", "status": float64(200)},
		{"level": "INFO", "msg": "request", "method": "GET", "path": "/hello/", "status": float64(200)},
		{"level": "INFO", "msg": "shutting down", "reason": "context canceled", "timeout": "10s"},
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != len(wantLogs) {
		t.Fatalf("got %d log lines, want %d:\n%s", len(lines), len(wantLogs), logs.String())
	}
	for i, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %d is not JSON: %v: %s", i, err, line)
		}
		for key, want := range wantLogs[i] {
			if entry[key] != want {
				t.Errorf("log line %d: %s = %v, want %v (line %s)", i, key, entry[key], want, line)
			}
		}
	}
}

// response is the outcome of a request made by get.
type response struct {
	status int
	body   string
	err    error
}

// get sends a GET to url on a connection of its own and delivers the outcome
// on the returned channel.
func get(t *testing.T, url string) <-chan response {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan response, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			out <- response{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		out <- response{status: resp.StatusCode, body: string(body), err: err}
	}()
	return out
}

func TestRunReportsServeFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))

	err = run(t.Context(), config{name: "Gopher", port: 0}, ln, logger)
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("run() = %v, want an error wrapping net.ErrClosed", err)
	}
	if want := "serving on " + ln.Addr().String() + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("run() error = %q, want prefix %q", err.Error(), want)
	}
}

// trackingListener hands every accepted connection to the test, reports when
// it is closed, and, while holdWrites is set, accepts connections whose writes
// wait until the test releases them.
type trackingListener struct {
	net.Listener
	holdWrites atomic.Bool
	accepted   chan *trackedConn
	closed     chan struct{}
	closeOnce  sync.Once
}

func newTrackingListener(inner net.Listener) *trackingListener {
	return &trackingListener{
		Listener: inner,
		accepted: make(chan *trackedConn, 8),
		closed:   make(chan struct{}),
	}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tracked := &trackedConn{
		Conn:          conn,
		holdWrites:    l.holdWrites.Load(),
		writeStarted:  make(chan struct{}),
		releaseWrites: make(chan struct{}),
		closed:        make(chan struct{}),
	}
	l.accepted <- tracked
	return tracked, nil
}

func (l *trackingListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// trackedConn reports when it is closed and, if holdWrites is set, reports
// its first write and holds it until releaseWrites is closed.
type trackedConn struct {
	net.Conn
	holdWrites    bool
	writeStarted  chan struct{}
	releaseWrites chan struct{}
	closed        chan struct{}
	startOnce     sync.Once
	closeOnce     sync.Once
}

func (c *trackedConn) Write(b []byte) (int, error) {
	if c.holdWrites {
		c.startOnce.Do(func() { close(c.writeStarted) })
		<-c.releaseWrites
	}
	return c.Conn.Write(b)
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { close(c.closed) })
	return err
}

// syncBuffer is a bytes.Buffer safe for the server goroutines to log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitTimeout bounds every wait so a broken shutdown fails the test instead of hanging it.
const waitTimeout = 10 * time.Second

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
