//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet runs every pod of one namespace bound to the kwok node, each as its own PodProcess, the
// way kubelet runs the pods of its node: it starts a pod's container as soon as kwok has given
// the pod its IP, and each PodProcess stops its container when its pod is deleted. The namespace
// must be one of Options.KubeletNamespaces, so that kwok leaves those pods' readiness and
// deletion to it.
type Kubelet struct {
	cluster   *Cluster
	namespace string
	container Container
	cancel    context.CancelFunc
	done      chan struct{}

	mu sync.Mutex
	// pods are every pod it has run, in the order they started.
	pods []*PodProcess
	// starting are the pods whose volumes are being mounted, with what stops that.
	starting map[types.UID]context.CancelFunc
	// abandoned are the pods that went away before their container started.
	abandoned map[types.UID]bool
	errs      []error
}

// kubeletSync is how often the Kubelet looks for new and deleted pods.
const kubeletSync = 100 * time.Millisecond

// StartKubelet runs every pod of namespace, now and to come, with container standing for the
// pods' container, until Stop.
func (c *Cluster) StartKubelet(namespace string, container Container) *Kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kubelet{cluster: c, namespace: namespace, container: container, cancel: cancel, done: make(chan struct{}), starting: map[types.UID]context.CancelFunc{}, abandoned: map[types.UID]bool{}}
	go k.run(ctx)
	return k
}

func (k *Kubelet) run(ctx context.Context) {
	defer close(k.done)
	_ = wait.PollUntilContextCancel(ctx, kubeletSync, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := k.cluster.Client.List(ctx, pods, client.InNamespace(k.namespace)); err != nil {
			return false, nil // The API server may be restarting; try again.
		}
		k.sync(ctx, pods.Items)
		return false, nil
	})
}

// sync starts the pods that are new, gives up starting those that went away, and removes the
// deleted pods whose container never ran.
func (k *Kubelet) sync(ctx context.Context, pods []corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	present := map[types.UID]bool{}
	for i := range pods {
		pod := &pods[i]
		if k.ran(pod.UID) {
			continue // Its PodProcess takes care of it.
		}
		if pod.DeletionTimestamp != nil {
			// Deleted before its container started: nothing runs, so the pod can go at once.
			if err := k.cluster.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
				k.errs = append(k.errs, fmt.Errorf("removing pod %s, deleted before it started: %w", pod.Name, err))
			}
			continue
		}
		present[pod.UID] = true
		if _, ok := k.starting[pod.UID]; ok || k.abandoned[pod.UID] {
			continue
		}
		if pod.Spec.NodeName != NodeName || pod.Status.PodIP == "" {
			continue
		}
		startCtx, cancel := context.WithCancel(ctx)
		k.starting[pod.UID] = cancel
		go k.start(startCtx, pod.DeepCopy())
	}
	for uid, cancel := range k.starting {
		if !present[uid] {
			k.abandoned[uid] = true
			cancel()
		}
	}
}

// ran reports whether the pod's container has been started.
func (k *Kubelet) ran(uid types.UID) bool {
	return slices.ContainsFunc(k.pods, func(p *PodProcess) bool { return p.Pod.UID == uid })
}

func (k *Kubelet) start(ctx context.Context, pod *corev1.Pod) {
	p, err := k.cluster.RunPod(ctx, pod, k.container)
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.starting, pod.UID)
	switch {
	case err == nil:
		k.pods = append(k.pods, p)
	case ctx.Err() != nil:
		// The pod went away before its volumes could be mounted, or the Kubelet stops.
	default:
		k.errs = append(k.errs, fmt.Errorf("running pod %s: %w", pod.Name, err))
	}
}

// Pods are every pod the Kubelet has run, in the order they started, stopped ones included.
func (k *Kubelet) Pods() []*PodProcess {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.pods)
}

// Running are the pods whose containers have not been stopped for their pod's deletion.
func (k *Kubelet) Running() []*PodProcess {
	var running []*PodProcess
	for _, p := range k.Pods() {
		select {
		case <-p.Stopped():
		default:
			running = append(running, p)
		}
	}
	return running
}

// Pod is the pod of that name the Kubelet has run, or nil.
func (k *Kubelet) Pod(name string) *PodProcess {
	pods := k.Pods()
	for i := len(pods) - 1; i >= 0; i-- {
		if pods[i].Name == name {
			return pods[i]
		}
	}
	return nil
}

// Errors are the pods the Kubelet could not run, and why.
func (k *Kubelet) Errors() []error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.errs)
}

// CrashPod kills the pod's container with SIGKILL, then deletes the pod without a grace period,
// as when a pod is lost with its node: its ReplicaSet replaces it.
func (k *Kubelet) CrashPod(ctx context.Context, name string) error {
	p := k.Pod(name)
	if p == nil {
		return fmt.Errorf("pod %s has not been run", name)
	}
	p.Crash()
	err := k.cluster.Client.Delete(ctx, p.Pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.Pod.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", name, err)
	}
	return nil
}

// Stop stops looking for pods and stops every container still running, within its pod's grace
// period. It returns how the containers ended, when one did not end cleanly.
func (k *Kubelet) Stop() error {
	k.cancel()
	<-k.done
	k.mu.Lock()
	for _, cancel := range k.starting {
		cancel()
	}
	k.mu.Unlock()
	// Like kubelet, stop the containers all at once, each within its own grace period.
	pods := k.Pods()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			if err := p.Stop(); err != nil {
				errs[i] = fmt.Errorf("pod %s: %w", p.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
