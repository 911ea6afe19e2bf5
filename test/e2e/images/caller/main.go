// Command e2e-caller is the end-to-end test's caller of the webhook port from a pod, as anyone
// who can reach it could call it. Each call dials $TARGET (host:port) with TLS, without verifying
// the server, sends the headers of a POST to $WEBHOOK_PATH with a Content-Length of
// $CONTENT_LENGTH bytes, then only $SEND bytes of that body, and waits for whatever comes back.
//
// $MODE says what it does:
//   - probe: one call without a client certificate, then one with each pair of $CLIENT_PAIRS (a
//     JSON object of name to {"cert": PEM, "key": PEM}), each waiting 3 s after the handshake for
//     the server to refuse the certificate; it prints one JSON line per call, how it ended, and
//     exits.
//   - stall: keeps $CONNECTIONS such calls open at once, each dialled again once the server ends
//     it (but not sooner than a second after it was dialled), until SIGTERM; every
//     $REPORT_SECONDS it prints one JSON line of counts.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Call is how one call ended, as probe prints it.
type Call struct {
	Name string `json:"name"`
	// Stage is where it ended: "dial", "handshake", "request" (sending it), "answer" (reading
	// the answer) or "answered".
	Stage  string `json:"stage"`
	Error  string `json:"error,omitempty"`
	Status int    `json:"status,omitempty"`
	// Sent is how many bytes of the body were sent.
	Sent    int     `json:"sent"`
	Seconds float64 `json:"seconds"`
}

// Counts are what stall prints: the calls made so far and how they ended.
type Counts struct {
	// Open is how many calls are open now: sent, and not yet answered or ended by the server.
	Open int `json:"open"`
	// MostOpen is the most calls that were open at once.
	MostOpen int `json:"mostOpen"`
	// Opened counts the calls sent so far; DialErrors, the connections that could not be made;
	// Failed, those that failed before the call was sent (the handshake, say).
	Opened     int `json:"opened"`
	DialErrors int `json:"dialErrors"`
	Failed     int `json:"failed"`
	// Answered counts the calls the server answered, by status code; Cut, those it ended without
	// an answer.
	Answered map[string]int `json:"answered"`
	Cut      int            `json:"cut"`
	// LongestSeconds is the longest a call was held open before the server ended it.
	LongestSeconds float64 `json:"longestSeconds"`
}

type settings struct {
	target, path  string
	contentLength int
	send          int
	// alertWait is how long a call waits, after the handshake, for the server to refuse it.
	alertWait time.Duration
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	s := settings{target: os.Getenv("TARGET"), path: os.Getenv("WEBHOOK_PATH")}
	if s.target == "" || s.path == "" {
		return errors.New("TARGET and WEBHOOK_PATH must be set")
	}
	var err error
	if s.contentLength, err = number("CONTENT_LENGTH", 7<<20); err != nil {
		return err
	}
	if s.send, err = number("SEND", 64<<10); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch os.Getenv("MODE") {
	case "probe":
		s.alertWait = 3 * time.Second
		return probe(ctx, s)
	case "stall":
		return stall(ctx, s)
	default:
		return fmt.Errorf("MODE=%q: want probe or stall", os.Getenv("MODE"))
	}
}

func number(name string, fallback int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return fallback, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a whole number", name, v)
	}
	return n, nil
}

