package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/webhooks"
)

// conversionSettings size the conversion section.
type conversionSettings struct {
	// perKind is how many Welcomes and Memcacheds the reads, writes and migrations work on.
	perKind int
	// rounds of the reads and writes, each running every variant once in a rotated order.
	rounds int
	// lists, gets and writes are the requests of one variant in one round.
	lists, gets, writes int
	// migrations is how many times each CRD's storage is moved to v1alpha1 and back.
	migrations int
	// bigList is how many Welcomes the unpaged LISTs read, at least.
	bigList int
	workers int
}

// conversionVariant is one kind at one version: the Welcome converts through /convert, the
// Memcached (conversion None) is the baseline.
type conversionVariant struct {
	kind, crd, plural, group, version string
}

func (v conversionVariant) name() string { return v.kind + " " + v.version }

func (v conversionVariant) path() string {
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", v.group, v.version, conversionNamespace, v.plural)
}

var (
	welcomeCRD   = conversionVariant{kind: "Welcome", crd: "welcomes.auth.seedlabs.dev", plural: "welcomes", group: "auth.seedlabs.dev"}
	memcachedCRD = conversionVariant{kind: "Memcached", crd: "memcacheds.cache.seedlabs.dev", plural: "memcacheds", group: "cache.seedlabs.dev"}
)

func (v conversionVariant) at(version string) conversionVariant { v.version = version; return v }

// conversionVariants are the four the reads and writes compare, in their table's order.
var conversionVariants = []conversionVariant{
	welcomeCRD.at("v1"), welcomeCRD.at("v1alpha1"), memcachedCRD.at("v1"), memcachedCRD.at("v1alpha1"),
}

// conversionCell is one variant's request of one kind: its latencies per round (the median of
// the round's requests, in ms) and the /convert calls per request.
type conversionCell struct {
	p50   trials
	calls trials
}

type migrationResult struct {
	// seconds from the CRD's storage change until its status.storedVersions is that version alone.
	seconds trials
	// rewritten is the objects the manager rewrote, and calls the /convert calls, per migration.
	rewritten, calls trials
	// otherResults counts the objects of every migration by the storage migration's other results
	// (current, gone, conflict, failed).
	otherResults map[string]float64
}

type bigListResult struct {
	// seconds until the unpaged LIST was answered; settled, after a change of the CRD, until the
	// new watch cache had converted every Welcome; heap the manager's heap in use added at its peak
	// meanwhile (MiB); calls the /convert calls.
	seconds, settled, heap, calls trials
}

type conversionResult struct {
	settings conversionSettings
	// cells by request ("LIST", "GET", "create", "patch") and variant name.
	cells map[string]map[string]*conversionCell
	// migrations by CRD kind and target version.
	migrations map[string]*migrationResult
	// bigLists by variant (bigListVariants).
	bigLists map[string]*bigListResult
}

const conversionNamespace = "bench-conversion"

