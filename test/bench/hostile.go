package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

const (
	hostileNamespace = "hostile"
	floodNamespace   = "flood"
	probeNamespace   = "probe"
)

// hostileSettings size what a tenant throws at the manager.
type hostileSettings struct {
	// deployments carry the operator's managed-by label, each with an env value of envBytes.
	deployments, envBytes int
	// floodRate refused creates a second, each under a new name, for floodDuration.
	floodRate     int
	floodDuration time.Duration
	// baselineManager, when set, is another manager binary started the same way with the hostile
	// Deployments stored, to compare with.
	baselineManager string
}

// processMemory is a manager process's memory: its peak RSS (VmHWM), its RSS and its live heap.
type processMemory struct {
	peakRSS, rss, heap uint64
	// converged is how long after the process started a new Welcome converged: its caches synced.
	converged time.Duration
}

type hostileResult struct {
	settings hostileSettings
	// storedBytes is the JSON of the hostile Deployments, as the API server serves them.
	storedBytes uint64
	// before is the running leader before the hostile Deployments, running with them cached.
	before, running processMemory
	// restart is a new leader started with them stored; baseline the baseline manager's.
	restart  processMemory
	baseline *processMemory
	flood    floodResult
}

type floodResult struct {
	// throttled were turned away by kube-apiserver's priority and fairness (429): the flood comes
	// from a tenant, whose requests it queues, not from a cluster admin, whose it does not.
	sent, refused, throttled, failed, dropped int64
	elapsed                                   time.Duration
	before, after                             processMemory
	// events are the refusal Events the flood's namespace holds afterwards; suppressed the
	// refusals the manager counted as recorded as no Event.
	events     int
	suppressed float64
	// restarts are the times the manager exited during the flood and was started again.
	restarts int
}

// runHostile measures the leader m against 1,000 Deployments that carry the operator's label with
// large env values, as anyone who may create a Deployment can make them, a new leader started with
// them stored (and the baseline manager's, when given), and a flood of refused creates under new
// names. It returns the manager process it leaves running.
func runHostile(ctx context.Context, c *cluster, m *managerProcess, mf managerFlags, s hostileSettings, logf func(string, ...any)) (*hostileResult, *managerProcess, error) {
	res := &hostileResult{settings: s}
	for _, ns := range []string{hostileNamespace, floodNamespace, probeNamespace} {
		if err := c.createNamespace(ctx, ns); err != nil {
			return nil, m, err
		}
	}
	var err error
	if res.before, err = measure(ctx, c, m, time.Now()); err != nil {
		return nil, m, err
	}

	logf("hostile: %d labelled Deployments with %d-byte env values", s.deployments, s.envBytes)
	if res.storedBytes, err = createHostileDeployments(ctx, c, s); err != nil {
		return nil, m, err
	}
	if res.running, err = measure(ctx, c, m, time.Now()); err != nil {
		return nil, m, err
	}

	restart := func(binary string) (processMemory, *managerProcess, error) {
		if err := m.stop(); err != nil {
			return processMemory{}, nil, err
		}
		f := mf
		f.binary = binary
		started := time.Now()
		next, err := c.startManager(f)
		if err != nil {
			return processMemory{}, nil, err
		}
		if err := c.waitForLeader(ctx); err != nil {
			return processMemory{}, next, err
		}
		mem, err := measure(ctx, c, next, started)
		return mem, next, err
	}
	if s.baselineManager != "" {
		logf("hostile: the baseline manager %s starts with them stored", s.baselineManager)
		baseline, next, err := restart(s.baselineManager)
		m = next
		if err != nil {
			return nil, m, fmt.Errorf("the baseline manager: %w", err)
		}
		res.baseline = &baseline
	}
	logf("hostile: a new leader starts with them stored")
	if res.restart, m, err = restart(mf.binary); err != nil {
		return nil, m, err
	}

	logf("hostile: %d refused creates a second under new names for %s", s.floodRate, s.floodDuration)
	res.flood, m, err = flood(ctx, c, m, mf, s)
	return res, m, err
}

// createHostileDeployments creates the labelled Deployments, eight at a time, and returns the
// size of their JSON.
func createHostileDeployments(ctx context.Context, c *cluster, s hostileSettings) (uint64, error) {
	var size atomic.Uint64
	names := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range names {
				d := hostileDeployment(i, s.envBytes)
				if err := c.client.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
					errs <- err
					return
				}
				data, _ := json.Marshal(d)
				size.Add(uint64(len(data)))
			}
		})
	}
	var err error
feed:
	for i := range s.deployments {
		select {
		case names <- i:
		case err = <-errs:
			break feed
		}
	}
	close(names)
	wg.Wait()
	close(errs)
	return size.Load(), errors.Join(err, <-errs)
}

func hostileDeployment(i, envBytes int) *appsv1.Deployment {
	labels := map[string]string{"app": "hostile"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: hostileNamespace, Name: fmt.Sprintf("hostile-%04d", i),
			Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy, "app": "hostile"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "hostile", Image: "registry.example.test/hostile:1",
					Env: []corev1.EnvVar{{Name: "PADDING", Value: strings.Repeat("x", envBytes)}},
				}}},
			},
		},
	}
}

