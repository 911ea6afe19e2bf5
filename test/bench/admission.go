package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// variant is one way the API server admits a Welcome.
type variant struct {
	name  string
	group string
	// bothCalled sends the sample with an empty serviceType, which the CRD's schema does not
	// default, and an image, which only the validating webhook can judge: the matchConditions
	// send it to both webhooks, as every create went before they could tell.
	bothCalled bool
}

var admissionVariants = []variant{
	{name: "bare CRD", group: bareGroup},
	{name: "webhooks", group: "auth.seedlabs.dev"},
	{name: "webhooks, both called", group: "auth.seedlabs.dev", bothCalled: true},
	{name: "VAP", group: policyGroup},
	{name: "VAP+MAP", group: mutatingPolicyGroup},
	{name: "trivial webhooks", group: trivialGroup},
}

// bothCalledImage is an image any image policy of the bench admits.
const bothCalledImage = "ghcr.io/seedlabs/welcome-web:v1"

// forBothWebhooks is the sample with what sends it to both webhooks (bothCalled).
func forBothWebhooks(sample map[string]any) map[string]any {
	spec := map[string]any{}
	if given, ok := sample["spec"].(map[string]any); ok {
		maps.Copy(spec, given)
	}
	spec["serviceType"], spec["image"] = "", bothCalledImage
	return map[string]any{"spec": spec}
}

// admissionSettings size the admission comparison.
type admissionSettings struct {
	rounds      int
	requests    int
	concurrency []int
}

// latencyTrials are p50 and p99 per round, in milliseconds.
type latencyTrials struct{ p50, p99 trials }

// admissionKey names one cell of the comparison.
type admissionKey struct {
	op          string
	concurrency int
	variant     string
}

// admissionResult is the admission comparison's trials.
type admissionResult struct {
	settings admissionSettings
	cells    map[admissionKey]*latencyTrials
	// webhookMeans is kube-apiserver's own mean time per call of each of our webhooks.
	webhookMeans map[string]string
}

const admissionNamespace = "bench-admission"

// apiClient sends prepared requests to the API server, with nothing on the client side but HTTP.
type apiClient struct {
	host string
	http *http.Client
}

func newAPIClient(cfg *rest.Config) (*apiClient, error) {
	cfg = rest.CopyConfig(cfg)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &apiClient{host: strings.TrimSuffix(cfg.Host, "/"), http: httpClient}, nil
}

func (a *apiClient) do(ctx context.Context, method, path, contentType string, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, a.host+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	status, reply, err := roundTrip(a.http, req)
	if err == nil && status != want {
		err = fmt.Errorf("%s %s: HTTP %d: %s", method, path, status, reply)
	}
	return err
}

func welcomesPath(group string) string {
	return "/apis/" + group + "/v1/namespaces/" + admissionNamespace + "/welcomes"
}

