package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// kindUnderTest is one of the operator's kinds, with its sample and its webhooks' paths.
type kindUnderTest struct {
	kind     string
	sample   string
	resource metav1.GroupVersionResource
	mutate   string
	validate string
}

var kindsUnderTest = []kindUnderTest{
	{"Welcome", "auth_v1_welcome.yaml", metav1.GroupVersionResource{Group: "auth.seedlabs.dev", Version: "v1", Resource: "welcomes"},
		"/mutate-auth-seedlabs-dev-v1-welcome", "/validate-auth-seedlabs-dev-v1-welcome"},
	{"Memcached", "cache_v1_memcached.yaml", metav1.GroupVersionResource{Group: "cache.seedlabs.dev", Version: "v1", Resource: "memcacheds"},
		"/mutate-cache-seedlabs-dev-v1-memcached", "/validate-cache-seedlabs-dev-v1-memcached"},
	{"DeployObject", "app_v1_deployobject.yaml", metav1.GroupVersionResource{Group: "app.seedlabs.dev", Version: "v1", Resource: "deployobjects"},
		"/mutate-app-seedlabs-dev-v1-deployobject", "/validate-app-seedlabs-dev-v1-deployobject"},
}

// handlerSettings size the handler comparison.
type handlerSettings struct {
	rounds      int
	duration    time.Duration
	concurrency []int
}

// handlerKey names one cell of the handler comparison.
type handlerKey struct {
	target      string
	keepAlive   bool
	concurrency int
}

// handlerTrials are one cell's throughput (requests/s) and latency (µs) per round.
type handlerTrials struct{ throughput, p50, p99 trials }

type handlerResult struct {
	settings handlerSettings
	targets  []string
	cells    map[handlerKey]*handlerTrials
}

// target is one endpoint the handler comparison loads.
type target struct {
	name string
	url  string
	body []byte
}

// runHandlers serves the admission webhooks as the manager does (controller-runtime's webhook
// server, TLS 1.2+, HTTP/1.1) and the trivial handler from a stdlib TLS server, in this process,
// and loads each with AdmissionReviews of the samples over keep-alive and new connections.
func runHandlers(ctx context.Context, s handlerSettings, root, workDir string) (*handlerResult, error) {
	ca, err := certs.NewCA("handler bench CA", time.Hour)
	if err != nil {
		return nil, err
	}
	pair, err := ca.NewServingPair([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(workDir, "handler-certs")
	if err := pair.WriteDir(certDir, ca.CertPEM); err != nil {
		return nil, err
	}
	tlsOpts := func(c *tls.Config) { c.MinVersion, c.NextProtos = tls.VersionTLS12, []string{"http/1.1"} }

	ours, err := freeAddress()
	if err != nil {
		return nil, err
	}
	host, portText, _ := net.SplitHostPort(ours)
	port, _ := strconv.Atoi(portText)
	server := webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir, TLSOpts: []func(*tls.Config){tlsOpts}})
	imagePolicy, err := webhooks.NewImagePolicy(fixtures.AllowedRegistries)
	if err != nil {
		return nil, err
	}
	for path, h := range webhooks.Handlers(scheme.New(), webhooks.Options{Policy: webhooks.StaticPolicy{Policy: webhooks.DefaultPolicy(imagePolicy)}}) {
		server.Register(path, h)
	}
	ctx, cancel := context.WithCancel(ctx)
	serverDone := make(chan error, 1)
	serverStopped := make(chan struct{})
	go func() {
		serverDone <- server.Start(ctx)
		close(serverStopped)
	}()
	// The server stops before its certificates are removed.
	defer func() {
		cancel()
		<-serverStopped
	}()

	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, err
	}
	trivialListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	trivialTLS := &tls.Config{Certificates: []tls.Certificate{cert}}
	tlsOpts(trivialTLS)
	trivialServer := &http.Server{Handler: fixtures.TrivialAdmission, TLSConfig: trivialTLS, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = trivialServer.Serve(tls.NewListener(trivialListener, trivialTLS)) }()
	defer func() { _ = trivialServer.Close() }()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	if err := waitServing(ours, pool, serverDone); err != nil {
		return nil, err
	}

	targets, err := handlerTargets(root, "https://"+ours, "https://"+trivialListener.Addr().String(), pool)
	if err != nil {
		return nil, err
	}
	res := &handlerResult{settings: s, cells: map[handlerKey]*handlerTrials{}}
	for _, t := range targets {
		res.targets = append(res.targets, t.name)
	}
	for round := -1; round < s.rounds; round++ {
		for _, keepAlive := range []bool{true, false} {
			for _, n := range s.concurrency {
				for i := range targets {
					t := targets[(i+max(round, 0))%len(targets)]
					count, latencies, err := loadHandler(ctx, t, pool, keepAlive, n, s.duration)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", t.name, err)
					}
					if round < 0 {
						continue
					}
					key := handlerKey{t.name, keepAlive, n}
					cell := res.cells[key]
					if cell == nil {
						cell = &handlerTrials{}
						res.cells[key] = cell
					}
					cell.throughput = append(cell.throughput, float64(count)/s.duration.Seconds())
					cell.p50 = append(cell.p50, float64(percentile(latencies, 50).Microseconds()))
					cell.p99 = append(cell.p99, float64(percentile(latencies, 99).Microseconds()))
				}
			}
		}
	}
	return res, nil
}

