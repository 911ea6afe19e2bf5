package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/test/reconciled"
	"github.com/seedlabs/webhook-operator/test/testenv"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// memorySettings size the memory section.
type memorySettings struct {
	// steps are how many custom resources are stored, in turn, when a new leader is measured.
	steps   []int
	workers int
	// throughAPI is how many custom resources are stored through kube-apiserver; the rest are
	// written straight into etcd as copies of the first of each kind (see cloner).
	throughAPI int
	// hostile is how many tenant objects carry what a tenant may add: children with childPadding
	// bytes added by hand, and custom resources with metadataPadding bytes of labels and annotations.
	hostile                       int
	childPadding, metadataPadding int
	// baselineManager, when set, is measured beside the manager under test at every step.
	baselineManager string
}

// memoryResult is a new leader's memory and start at each step.
type memoryResult struct {
	settings memorySettings
	steps    []memoryStep
	// copies is how many custom resources were written straight into etcd.
	copies int
}

// cgroupErr is why a leader ran without a memory cgroup, the first such reason, or nil.
func (r *memoryResult) cgroupErr() error {
	for _, step := range r.steps {
		for _, l := range []*leaderStart{step.ours, step.baseline} {
			if l != nil && l.cgroupErr != nil {
				return l.cgroupErr
			}
		}
	}
	return nil
}

// memoryStep is what was stored when the leaders were measured.
type memoryStep struct {
	what string
	// objects is how many custom resources were stored, each with its Deployment and Service.
	objects        int
	ours, baseline *leaderStart
}

// leaderStart is a new leader's start with the step's objects stored.
type leaderStart struct {
	// ready is exec to /readyz passing; reconciled, exec to a reconcile of every object.
	ready, reconciled time.Duration
	// peakRSS is VmHWM at the end; heap the live heap after a forced collection.
	peakRSS, heap uint64
	// charge is what the memory cgroup with managerMemoryLimit the leader ran in recorded, when
	// the bench could make one (cgroupErr otherwise).
	charge    *memoryCharge
	cgroupErr error
	// applied are the applies the leader made, of the Deployments and Services the store applied
	// as the operator would have: none, when what the cache keeps tells it so.
	applied float64
}

const (
	memoryNamespace = "memory"
	tenantNamespace = "memory-tenant"
	// managerMemoryLimit is config/manager's memory limit, which the bench gives every manager
	// process as the downward API would: it sets the Go runtime's soft limit to 90% of it.
	managerMemoryLimit = 512 << 20
)

