package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/reconciled"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

// convergenceSettings size the convergence comparison.
type convergenceSettings struct {
	rounds  int
	perKind int
	workers int
}

type convergenceResult struct {
	settings convergenceSettings
	// plain and operator are seconds from the first create to the last object converged.
	plain, operator trials
	// requestsPerObject is the operator's API requests per custom resource by verb and resource.
	requestsPerObject []map[string]float64
	// steadyWrites is the operator's write requests from a restart to the end of its resync of
	// every object, per round, and steadyReconciles the reconciles in that time.
	steadyWrites, steadyReconciles trials
	// steadyWriteKinds names the writes of the steady state, if any.
	steadyWriteKinds []string
}

// samples are the three kinds' samples, decoded once.
type samples struct {
	welcome      authv1.Welcome
	memcached    cachev1.Memcached
	deployObject appv1.DeployObject
}

func readSamples(root string) (*samples, error) {
	s := &samples{}
	for file, into := range map[string]any{
		"auth_v1_welcome.yaml":     &s.welcome,
		"cache_v1_memcached.yaml":  &s.memcached,
		"app_v1_deployobject.yaml": &s.deployObject,
	} {
		data, err := readSampleJSON(filepath.Join(root, "config", "samples", file))
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	return s, nil
}

// object is the i-th custom resource of the run in namespace ns: the kinds take turns.
func (s *samples) object(ns string, i int) client.Object {
	name := func(prefix string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i/3), Namespace: ns}
	}
	switch i % 3 {
	case 0:
		w := s.welcome.DeepCopy()
		w.ObjectMeta = name("welcome")
		return w
	case 1:
		m := s.memcached.DeepCopy()
		m.ObjectMeta = name("memcached")
		return m
	default:
		d := s.deployObject.DeepCopy()
		d.ObjectMeta = name("deployobject")
		return d
	}
}

var crGVKs = []schema.GroupVersionKind{
	authv1.GroupVersion.WithKind("Welcome"),
	cachev1.GroupVersion.WithKind("Memcached"),
	appv1.GroupVersion.WithKind("DeployObject"),
}

// runConvergence compares, in alternating rounds, the operator turning perKind objects of each kind
// into Deployments, Services and status with a plain client making those writes itself while the
// operator's controllers are idle (the bench holds their Lease). After each operator round it
// restarts the manager and counts the writes its resync of every object makes.
func runConvergence(ctx context.Context, c *cluster, mf managerFlags, s convergenceSettings, smp *samples,
	logf func(string, ...any),
) (*convergenceResult, *managerProcess, []time.Duration, error) {
	res := &convergenceResult{settings: s}
	var startups []time.Duration
	var mgr *managerProcess
	stopManager := func() error {
		if mgr == nil {
			return nil
		}
		err := mgr.stop()
		mgr = nil
		return err
	}
	startManager := func() error {
		var err error
		if mgr, err = c.startManager(mf); err == nil {
			startups = append(startups, mgr.servingAfter)
		}
		return err
	}
	fail := func(err error) (*convergenceResult, *managerProcess, []time.Duration, error) {
		return nil, nil, startups, errors.Join(err, stopManager())
	}
	for round := range s.rounds {
		// The plain client, with the manager serving webhooks only.
		if err := stopManager(); err != nil {
			return fail(err)
		}
		if err := c.holdLease(ctx); err != nil {
			return fail(err)
		}
		if err := startManager(); err != nil {
			return fail(err)
		}
		ns := fmt.Sprintf("plain-%d", round)
		if err := c.createNamespace(ctx, ns); err != nil {
			return fail(err)
		}
		elapsed, err := plainClientRun(ctx, c, smp, ns, s)
		if err != nil {
			return fail(err)
		}
		res.plain = append(res.plain, elapsed.Seconds())
		logf("round %d: plain client %.1f s", round+1, elapsed.Seconds())
		if err := deleteRun(ctx, c, ns); err != nil {
			return fail(err)
		}

		// The operator.
		if err := c.releaseLease(ctx, true); err != nil {
			return fail(err)
		}
		before, err := c.audit.offset()
		if err != nil {
			return fail(err)
		}
		ns = fmt.Sprintf("operator-%d", round)
		if err := c.createNamespace(ctx, ns); err != nil {
			return fail(err)
		}
		if elapsed, err = operatorRun(ctx, c, smp, ns, s); err != nil {
			return fail(err)
		}
		res.operator = append(res.operator, elapsed.Seconds())
		logf("round %d: operator %.1f s", round+1, elapsed.Seconds())
		requests, err := c.audit.requests(before)
		if err != nil {
			return fail(err)
		}
		perObject := map[string]float64{}
		for key, n := range requests {
			perObject[key] = float64(n) / float64(3*s.perKind)
		}
		res.requestsPerObject = append(res.requestsPerObject, perObject)

		// Steady state: a restarted manager reconciles every object once and should write nothing.
		if err := stopManager(); err != nil {
			return fail(err)
		}
		if before, err = c.audit.offset(); err != nil {
			return fail(err)
		}
		if err := startManager(); err != nil {
			return fail(err)
		}
		if err := c.waitForLeader(ctx); err != nil {
			return fail(err)
		}
		reconciles, err := resync(ctx, mgr, 3*s.perKind)
		if err != nil {
			return fail(err)
		}
		if requests, err = c.audit.writes(before); err != nil {
			return fail(err)
		}
		writes := 0
		for key, n := range requests {
			writes += n
			res.steadyWriteKinds = append(res.steadyWriteKinds, fmt.Sprintf("%s ×%d", key, n))
		}
		res.steadyWrites = append(res.steadyWrites, float64(writes))
		res.steadyReconciles = append(res.steadyReconciles, reconciles)
		logf("round %d: resync of %.0f reconciles made %d writes", round+1, reconciles, writes)
		if err := deleteRun(ctx, c, ns); err != nil {
			return fail(err)
		}
	}
	return res, mgr, startups, nil
}