func waitServing(address string, pool *x509.CertPool, done <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err == nil {
			return conn.Close()
		}
		select {
		case err := <-done:
			return fmt.Errorf("the webhook server stopped: %w", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return errors.New("the webhook server did not serve within 30s")
}

// handlerTargets are the trivial handler and each kind's defaulting and validating webhook, with a
// create of the kind's sample; the validating webhook gets the sample as defaulting left it.
func handlerTargets(root, ours, trivial string, pool *x509.CertPool) ([]target, error) {
	targets := []target{}
	for _, k := range kindsUnderTest {
		sample, err := readSampleJSON(filepath.Join(root, "config", "samples", k.sample))
		if err != nil {
			return nil, err
		}
		create := admissionReview(k, sample)
		if len(targets) == 0 {
			targets = append(targets, target{"trivial stdlib", trivial + "/", create})
		}
		reply, err := postOnce(ours+k.mutate, create, pool)
		if err != nil {
			return nil, err
		}
		defaulted := sample
		if len(reply.Response.Patch) > 0 {
			patch, err := jsonpatch.DecodePatch(reply.Response.Patch)
			if err != nil {
				return nil, err
			}
			if defaulted, err = patch.Apply(sample); err != nil {
				return nil, err
			}
		}
		targets = append(targets,
			target{k.kind + " mutate", ours + k.mutate, create},
			target{k.kind + " validate", ours + k.validate, admissionReview(k, defaulted)})
	}
	return targets, nil
}

func admissionReview(k kindUnderTest, object []byte) []byte {
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "5a1c0b8e-0000-4000-8000-000000000001",
			Kind:      metav1.GroupVersionKind{Group: k.resource.Group, Version: k.resource.Version, Kind: k.kind},
			Resource:  k.resource,
			Namespace: "default",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: object},
		},
	})
	if err != nil {
		panic(err)
	}
	return body
}

func postOnce(url string, body []byte, pool *x509.CertPool) (*admissionv1.AdmissionReview, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var reply admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		return nil, err
	}
	if reply.Response == nil || !reply.Response.Allowed {
		return nil, fmt.Errorf("%s refused the sample: %+v", url, reply.Response)
	}
	return &reply, nil
}

// loadHandler posts t's body from n workers for d, over one kept-alive connection per worker or a
// new connection per request, and returns how many completed and their latencies.
func loadHandler(ctx context.Context, t target, pool *x509.CertPool, keepAlive bool, n int, d time.Duration) (int, []time.Duration, error) {
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: n,
	}
	defer transport.CloseIdleConnections()
	c := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	var (
		completed atomic.Int64
		mu        sync.Mutex
		all       []time.Duration
		firstErr  error
		wg        sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for range n {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				start := time.Now()
				err := postAllowed(ctx, c, t.url, t.body)
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(start))
				completed.Add(1)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return int(completed.Load()), all, firstErr
}

var allowed = []byte(`"allowed":true`)

func postAllowed(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	status, reply, err := roundTrip(c, req)
	if err == nil && (status != http.StatusOK || !bytes.Contains(reply, allowed)) {
		err = fmt.Errorf("HTTP %d: %s", status, reply)
	}
	return err
}

func readSampleJSON(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(data)
}