// runMemory stores custom resources with their children step by step, as the operator would have
// made them (a plain client applying what it applies, under its field manager), and at each step
// starts a new leader, and the baseline manager's when given, and measures its start: the live
// heap once it has reconciled every object, its peak RSS, and how long it took. Between the first
// two steps of custom resources, it stores the tenant objects: children carrying what a tenant
// added by hand, and custom resources carrying labels and annotations as large as the API allows.
func runMemory(ctx context.Context, c *cluster, mf managerFlags, smp *samples, s memorySettings, heapProfile string,
	logf func(string, ...any),
) (*memoryResult, error) {
	res := &memoryResult{settings: s}
	// The objects are stored while no manager serves the webhooks, which would refuse every
	// create: the webhook configurations are set aside until the section ends.
	restore, err := c.setWebhooksAside(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := restore(); err != nil {
			logf("memory: restoring the webhook configurations: %v", err)
		}
	}()
	for _, ns := range []string{memoryNamespace, tenantNamespace} {
		if err := c.createNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	stored := 0
	var copies *cloner
	measure := func(what string) error {
		step := memoryStep{what: what, objects: stored}
		var err error
		logf("memory: a new leader with %s", what)
		if step.ours, err = startLeader(ctx, c, mf, stored, heapProfile); err != nil {
			return err
		}
		if s.baselineManager != "" {
			f := mf
			f.binary = s.baselineManager
			logf("memory: the baseline manager with %s", what)
			if step.baseline, err = startLeader(ctx, c, f, stored, ""); err != nil {
				return fmt.Errorf("the baseline manager: %w", err)
			}
		}
		res.steps = append(res.steps, step)
		return nil
	}
	if err := measure("no custom resource"); err != nil {
		return res, err
	}
	for i, target := range s.steps {
		logf("memory: storing %d custom resources", target)
		through := max(min(target, s.throughAPI), stored)
		if err := forEach(through-stored, s.workers, func(j int) error {
			return storeAsTheOperator(ctx, c, memoryObject(smp, stored+j), nil, nil)
		}); err != nil {
			return res, err
		}
		if through < target {
			if copies == nil {
				if copies, err = newCopies(ctx, c, smp); err != nil {
					return res, err
				}
				defer func() { _ = copies.close() }()
			}
			logf("memory: writing %d of them into etcd", target-through)
			if err := forEach(target-through, s.workers, func(j int) error {
				return copies.store(ctx, memoryObject(smp, through+j), through+j)
			}); err != nil {
				return res, err
			}
			res.copies += target - through
		}
		stored = target
		if err := measure(fmt.Sprintf("%d custom resources", stored)); err != nil {
			return res, err
		}
		if i > 0 || s.hostile == 0 {
			continue
		}
		logf("memory: %d tenant objects whose children carry %d KiB added by hand", s.hostile, s.childPadding>>10)
		if err := forEach(s.hostile, s.workers, func(j int) error {
			obj := smp.object(tenantNamespace, 3*j+2*(j%2)) // Welcomes and DeployObjects in turn
			obj.SetName(fmt.Sprintf("padded-child-%d", j))
			return storeAsTheOperator(ctx, c, obj, nil, func(d *appsv1.Deployment) { padByHand(d, s.childPadding) })
		}); err != nil {
			return res, err
		}
		stored += s.hostile
		if err := measure(fmt.Sprintf("%d custom resources, %d of them with %d KiB added by hand to their Deployment",
			stored, s.hostile, s.childPadding>>10)); err != nil {
			return res, err
		}
		logf("memory: %d tenant objects carrying %d KiB of labels and annotations", s.hostile, s.metadataPadding>>10)
		if err := forEach(s.hostile, s.workers, func(j int) error {
			obj := smp.object(tenantNamespace, 3*j)
			obj.SetName(fmt.Sprintf("padded-%d", j))
			return storeAsTheOperator(ctx, c, obj, func(o client.Object) { padMetadata(o, s.metadataPadding) }, nil)
		}); err != nil {
			return res, err
		}
		stored += s.hostile
		if err := measure(fmt.Sprintf("%d custom resources, %d of them with %d KiB added by hand to their Deployment, %d with %d KiB of labels and annotations",
			stored, s.hostile, s.childPadding>>10, s.hostile, s.metadataPadding>>10)); err != nil {
			return res, err
		}
	}
	// The objects stay: deleting tens of thousands takes longer than the rest of the bench.
	return res, nil
}

// memoryObject is the memory section's ith custom resource, named with a fixed width, so that the
// cloner can write it as a copy of the first of its kind. Each DeployObject asks for resources no
// other asks for (distinctQuantities), the operator's worst case: the cache shares equal resource
// lists, and shares none of these.
func memoryObject(smp *samples, i int) client.Object {
	obj := smp.object(memoryNamespace, i)
	kind := obj.GetName()[:strings.LastIndex(obj.GetName(), "-")]
	obj.SetName(fmt.Sprintf("%s-%07d", kind, i/3))
	if d, ok := obj.(*appv1.DeployObject); ok {
		// Odd numbers of bytes, which no suffix divides: each stored as its digits, all as long.
		d.Spec.Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(32<<20+2*i+1), resource.BinarySI)
		d.Spec.Resources.Limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(64<<20+2*i+1), resource.BinarySI)
	}
	return obj
}

// distinctQuantities are the values that make obj's resources its own, as stored: of the same
// length for every memoryObject, so that the cloner can replace a template's with a copy's.
func distinctQuantities(obj client.Object) []string {
	d, ok := obj.(*appv1.DeployObject)
	if !ok {
		return nil
	}
	requests, limits := d.Spec.Resources.Requests[corev1.ResourceMemory], d.Spec.Resources.Limits[corev1.ResourceMemory]
	return []string{requests.String(), limits.String()}
}