// plainClientRun creates the objects and, for each, applies the Deployment and Service the
// operator's builders make and writes a status, from s.workers workers.
func plainClientRun(ctx context.Context, c *cluster, smp *samples, ns string, s convergenceSettings) (time.Duration, error) {
	start := time.Now()
	err := forEach(3*s.perKind, s.workers, func(i int) error {
		obj := smp.object(ns, i)
		if err := c.client.Create(ctx, obj); err != nil {
			return err
		}
		deployment, service, status := reconciled.OperatorWrites(obj, testenv.WelcomeImage, testenv.MemcachedImage)
		applyOpts := apply.Options()
		if err := c.client.Apply(ctx, deployment, applyOpts...); err != nil {
			return err
		}
		if err := c.client.Apply(ctx, service, applyOpts...); err != nil {
			return err
		}
		return c.client.Status().Patch(ctx, status, client.MergeFrom(obj))
	})
	return time.Since(start), err
}

// operatorRun creates the objects from s.workers workers and waits until the operator has reported
// a status for the generation of every one; it returns the time from the first create until then.
func operatorRun(ctx context.Context, c *cluster, smp *samples, ns string, s convergenceSettings) (time.Duration, error) {
	total := 3 * s.perKind
	converged, err := watchConverged(ctx, c, ns, total)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := forEach(total, s.workers, func(i int) error { return c.client.Create(ctx, smp.object(ns, i)) }); err != nil {
		return 0, err
	}
	select {
	case err := <-converged:
		if err != nil {
			return 0, err
		}
	case <-time.After(30 * time.Minute):
		return 0, errors.New("the operator did not converge within 30 minutes")
	}
	elapsed := time.Since(start)
	return elapsed, checkChildren(ctx, c, ns, total)
}

// watchConverged watches the three kinds in ns and reports once total objects have a status whose
// observedGeneration is their generation.
func watchConverged(ctx context.Context, c *cluster, ns string, total int) (<-chan error, error) {
	wc, err := client.NewWithWatch(c.config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		done = map[string]bool{}
		out  = make(chan error, 1)
		once sync.Once
	)
	finish := func(err error) { once.Do(func() { out <- err }) }
	for _, gvk := range crGVKs {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			return nil, err
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					finish(fmt.Errorf("watching %s: %v", gvk.Kind, ev.Object))
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				if observed != u.GetGeneration() || ev.Type == watch.Deleted {
					continue
				}
				mu.Lock()
				done[gvk.Kind+"/"+u.GetName()] = true
				n := len(done)
				mu.Unlock()
				if n == total {
					finish(nil)
					return
				}
			}
		}()
	}
	return out, nil
}

// checkChildren requires exactly one Deployment and one Service controlled by each object.
func checkChildren(ctx context.Context, c *cluster, ns string, total int) error {
	owners := map[string]int{}
	var deployments appsv1.DeploymentList
	if err := c.client.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, d := range deployments.Items {
		if ref := metav1.GetControllerOf(&d); ref != nil {
			owners[string(ref.UID)]++
		}
	}
	var services corev1.ServiceList
	if err := c.client.List(ctx, &services, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, s := range services.Items {
		if ref := metav1.GetControllerOf(&s); ref != nil {
			owners[string(ref.UID)] += 100
		}
	}
	var wrong []string
	for uid, n := range owners {
		if n != 101 {
			wrong = append(wrong, fmt.Sprintf("%s has %d Deployments and %d Services", uid, n%100, n/100))
		}
	}
	if len(owners) != total || len(wrong) > 0 {
		return fmt.Errorf("%d of %d objects have children; %s", len(owners), total, strings.Join(wrong, "; "))
	}
	return nil
}

// deleteRun deletes a run's objects and the Deployments and Services made for them; no garbage
// collector runs here.
func deleteRun(ctx context.Context, c *cluster, ns string) error {
	for _, obj := range []client.Object{
		&authv1.Welcome{}, &cachev1.Memcached{}, &appv1.DeployObject{},
		&appsv1.Deployment{}, &corev1.Service{},
	} {
		if err := c.client.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("deleting every %T in %s: %w", obj, ns, err)
		}
	}
	return nil
}

// forEach calls f for 0..n-1 from workers goroutines and returns the first errors.
func forEach(n, workers int, f func(i int) error) error {
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs[w] = fmt.Errorf("object %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resync waits until the manager has reconciled at least objects objects, its work queues are
// empty and its Events are sent, and returns how many reconciles it made since it started.
func resync(ctx context.Context, m *managerProcess, objects int) (float64, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		reconcileSamples, err := scrape(ctx, m, "controller_runtime_reconcile_total")
		if err != nil {
			return 0, err
		}
		depths, err := scrape(ctx, m, "workqueue_depth")
		if err != nil {
			return 0, err
		}
		reconciles, depth := 0.0, 0.0
		for _, v := range reconcileSamples {
			reconciles += v
		}
		for _, v := range depths {
			depth += v
		}
		if reconciles >= float64(objects) && depth == 0 {
			// The event recorder sends asynchronously; give it time to.
			time.Sleep(3 * time.Second)
			return reconciles, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the manager reconciled %.0f of %d objects in 5 minutes", reconciles, objects)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape reads one metric family's samples from the manager's metrics endpoint, by label set.
func scrape(ctx context.Context, m *managerProcess, family string) (map[string]float64, error) {
	body, err := get(ctx, m.metrics, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, family)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			labels, value, _ = strings.Cut(rest[1:], "} ")
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(value), &v); err == nil {
			out[labels] = v
		}
	}
	return out, nil
}