// runConversion measures what the conversion webhook costs, against the Memcached, whose versions
// convert with None: reads and writes at v1 and v1alpha1 of objects stored at v1, with the /convert
// calls each makes; the leader's storage migration of perKind objects each way; and an unpaged
// LIST of bigList Welcomes, with the manager's heap meanwhile, from kube-apiserver's watch caches
// and just after a change of the CRD, which has them converted again. No manager runs when it is
// called, and none when it returns.
func runConversion(ctx context.Context, c *cluster, mf managerFlags, s conversionSettings, smp *samples,
	logf func(string, ...any),
) (res *conversionResult, startups []time.Duration, err error) {
	res = &conversionResult{settings: s, cells: map[string]map[string]*conversionCell{},
		migrations: map[string]*migrationResult{}, bigLists: map[string]*bigListResult{}}
	api, err := newAPIClient(c.config)
	if err != nil {
		return nil, nil, err
	}
	if err := c.createNamespace(ctx, conversionNamespace); err != nil {
		return nil, nil, err
	}
	specs, err := sampleSpecs(smp)
	if err != nil {
		return nil, nil, err
	}
	var m *managerProcess
	start := func() error {
		if m, err = c.startManager(mf); err == nil {
			startups = append(startups, m.servingAfter)
		}
		return err
	}
	defer func() {
		if m != nil {
			err = errors.Join(err, m.stop())
		}
		err = errors.Join(err, deleteRun(ctx, c, conversionNamespace))
	}()

	// The migrations need the leader, whose controllers first turn the objects into Deployments
	// and Services, so that they are idle while the storage moves.
	if err := c.releaseLease(ctx, false); err != nil {
		return nil, startups, err
	}
	if err := start(); err != nil {
		return nil, startups, err
	}
	if err := c.waitForLeader(ctx); err != nil {
		return nil, startups, err
	}
	logf("conversion: %d Welcomes and %d Memcacheds, reconciled by the leader", s.perKind, s.perKind)
	converged, err := watchConverged(ctx, c, conversionNamespace, 2*s.perKind)
	if err != nil {
		return nil, startups, err
	}
	if err := forEach(2*s.perKind, s.workers, func(i int) error {
		v := []conversionVariant{welcomeCRD, memcachedCRD}[i%2].at("v1")
		return create(ctx, api, v, specs[v.kind], fmt.Sprintf("stored-%d", i/2))
	}); err != nil {
		return nil, startups, err
	}
	select {
	case err := <-converged:
		if err != nil {
			return nil, startups, err
		}
	case <-time.After(15 * time.Minute):
		return nil, startups, errors.New("the operator did not converge within 15 minutes")
	}
	if err := waitForConversion(ctx, api, welcomeCRD.at("v1alpha1").path()+"/stored-0"); err != nil {
		return nil, startups, err
	}
	// A status that reports the generation may still be followed by others (a child's status), and
	// a status write during a migration would count in it.
	if err := c.awaitNoWrites(ctx, 2*time.Second, 5*time.Minute); err != nil {
		return nil, startups, err
	}

	logf("conversion: the leader's storage migration, %d times each way", s.migrations)
	for range s.migrations {
		for _, v := range []conversionVariant{welcomeCRD, memcachedCRD} {
			for _, to := range []string{"v1alpha1", "v1"} {
				if err := res.migrate(ctx, c, m, v, to); err != nil {
					return nil, startups, fmt.Errorf("migrating %s to %s: %w", v.crd, to, err)
				}
			}
		}
	}

	// The reads and writes with the controllers idle, as the API server's cost is what is measured.
	err, m = m.stop(), nil
	if err != nil {
		return nil, startups, err
	}
	if err := c.holdLease(ctx); err != nil {
		return nil, startups, err
	}
	if err := start(); err != nil {
		return nil, startups, err
	}
	logf("conversion: reads and writes at both versions, %d rounds", s.rounds)
	for round := range s.rounds {
		for i := range conversionVariants {
			v := conversionVariants[(i+round)%len(conversionVariants)]
			if err := res.readsAndWrites(ctx, api, m, v, specs[v.kind], s, round); err != nil {
				return nil, startups, fmt.Errorf("%s: %w", v.name(), err)
			}
		}
	}

	logf("conversion: an unpaged LIST of %d Welcomes at both versions, and after a change of the CRD", s.bigList)
	if err := forEach(s.bigList-s.perKind, s.workers, func(i int) error {
		return create(ctx, api, welcomeCRD.at("v1"), specs["Welcome"], fmt.Sprintf("big-%d", i))
	}); err != nil {
		return nil, startups, err
	}
	for round := range s.rounds {
		for i := range bigListVariants {
			variant := bigListVariants[(i+round)%len(bigListVariants)]
			if err := res.bigList(ctx, c, api, m, variant, s.bigList, round); err != nil {
				return nil, startups, fmt.Errorf("the LIST at %s: %w", variant, err)
			}
		}
	}
	return res, startups, nil
}

