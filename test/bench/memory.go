package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
)

const memoryNamespace = "memory"

type memoryResult struct {
	objects int
	// emptyHeap is the manager's live heap with nothing of ours stored; heap and rss with the
	// objects and their children cached.
	emptyHeap, heap, rss uint64
	// jsonBytes is the size of the cached objects as the API server serves them, and
	// jsonWithoutManagedFields without metadata.managedFields.
	jsonBytes, jsonWithoutManagedFields uint64
	converge                            time.Duration
}

// runMemory has the operator converge objects custom resources, and compares the manager's memory
// with the JSON of what it caches: the custom resources and their Deployments and Services.
func runMemory(ctx context.Context, c *cluster, m *managerProcess, smp *samples, objects, workers int, heapProfile string) (*memoryResult, error) {
	res := &memoryResult{objects: objects}
	var err error
	if res.emptyHeap, err = m.liveHeap(ctx); err != nil {
		return nil, err
	}
	if err := c.createNamespace(ctx, memoryNamespace); err != nil {
		return nil, err
	}
	perKind := (objects + 2) / 3
	res.objects = 3 * perKind
	if res.converge, err = operatorRun(ctx, c, smp, memoryNamespace, convergenceSettings{perKind: perKind, workers: workers}); err != nil {
		return nil, err
	}
	if res.heap, err = m.liveHeap(ctx); err != nil {
		return nil, err
	}
	if res.rss, err = m.rss(); err != nil {
		return nil, err
	}
	profile, err := get(ctx, m.pprof, "/debug/pprof/heap")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(heapProfile, profile, 0o644); err != nil {
		return nil, err
	}
	for _, list := range []client.ObjectList{
		&authv1alpha1.WelcomeList{}, &cachev1alpha1.MemcachedList{}, &appv1.DeployObjectList{},
		&appsv1.DeploymentList{}, &corev1.ServiceList{},
	} {
		if err := c.client.List(ctx, list, client.InNamespace(memoryNamespace)); err != nil {
			return nil, err
		}
		if err := eachItem(list, func(obj client.Object) error {
			full, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			obj.SetManagedFields(nil)
			stripped, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			res.jsonBytes += uint64(len(full))
			res.jsonWithoutManagedFields += uint64(len(stripped))
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// The objects stay: deleting ten thousand takes longer than the rest of the bench.
	return res, nil
}

func eachItem(list client.ObjectList, f func(client.Object) error) error {
	switch l := list.(type) {
	case *authv1alpha1.WelcomeList:
		for i := range l.Items {
			if err := f(&l.Items[i]); err != nil {
				return err
			}
		}
	case *cachev1alpha1.MemcachedList:
		for i := range l.Items {
			if err := f(&l.Items[i]); err != nil {
				return err
			}
		}
	case *appv1.DeployObjectList:
		for i := range l.Items {
			if err := f(&l.Items[i]); err != nil {
				return err
			}
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			if err := f(&l.Items[i]); err != nil {
				return err
			}
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			if err := f(&l.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
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