// measure creates a Welcome and waits until its Deployment exists, so that the leader m has
// synced its caches and reconciled, then reads m's memory.
func measure(ctx context.Context, c *cluster, m *managerProcess, started time.Time) (processMemory, error) {
	w := &authv1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNamespace, GenerateName: "probe-"},
		Spec:       authv1.WelcomeSpec{Name: "probe"},
	}
	if err := c.client.Create(ctx, w); err != nil {
		return processMemory{}, err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := c.client.Get(ctx, client.ObjectKeyFromObject(w), &appsv1.Deployment{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			return processMemory{}, err
		}
		select {
		case <-m.done:
			return processMemory{}, fmt.Errorf("the manager exited (%w)", m.exitErr)
		case <-ctx.Done():
			return processMemory{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return processMemory{}, errors.New("the probe Welcome did not converge within 10 minutes")
		}
	}
	mem := processMemory{converged: time.Since(started)}
	var err error
	if mem.heap, err = m.liveHeap(ctx); err != nil {
		return mem, err
	}
	if mem.rss, err = m.status("VmRSS:"); err != nil {
		return mem, err
	}
	mem.peakRSS, err = m.status("VmHWM:")
	return mem, err
}

// flood sends s.floodRate creates a second for s.floodDuration, each a Welcome under a new name
// (generateName) that the validating webhook refuses, and samples the manager's RSS every second.
//
// A manager that exits meanwhile (it does when kube-apiserver, starved of CPU, does not renew its
// Lease in time) is started again, as kubelet would restart its container, and counted; flood
// returns the manager process running at its end.
func flood(ctx context.Context, c *cluster, m *managerProcess, mf managerFlags, s hostileSettings) (floodResult, *managerProcess, error) {
	var res floodResult
	var err error
	if res.before, err = measure(ctx, c, m, time.Now()); err != nil {
		return res, m, err
	}
	suppressedBefore, err := metricValue(ctx, m, "webhook_operator_refusal_events_suppressed_total")
	if err != nil {
		return res, m, err
	}
	tenant, err := c.tenantClient(ctx, floodNamespace)
	if err != nil {
		return res, m, err
	}
	var sent, refused, throttled, failed, dropped atomic.Int64
	var firstFailure atomic.Value
	jobs := make(chan struct{}, s.floodRate)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range jobs {
				w := &authv1.Welcome{
					ObjectMeta: metav1.ObjectMeta{Namespace: floodNamespace, GenerateName: "flood-"},
					Spec:       authv1.WelcomeSpec{Name: "flood", Port: ptr.To[int32](0)},
				}
				sent.Add(1)
				switch err := tenant.Create(ctx, w); {
				case apierrors.IsInvalid(err):
					refused.Add(1)
				case apierrors.IsTooManyRequests(err):
					throttled.Add(1)
				default:
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprint(err))
				}
			}
		})
	}
	var peak atomic.Uint64
	var restartErr error
	sampled := make(chan struct{})
	samplerCtx, stopSampler := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		for {
			select {
			case <-m.done:
				fmt.Fprintf(os.Stderr, "flood: the manager exited (%v); starting it again\n", m.exitErr)
				_ = m.log.Close()
				res.restarts++
				if m, restartErr = c.startManager(mf); restartErr != nil {
					return
				}
			default:
			}
			if rss, err := m.status("VmRSS:"); err == nil && rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-samplerCtx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	// Every 10ms the creates due by then are queued, however coarse the timer.
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	for queued := int64(0); time.Since(start) < s.floodDuration && ctx.Err() == nil; {
		<-tick.C
		for due := int64(time.Since(start).Seconds() * float64(s.floodRate)); queued < due; queued++ {
			select {
			case jobs <- struct{}{}:
			default:
				dropped.Add(1) // the clients fell more than a second behind
			}
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	res.elapsed = time.Since(start)
	stopSampler()
	<-sampled
	if restartErr != nil {
		return res, nil, restartErr
	}
	res.sent, res.refused, res.throttled, res.failed, res.dropped = sent.Load(), refused.Load(), throttled.Load(), failed.Load(), dropped.Load()
	if f := firstFailure.Load(); f != nil {
		fmt.Fprintf(os.Stderr, "flood: the first of %d creates that were not refused: %s\n", res.failed, f)
	}
	if res.after, err = measure(ctx, c, m, time.Now()); err != nil {
		return res, m, err
	}
	// The peak during the flood, sampled: VmHWM holds the process's peak since it started.
	res.after.peakRSS = peak.Load()
	suppressed, err := metricValue(ctx, m, "webhook_operator_refusal_events_suppressed_total")
	if err != nil {
		return res, m, err
	}
	if res.restarts > 0 {
		suppressedBefore = 0 // a new process counts from 0
	}
	res.suppressed = suppressed - suppressedBefore
	events := &eventsv1.EventList{}
	if err := c.client.List(ctx, events, client.InNamespace(floodNamespace)); err != nil {
		return res, m, err
	}
	for _, e := range events.Items {
		if e.Reason == conditions.EventReasonAdmissionRefused {
			res.events++
		}
	}
	return res, m, nil
}

// tenantClient is a client of an ordinary user who may create Welcomes in namespace and nothing
// else, as a tenant would flood the webhooks. kube-apiserver's priority and fairness queues its
// requests in the global-default level, where the bench's own client, a cluster admin's, is exempt.
func (c *cluster) tenantClient(ctx context.Context, namespace string) (client.Client, error) {
	const name = "tenant"
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"tenants"}}, nil)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{authv1.GroupVersion.Group}, Resources: []string{"welcomes"}, Verbs: []string{"create"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := c.client.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
			return nil, err
		}
	}
	cfg := user.Config()
	cfg.QPS, cfg.Burst = -1, 0
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}

// metricValue reads an unlabelled metric from the manager's metrics endpoint; 0 when not served yet.
func metricValue(ctx context.Context, m *managerProcess, name string) (float64, error) {
	body, err := get(ctx, m.metrics, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if v, ok := strings.CutPrefix(string(line), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}