// sampleSpecs are the Welcome and Memcached samples' specs, which both versions admit.
func sampleSpecs(smp *samples) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for kind, obj := range map[string]any{"Welcome": &smp.welcome.Spec, "Memcached": &smp.memcached.Spec} {
		spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out[kind] = spec
	}
	return out, nil
}

// create POSTs the object named name at v's version.
func create(ctx context.Context, api *apiClient, v conversionVariant, spec map[string]any, name string) error {
	body, err := json.Marshal(map[string]any{
		"apiVersion": v.group + "/" + v.version, "kind": v.kind,
		"metadata": map[string]any{"name": name, "namespace": conversionNamespace},
		"spec":     spec,
	})
	if err != nil {
		return err
	}
	return api.do(ctx, http.MethodPost, v.path(), "application/json", body, http.StatusCreated)
}

// waitForConversion waits until a read that converts succeeds: the API server takes a CRD's new
// caBundle a moment after the update that sets it.
func waitForConversion(ctx context.Context, api *apiClient, path string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := api.do(ctx, http.MethodGet, path, "", nil, http.StatusOK)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// convertCalls is how many requests the manager's /convert has answered, read once none is in
// flight: controller-runtime counts a request when its handler returns.
func convertCalls(ctx context.Context, m *managerProcess) (float64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		inFlight, err := scrape(ctx, m, "controller_runtime_webhook_requests_in_flight")
		if err != nil {
			return 0, err
		}
		busy := false
		for labels, v := range inFlight {
			busy = busy || (labelOf(labels, "webhook") == webhooks.ConvertPath && v > 0)
		}
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			return 0, errors.New("a /convert request was still in flight after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	total, err := scrape(ctx, m, "controller_runtime_webhook_requests_total")
	calls := 0.0
	for labels, v := range total {
		if labelOf(labels, "webhook") == webhooks.ConvertPath {
			calls += v
		}
	}
	return calls, err
}

// counted runs f and returns how many /convert calls it made.
func counted(ctx context.Context, m *managerProcess, f func() error) (float64, error) {
	before, err := convertCalls(ctx, m)
	if err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	after, err := convertCalls(ctx, m)
	return after - before, err
}

// timed runs f n times and returns the median latency in ms.
func timed(n int, f func(i int) error) (float64, error) {
	latencies := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := f(i); err != nil {
			return 0, err
		}
		latencies = append(latencies, time.Since(start))
	}
	return milliseconds(percentile(latencies, 50)), nil
}

// readsAndWrites measures one round of v's LISTs, GETs, creates and merge patches.
func (r *conversionResult) readsAndWrites(ctx context.Context, api *apiClient, m *managerProcess, v conversionVariant,
	spec map[string]any, s conversionSettings, round int,
) error {
	path := v.path()
	patches := map[string][]byte{
		"Welcome":   []byte(`{"spec":{"name":"Grace"}}`),
		"Memcached": []byte(`{"spec":{"size":2}}`),
	}
	name := func(i int) string { return fmt.Sprintf("written-%s-%d-%d", v.version, round, i) }
	requests := []struct {
		request string
		n       int
		do      func(i int) error
	}{
		{"LIST", s.lists, func(int) error { return api.do(ctx, http.MethodGet, path, "", nil, http.StatusOK) }},
		{"GET", s.gets, func(i int) error {
			return api.do(ctx, http.MethodGet, fmt.Sprintf("%s/stored-%d", path, i%s.perKind), "", nil, http.StatusOK)
		}},
		{"create", s.writes, func(i int) error { return create(ctx, api, v, spec, name(i)) }},
		{"patch", s.writes, func(i int) error {
			return api.do(ctx, http.MethodPatch, path+"/"+name(i), "application/merge-patch+json", patches[v.kind], http.StatusOK)
		}},
	}
	for _, req := range requests {
		var p50 float64
		calls, err := counted(ctx, m, func() (err error) {
			p50, err = timed(req.n, req.do)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", req.request, err)
		}
		byVariant := r.cells[req.request]
		if byVariant == nil {
			byVariant = map[string]*conversionCell{}
			r.cells[req.request] = byVariant
		}
		cell := byVariant[v.name()]
		if cell == nil {
			cell = &conversionCell{}
			byVariant[v.name()] = cell
		}
		cell.p50 = append(cell.p50, p50)
		cell.calls = append(cell.calls, calls/float64(req.n))
	}
	return nil
}

// migrate moves v's CRD's storage version to version and waits until the leader has migrated every
// object to it: status.storedVersions is that version alone.
func (r *conversionResult) migrate(ctx context.Context, c *cluster, m *managerProcess, v conversionVariant, version string) error {
	results := func() (map[string]float64, error) {
		objects, err := scrape(ctx, m, "webhook_operator_storage_migration_objects_total")
		out := map[string]float64{}
		for labels, count := range objects {
			if labelOf(labels, "crd") == v.crd {
				out[labelOf(labels, "result")] += count
			}
		}
		return out, err
	}
	before, err := results()
	if err != nil {
		return err
	}
	var took time.Duration
	calls, err := counted(ctx, m, func() error {
		start := time.Now()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.client.Get(ctx, client.ObjectKey{Name: v.crd}, crd); err != nil {
				return err
			}
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
			}
			return c.client.Update(ctx, crd)
		}); err != nil {
			return err
		}
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.client.Get(ctx, client.ObjectKey{Name: v.crd}, crd); err != nil {
				return err
			}
			if slices.Equal(crd.Status.StoredVersions, []string{version}) {
				took = time.Since(start)
				return nil
			}
			if err := m.wait(ctx, start.Add(5*time.Minute), 20*time.Millisecond); err != nil {
				return fmt.Errorf("storedVersions %v: %w", crd.Status.StoredVersions, err)
			}
		}
	})
	if err != nil {
		return err
	}
	after, err := results()
	if err != nil {
		return err
	}
	key := v.kind + " to " + version
	mr := r.migrations[key]
	if mr == nil {
		mr = &migrationResult{}
		r.migrations[key] = mr
	}
	mr.seconds = append(mr.seconds, took.Seconds())
	mr.rewritten = append(mr.rewritten, after["rewritten"]-before["rewritten"])
	if mr.otherResults == nil {
		mr.otherResults = map[string]float64{}
	}
	for result, n := range after {
		if result != "rewritten" {
			mr.otherResults[result] += n - before[result]
		}
	}
	mr.calls = append(mr.calls, calls)
	return nil
}