// welcomeJSON is the Welcome sample under name in group.
func welcomeJSON(sample map[string]any, group, name string) []byte {
	obj := map[string]any{
		"apiVersion": group + "/v1",
		"kind":       "Welcome",
		"metadata":   map[string]any{"name": name, "namespace": admissionNamespace},
		"spec":       sample["spec"],
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return data
}

// runAdmission compares server-side dry-run creates and updates of the Welcome sample across the
// variants, in interleaved rounds: each round runs every variant once, in a rotated order.
func runAdmission(ctx context.Context, c *cluster, s admissionSettings, sample map[string]any) (*admissionResult, error) {
	api, err := newAPIClient(c.config)
	if err != nil {
		return nil, err
	}
	if err := c.createNamespace(ctx, admissionNamespace); err != nil {
		return nil, err
	}
	maxConcurrency := 0
	for _, n := range s.concurrency {
		maxConcurrency = max(maxConcurrency, n)
	}
	// One stored Welcome per worker and variant, for the updates. A CRD may still be on its way
	// to being served.
	for vi, v := range admissionVariants {
		for w := range maxConcurrency {
			body := welcomeJSON(sample, v.group, storedName(vi, w))
			deadline := time.Now().Add(30 * time.Second)
			for {
				err := api.do(ctx, http.MethodPost, welcomesPath(v.group), "application/json", body, http.StatusCreated)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					return nil, err
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if err := waitForPolicies(ctx, api, sample); err != nil {
		return nil, err
	}
	if err := waitForTrivialWebhooks(ctx, api, c.trivial, sample); err != nil {
		return nil, err
	}
	before, err := webhookAdmissionMetrics(ctx, api)
	if err != nil {
		return nil, err
	}

	res := &admissionResult{settings: s, cells: map[admissionKey]*latencyTrials{}}
	seq := 0
	for round := -1; round < s.rounds; round++ { // round -1 warms up and is not kept
		for _, op := range []string{"create", "update"} {
			for _, n := range s.concurrency {
				for i := range admissionVariants {
					vi := (i + max(round, 0)) % len(admissionVariants)
					v := admissionVariants[vi]
					body := sample
					if v.bothCalled {
						body = forBothWebhooks(sample)
					}
					latencies, err := admissionLoad(ctx, api, v, vi, op, n, s.requests, body, &seq)
					if err != nil {
						return nil, err
					}
					if round < 0 {
						continue
					}
					key := admissionKey{op, n, v.name}
					cell := res.cells[key]
					if cell == nil {
						cell = &latencyTrials{}
						res.cells[key] = cell
					}
					cell.p50 = append(cell.p50, milliseconds(percentile(latencies, 50)))
					cell.p99 = append(cell.p99, milliseconds(percentile(latencies, 99)))
				}
			}
		}
	}
	after, err := webhookAdmissionMetrics(ctx, api)
	if err != nil {
		return nil, err
	}
	res.webhookMeans = map[string]string{}
	for name, a := range after {
		b := before[name]
		if n := a.count - b.count; n > 0 {
			res.webhookMeans[name] = fmt.Sprintf("%.0f calls, mean %.3f ms", n, 1000*(a.sum-b.sum)/n)
		}
	}
	return res, nil
}

// admissionLoad sends requests dry-run creates (or updates of the stored Welcomes) of variant v
// from n workers and returns each request's latency.
func admissionLoad(ctx context.Context, api *apiClient, v variant, vi int, op string, n, requests int, sample map[string]any, seq *int) ([]time.Duration, error) {
	bodies := make([][]byte, requests)
	paths := make([]string, requests)
	for i := range requests {
		*seq++
		switch op {
		case "create":
			paths[i] = welcomesPath(v.group) + "?dryRun=All"
			bodies[i] = welcomeJSON(sample, v.group, fmt.Sprintf("w-%d", *seq))
		default:
			paths[i] = welcomesPath(v.group) + "/" + storedName(vi, i%n) + "?dryRun=All"
			bodies[i] = fmt.Appendf(nil, `{"spec":{"name":"Ada %d"}}`, *seq)
			if v.bothCalled {
				bodies[i] = fmt.Appendf(nil, `{"spec":{"name":"Ada %d","serviceType":"","image":%q}}`, *seq, bothCalledImage)
			}
		}
	}
	latencies := make([]time.Duration, requests)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := w; i < requests; i += n {
				start := time.Now()
				var err error
				if op == "create" {
					err = api.do(ctx, http.MethodPost, paths[i], "application/json", bodies[i], http.StatusCreated)
				} else {
					err = api.do(ctx, http.MethodPatch, paths[i], "application/merge-patch+json", bodies[i], http.StatusOK)
				}
				latencies[i] = time.Since(start)
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return latencies, errors.Join(errs...)
}

// storedName names the Welcome worker w of variant vi updates.
func storedName(vi, w int) string { return fmt.Sprintf("stored-%d-%d", vi, w) }

// waitForPolicies waits until the API server enforces the policies: an invalid Welcome is refused in
// both policy groups, and the mutating policy fills the defaults.
func waitForPolicies(ctx context.Context, api *apiClient, sample map[string]any) error {
	bad := map[string]any{"spec": map[string]any{"name": "Ada", "port": 0}}
	deadline := time.Now().Add(time.Minute)
	for {
		var pending []string
		for _, g := range []string{policyGroup, mutatingPolicyGroup} {
			err := api.do(ctx, http.MethodPost, welcomesPath(g)+"?dryRun=All", "application/json",
				welcomeJSON(bad, g, "invalid"), http.StatusCreated)
			if err == nil {
				pending = append(pending, "the ValidatingAdmissionPolicy in "+g)
			}
		}
		defaulted, err := dryRunCreate(ctx, api, mutatingPolicyGroup, sample)
		if err != nil {
			return err
		}
		if port, _ := defaulted["port"].(float64); port != 8088 {
			pending = append(pending, "the MutatingAdmissionPolicy")
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not enforced within a minute: %s", strings.Join(pending, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForTrivialWebhooks waits until a create in trivialGroup calls both trivial webhooks.
func waitForTrivialWebhooks(ctx context.Context, api *apiClient, t *trivialWebhooks, sample map[string]any) error {
	deadline := time.Now().Add(time.Minute)
	for {
		before := t.calls.Load()
		if _, err := dryRunCreate(ctx, api, trivialGroup, sample); err != nil {
			return err
		}
		if t.calls.Load()-before == 2 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the trivial webhooks were not called within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dryRunCreate(ctx context.Context, api *apiClient, group string, sample map[string]any) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.host+welcomesPath(group)+"?dryRun=All",
		bytes.NewReader(welcomeJSON(sample, group, "probe")))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := api.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var obj struct {
		Spec map[string]any `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		return nil, err
	}
	return obj.Spec, nil
}

type sumCount struct{ sum, count float64 }

// webhookAdmissionMetrics reads kube-apiserver's apiserver_admission_webhook_admission_duration_seconds
// sum and count per webhook name.
func webhookAdmissionMetrics(ctx context.Context, api *apiClient) (map[string]sumCount, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.host+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	_, body, err := roundTrip(api.http, req)
	if err != nil {
		return nil, err
	}
	const metric = "apiserver_admission_webhook_admission_duration_seconds_"
	out := map[string]sumCount{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		suffix, labelsAndValue, ok := strings.Cut(rest, "{")
		if !ok || (suffix != "sum" && suffix != "count") {
			continue
		}
		labels, value, _ := strings.Cut(labelsAndValue, "} ")
		name := labelOf(labels, "name")
		var v float64
		if _, err := fmt.Sscan(value, &v); err != nil {
			continue
		}
		sc := out[name]
		if suffix == "sum" {
			sc.sum += v
		} else {
			sc.count += v
		}
		out[name] = sc
	}
	return out, nil
}

func labelOf(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+`="`); ok {
			return strings.TrimSuffix(v, `"`)
		}
	}
	return ""
}