func probe(ctx context.Context, s settings) error {
	var pairs map[string]struct{ Cert, Key string }
	if v := os.Getenv("CLIENT_PAIRS"); v != "" {
		if err := json.Unmarshal([]byte(v), &pairs); err != nil {
			return fmt.Errorf("CLIENT_PAIRS: %w", err)
		}
	}
	calls := []Call{{Name: "none"}}
	certificates := map[string]tls.Certificate{}
	for name, pair := range pairs {
		cert, err := tls.X509KeyPair([]byte(pair.Cert), []byte(pair.Key))
		if err != nil {
			return fmt.Errorf("CLIENT_PAIRS %s: %w", name, err)
		}
		certificates[name] = cert
		calls = append(calls, Call{Name: name})
	}
	slices.SortStableFunc(calls[1:], func(a, b Call) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range calls {
		config := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // Only the server's checks of its caller matter here.
		if cert, ok := certificates[c.Name]; ok {
			config.Certificates = []tls.Certificate{cert}
		}
		ended := call(ctx, s, config, 30*time.Second, nil)
		ended.Name = c.Name
		line, err := json.Marshal(ended)
		if err != nil {
			return err
		}
		fmt.Println(string(line))
	}
	return nil
}

// call makes one call and waits up to wait for it to end; opened, when set, is called once the
// headers and the part of the body are sent.
func call(ctx context.Context, s settings, config *tls.Config, wait time.Duration, opened func()) Call {
	start := time.Now()
	ended := func(c Call, err error) Call {
		c.Seconds = time.Since(start).Seconds()
		if err != nil {
			c.Error = err.Error()
		}
		return c
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	raw, err := dialer.DialContext(ctx, "tcp", s.target)
	if err != nil {
		return ended(Call{Stage: "dial"}, err)
	}
	conn := tls.Client(raw, config)
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_ = conn.SetDeadline(start.Add(wait))
	if err := conn.HandshakeContext(ctx); err != nil {
		return ended(Call{Stage: "handshake"}, err)
	}
	// In TLS 1.3 the client's handshake ends before the server has checked the client's
	// certificate: a refusal comes as an alert right after it, which a request written at once
	// would meet as a broken pipe. Waiting a moment for it first tells the two apart.
	if s.alertWait > 0 {
		_ = conn.SetReadDeadline(time.Now().Add(s.alertWait))
		var none [1]byte
		if _, err := conn.Read(none[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return ended(Call{Stage: "handshake"}, err)
		}
		_ = conn.SetDeadline(start.Add(wait))
	}
	header := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		s.path, s.target, s.contentLength)
	// The body begins as an AdmissionReview would, and never ends.
	prefix := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":"`
	body := (prefix + strings.Repeat("a", max(0, s.send-len(prefix))))[:min(s.send, s.contentLength)]
	if _, err := conn.Write([]byte(header)); err != nil {
		return ended(Call{Stage: "request"}, err)
	}
	if n, err := conn.Write([]byte(body)); err != nil {
		return ended(Call{Stage: "request", Sent: n}, err)
	}
	sent := len(body)
	if opened != nil {
		opened()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return ended(Call{Stage: "answer", Sent: sent}, err)
	}
	_ = resp.Body.Close()
	return ended(Call{Stage: "answered", Status: resp.StatusCode, Sent: sent}, nil)
}

func stall(ctx context.Context, s settings) error {
	connections, err := number("CONNECTIONS", 100)
	if err != nil {
		return err
	}
	every, err := number("REPORT_SECONDS", 5)
	if err != nil {
		return err
	}
	var (
		mu     sync.Mutex
		counts = Counts{Answered: map[string]int{}}
	)
	report := func() {
		mu.Lock()
		line, err := json.Marshal(counts)
		mu.Unlock()
		if err == nil {
			fmt.Println(string(line))
		}
	}
	config := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // Only the server's checks of its caller matter here.
	var wg sync.WaitGroup
	for range connections {
		wg.Go(func() {
			for ctx.Err() == nil {
				dialled := time.Now()
				opened := false
				ended := call(ctx, s, config, 10*time.Minute, func() {
					mu.Lock()
					opened = true
					counts.Open++
					counts.Opened++
					counts.MostOpen = max(counts.MostOpen, counts.Open)
					mu.Unlock()
				})
				mu.Lock()
				switch {
				case ended.Stage == "dial":
					counts.DialErrors++
				case !opened:
					counts.Failed++
				case ended.Stage == "answered":
					counts.Answered[strconv.Itoa(ended.Status)]++
				case ctx.Err() == nil:
					counts.Cut++
				}
				if opened {
					counts.Open--
					if ctx.Err() == nil {
						counts.LongestSeconds = max(counts.LongestSeconds, ended.Seconds)
					}
				}
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(time.Until(dialled.Add(time.Second))):
				}
			}
		})
	}
	ticker := time.NewTicker(time.Duration(max(every, 1)) * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			report()
			return nil
		case <-ticker.C:
			report()
		}
	}
}