// The big LIST's variants: at each version from kube-apiserver's watch caches as they are, and at
// v1alpha1 just after a change of the CRD's spec, which has kube-apiserver build a new watch cache
// per served version: the v1alpha1 one converts every Welcome stored at v1 again, as after a CA
// injection into the conversion webhook's caBundle.
const (
	bigListWarmV1       = "v1"
	bigListWarmV1alpha1 = "v1alpha1"
	bigListCold         = "v1alpha1, just after a change of the CRD's spec"
)

var bigListVariants = []string{bigListWarmV1, bigListWarmV1alpha1, bigListCold}

// bigList LISTs every Welcome, unpaged, as variant says, and samples the manager's heap in use
// meanwhile; after a change of the CRD, until the new v1alpha1 watch cache has converted every one.
func (r *conversionResult) bigList(ctx context.Context, c *cluster, api *apiClient, m *managerProcess, variant string, objects, round int) error {
	heapInUse := func() (float64, error) {
		samples, err := scrape(ctx, m, "go_memstats_heap_inuse_bytes")
		if err != nil {
			return 0, err
		}
		if len(samples) == 0 {
			return 0, errors.New("the manager exports no go_memstats_heap_inuse_bytes")
		}
		return samples[""], nil
	}
	// From a collected heap, so that garbage of what ran before is not counted.
	if _, err := m.liveHeap(ctx); err != nil {
		return err
	}
	before, err := heapInUse()
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		peak    = before
		stop    = make(chan struct{})
		sampled = make(chan error, 1)
	)
	go func() {
		var err error
		defer func() { sampled <- err }()
		for {
			var h float64
			if h, err = heapInUse(); err != nil {
				return
			}
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	version := "v1alpha1"
	if variant == bigListWarmV1 {
		version = "v1"
	}
	var took, settled time.Duration
	calls, err := counted(ctx, m, func() error {
		callsBefore, err := convertCalls(ctx, m)
		if err != nil {
			return err
		}
		start := time.Now()
		if variant == bigListCold {
			if err := c.rewriteConversionCABundle(ctx, welcomeCRD.crd, round); err != nil {
				return err
			}
		}
		items, err := listAll(ctx, api, welcomeCRD.at(version).path(), objects)
		if err != nil {
			return err
		}
		took = time.Since(start)
		if variant != bigListCold {
			return nil
		}
		// The new v1alpha1 watch cache converts every Welcome, a call each, once a request finds
		// the API server has dropped the previous one: LISTed again until it has.
		for {
			n, err := convertCalls(ctx, m)
			if err != nil {
				return err
			}
			if n-callsBefore >= float64(items) {
				settled = time.Since(start)
				return nil
			}
			if err := m.wait(ctx, start.Add(5*time.Minute), 200*time.Millisecond); err != nil {
				return fmt.Errorf("%.0f /convert calls for %d Welcomes: %w", n-callsBefore, items, err)
			}
			if _, err := listAll(ctx, api, welcomeCRD.at(version).path(), objects); err != nil {
				return err
			}
		}
	})
	close(stop)
	if sampleErr := <-sampled; err == nil {
		err = sampleErr
	}
	if err != nil {
		return err
	}
	br := r.bigLists[variant]
	if br == nil {
		br = &bigListResult{}
		r.bigLists[variant] = br
	}
	mu.Lock()
	defer mu.Unlock()
	br.seconds = append(br.seconds, took.Seconds())
	br.settled = append(br.settled, settled.Seconds())
	br.heap = append(br.heap, (peak-before)/(1<<20))
	br.calls = append(br.calls, calls)
	return nil
}

// listAll LISTs path, unpaged, until the API server answers it, expects objects items at least,
// and returns how many there are. A LIST that finds a new watch cache still filling may be told to
// come back (HTTP 429).
func listAll(ctx context.Context, api *apiClient, path string, objects int) (int, error) {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.host+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", "application/json")
		status, body, err := roundTrip(api.http, req)
		switch {
		case err != nil:
			return 0, err
		case status == http.StatusTooManyRequests:
			time.Sleep(100 * time.Millisecond)
			continue
		case status != http.StatusOK:
			return 0, fmt.Errorf("HTTP %d: %.300s", status, body)
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return 0, err
		}
		if len(list.Items) < objects {
			return 0, fmt.Errorf("%d items, not %d", len(list.Items), objects)
		}
		return len(list.Items), nil
	}
}

// rewriteConversionCABundle writes the CRD's conversion caBundle again, with a trailing newline in
// odd rounds and without one in even ones: the same CA, and a new spec, as a CA injector's write
// of a new bundle is.
func (c *cluster) rewriteConversionCABundle(ctx context.Context, name string, round int) error {
	bundle := bytes.TrimRight(c.ca.CertPEM, "\n")
	bundle = append(bundle, '\n')
	if round%2 == 1 {
		bundle = append(bundle, '\n')
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return err
		}
		if bytes.Equal(crd.Spec.Conversion.Webhook.ClientConfig.CABundle, bundle) {
			bundle = append(bundle, '\n')
		}
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = bundle
		return c.client.Update(ctx, crd)
	})
}

// awaitNoWrites waits until the manager has written nothing for quiet, as its audit log shows.
func (c *cluster) awaitNoWrites(ctx context.Context, quiet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		offset, err := c.audit.offset()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet):
		}
		requests, err := c.audit.requests(offset)
		if err != nil {
			return err
		}
		writes := 0
		for key, n := range requests {
			if isWrite(key) {
				writes += n
			}
		}
		if writes == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager still writes after %s (%d writes in the last %s)", timeout, writes, quiet)
		}
	}
}