// newCopies returns a cloner whose templates are the memory section's first object of each kind,
// which must be stored.
func newCopies(ctx context.Context, c *cluster, smp *samples) (*cloner, error) {
	cl, err := newCloner(c)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		if err := cl.addTemplate(ctx, c, memoryObject(smp, i)); err != nil {
			return nil, errors.Join(err, cl.close())
		}
	}
	return cl, nil
}

// storeAsTheOperator creates obj, after pad when set, and applies its Deployment and Service and
// writes its status as the operator would, through apply.Apply under the operator's field manager;
// then handEdit, when set, changes the Deployment as a tenant would by hand.
func storeAsTheOperator(ctx context.Context, c *cluster, obj client.Object, pad func(client.Object), handEdit func(*appsv1.Deployment)) error {
	if pad != nil {
		pad(obj)
	}
	// The mutating webhooks' defaults, which no webhook gives while the objects are stored.
	webhooks.DefaultObject(obj)
	if err := c.client.Create(ctx, obj); err != nil {
		return err
	}
	deployment, service, status := reconciled.OperatorWrites(obj, testenv.WelcomeImage, testenv.MemcachedImage)
	if err := apply.Apply(ctx, c.client, nil, deployment, apply.Options()...); err != nil {
		return err
	}
	if err := apply.Apply(ctx, c.client, nil, service, apply.Options()...); err != nil {
		return err
	}
	if err := c.client.Status().Patch(ctx, status, client.MergeFrom(obj)); err != nil {
		return err
	}
	if handEdit == nil {
		return nil
	}
	d := &appsv1.Deployment{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), d); err != nil {
		return err
	}
	before := d.DeepCopy()
	handEdit(d)
	return c.client.Patch(ctx, d, client.MergeFrom(before), client.FieldOwner("tenant"))
}

// padByHand adds to d what a tenant may add to a Deployment by hand: annotations, on it and on its
// pod template, as large as the API allows (256 KiB each), and the rest as the value of an
// environment variable of another container.
func padByHand(d *appsv1.Deployment, size int) {
	const annotations = 250 << 10
	d.Annotations["tenant.example.com/note"] = strings.Repeat("x", annotations)
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["tenant.example.com/note"] = strings.Repeat("x", annotations)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{
		Name: "sidecar", Image: "registry.example.test/sidecar:1",
		Env: []corev1.EnvVar{{Name: "PADDING", Value: strings.Repeat("x", max(size-2*annotations, 0))}},
	})
}

// padMetadata gives obj size bytes of labels and annotations: annotations as large as the API
// allows (256 KiB in all), and labels for the rest.
func padMetadata(obj client.Object, size int) {
	annotations := min(size, 250<<10)
	obj.SetAnnotations(map[string]string{"tenant.example.com/note": strings.Repeat("x", annotations)})
	labels := map[string]string{}
	for i := 0; annotations+len(labels)*120 < size; i++ {
		labels[fmt.Sprintf("tenant.example.com/label-%05d", i)] = strings.Repeat("v", 63)
	}
	obj.SetLabels(labels)
}

// startLeader starts the manager of f with config/manager's memory limit, waits
// until it is ready and until it has reconciled objects custom resources, and measures it; then
// it stops it. heapProfile, when set, receives its heap profile.
func startLeader(ctx context.Context, c *cluster, f managerFlags, objects int, heapProfile string) (*leaderStart, error) {
	f.env = append(f.env, fmt.Sprintf("%s=%d", operator.EnvMemoryLimit, managerMemoryLimit))
	l := &leaderStart{}
	if f.cgroup, l.cgroupErr = newMemoryCgroup(fmt.Sprintf("webhook-operator-bench-%d-%d", os.Getpid(), time.Now().UnixNano()), managerMemoryLimit); l.cgroupErr == nil {
		defer func() { _ = f.cgroup.remove() }()
	}
	started := time.Now()
	m, err := c.startManager(f)
	if err != nil {
		return nil, withOOMKills(err, f.cgroup)
	}
	defer func() { _ = m.stop() }()
	deadline := started.Add(30 * time.Minute)
	for l.ready == 0 {
		if _, err := get(ctx, m.probe, "/readyz"); err == nil {
			l.ready = time.Since(started)
			break
		}
		if err := m.wait(ctx, deadline, 50*time.Millisecond); err != nil {
			return nil, withOOMKills(fmt.Errorf("waiting for /readyz: %w", err), f.cgroup)
		}
	}
	if err := c.waitForLeader(ctx); err != nil {
		return nil, err
	}
	for {
		samples, err := scrape(ctx, m, "controller_runtime_reconcile_total")
		if err != nil {
			return nil, err
		}
		reconciled := 0.0
		for labels, v := range samples {
			if !strings.Contains(labels, `controller="admissionpolicy"`) {
				reconciled += v
			}
		}
		if reconciled >= float64(objects) {
			l.reconciled = time.Since(started)
			break
		}
		if err := m.wait(ctx, deadline, 500*time.Millisecond); err != nil {
			return nil, withOOMKills(fmt.Errorf("reconciled %.0f of %d objects: %w", reconciled, objects, err), f.cgroup)
		}
	}
	if l.heap, err = m.liveHeap(ctx); err != nil {
		return nil, err
	}
	if l.peakRSS, err = m.status("VmHWM:"); err != nil {
		return nil, err
	}
	if f.cgroup != nil {
		charge, err := f.cgroup.charge()
		if err != nil {
			return nil, err
		}
		l.charge = &charge
	}
	applied, err := scrape(ctx, m, "webhook_operator_applies_total")
	if err != nil {
		return nil, err
	}
	for labels, v := range applied {
		if strings.Contains(labels, `result="applied"`) {
			l.applied += v
		}
	}
	if heapProfile != "" {
		profile, err := get(ctx, m.pprof, "/debug/pprof/heap")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(heapProfile, profile, 0o644); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// withOOMKills is err, saying how often the kernel killed the process in g for want of memory.
func withOOMKills(err error, g *memoryCgroup) error {
	if g == nil {
		return err
	}
	if c, cerr := g.charge(); cerr == nil && c.oomKills > 0 {
		return fmt.Errorf("%w: the kernel killed it %d time(s) at its memory limit, %d MiB", err, c.oomKills, managerMemoryLimit>>20)
	}
	return err
}

// runCertificateSwap writes a new serving pair into the webhook server's certificate directory, as
// the kubelet updates a Secret volume, and times until the server presents it; trials times.
func runCertificateSwap(c *cluster, trialsWanted int) (trials, error) {
	var out trials
	for range trialsWanted {
		current, err := c.servedCertificate()
		if err != nil {
			return nil, err
		}
		start := time.Now()
		if err := c.writeServingPair(); err != nil {
			return nil, err
		}
		for {
			served, err := c.servedCertificate()
			if err == nil && !sameCertificate(served, current) {
				out = append(out, milliseconds(time.Since(start)))
				break
			}
			if time.Since(start) > time.Minute {
				return nil, errors.New("the new certificate was not served within a minute")
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return out, nil
}

func sameCertificate(a, b *x509.Certificate) bool { return a.SerialNumber.Cmp(b.SerialNumber) == 0 }

// setWebhooksAside deletes the cluster's webhook configurations, and returns what creates them
// again as they were.
func (c *cluster) setWebhooksAside(ctx context.Context) (func() error, error) {
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.client.List(ctx, &mutating); err != nil {
		return nil, err
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.client.List(ctx, &validating); err != nil {
		return nil, err
	}
	var aside []client.Object
	for i := range mutating.Items {
		aside = append(aside, &mutating.Items[i])
	}
	for i := range validating.Items {
		aside = append(aside, &validating.Items[i])
	}
	for _, obj := range aside {
		if err := c.client.Delete(ctx, obj); err != nil {
			return nil, err
		}
	}
	return func() error {
		var errs []error
		for _, obj := range aside {
			obj.SetResourceVersion("")
			obj.SetUID("")
			errs = append(errs, c.client.Create(context.WithoutCancel(ctx), obj))
		}
		return errors.Join(errs...)
	}, nil
}
