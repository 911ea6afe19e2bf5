//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// containerEnd is how one run of a container ended, as containerd reported it on the node.
type containerEnd struct {
	Pod         string
	ContainerID string
	ExitCode    int32
	Reason      string
	FinishedAt  time.Time
	// Deleting says the pod was being deleted: kubelet stopped the container for it.
	Deleting bool
}

func (e containerEnd) String() string {
	return fmt.Sprintf("%s: container %s exited %d (%s) at %s", e.Pod, shortID(e.ContainerID), e.ExitCode, e.Reason, e.FinishedAt.Format("15:04:05.000"))
}

// podRecorder watches the pods of one namespace, as a log shipper on a node would: it keeps how
// every run of a container ended, as containerd reports it on the node, and follows every run's
// log through the API server (as kubectl logs -f does) into <logDir>/<pod>.log, one file per pod
// across restarts. Kubelet deletes a pod's logs with the pod, so this is where a spec reads them
// afterwards. Each recorder has a directory of its own, so that it reads only what it recorded.
type podRecorder struct {
	namespace string
	container string
	logDir    string
	clientset *kubernetes.Clientset

	// since is when the recorder started: it keeps the runs that ended from then on.
	since time.Time

	mu sync.Mutex
	// deleted is when the deletion of each pod was first asked for, as its deletionTimestamp less
	// its grace period says.
	deleted  map[string]time.Time
	followed map[string]bool // runs whose log is followed, by container ID
	killed   map[string]bool // runs the test killed, by container ID
	wg       sync.WaitGroup
}

// recordManagers starts a podRecorder of the manager container in the operator's namespace,
// logging under logs/<name>; the spec's end stops it.
func recordManagers(name string) *podRecorder {
	namespace, container := fixtures.Namespace, fixtures.ManagerContainer
	clientset, err := kubernetes.NewForConfig(kube.Config)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	r := &podRecorder{
		namespace: namespace,
		container: container,
		since:     time.Now(),
		logDir:    filepath.Join(kube.LogDir, name),
		clientset: clientset,
		deleted:   map[string]time.Time{},
		followed:  map[string]bool{},
		killed:    map[string]bool{},
	}
	ExpectWithOffset(1, os.MkdirAll(r.logDir, 0o755)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(namespace))
	_, err = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { r.observe(ctx, obj) },
		DeleteFunc: func(obj any) { r.observe(ctx, obj) },
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	DeferCleanup(func() {
		cancel()
		factory.Shutdown()
		r.wg.Wait()
	})
	return r
}

// observe records what a pod says: that it is being deleted, and a run of the container whose
// log is not followed yet.
func (r *podRecorder) observe(ctx context.Context, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// kubelet deletes the pod again, without a grace period, once its containers stopped:
		// the first deletion seen is when it was asked for.
		grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
		asked := pod.DeletionTimestamp.Add(-grace)
		r.mu.Lock()
		if first, seen := r.deleted[pod.Name]; !seen || asked.Before(first) {
			r.deleted[pod.Name] = asked
		}
		r.mu.Unlock()
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != r.container {
			continue
		}
		// A run that ended before it was followed is the one before the current one, or the
		// current one once it has ended.
		if t := s.LastTerminationState.Terminated; t != nil && t.ContainerID != "" {
			r.follow(ctx, pod.Name, t.ContainerID, true)
		}
		if s.ContainerID != "" {
			r.follow(ctx, pod.Name, s.ContainerID, false)
		}
	}
}

// follow copies the log of one run of the container into the pod's log file, once.
func (r *podRecorder) follow(ctx context.Context, pod, containerID string, previous bool) {
	r.mu.Lock()
	if r.followed[containerID] {
		r.mu.Unlock()
		return
	}
	r.followed[containerID] = true
	r.mu.Unlock()
	r.wg.Go(func() {
		defer GinkgoRecover()
		stream, err := r.clientset.CoreV1().Pods(r.namespace).GetLogs(pod, &corev1.PodLogOptions{
			Container: r.container, Follow: !previous, Previous: previous,
		}).Stream(ctx)
		if err != nil {
			return // the pod is gone, or the run with it
		}
		defer func() { _ = stream.Close() }()
		f, err := os.OpenFile(filepath.Join(r.logDir, pod+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer func() { _ = f.Close() }()
		_, _ = fmt.Fprintf(f, "%s%s\n", containerHeader, shortID(containerID))
		_, _ = io.Copy(f, stream)
	})
}

// markKilled records that the test killed a container, so that its end is not an exit of its own.
func (r *podRecorder) markKilled(containerID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed[runtimeID(containerID)] = true
}

// endsOf are the recorded ends of the pod's container runs.
func (r *podRecorder) endsOf(pod string) []containerEnd {
	return slices.DeleteFunc(r.allEnds(), func(e containerEnd) bool { return e.Pod != pod })
}

// exits are the runs that ended on their own: not stopped for their pod's deletion, nor killed
// by the test.
func (r *podRecorder) exits() []containerEnd {
	r.mu.Lock()
	killed := maps.Clone(r.killed)
	r.mu.Unlock()
	return slices.DeleteFunc(r.allEnds(), func(e containerEnd) bool { return e.Deleting || killed[e.ContainerID] })
}

// allEnds are the runs of the container in the namespace that ended on the node since the
// recorder started, each marked Deleting if its pod's deletion was asked for before it ended
// (deletionTimestamp has a second's precision).
func (r *podRecorder) allEnds() []containerEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ends []containerEnd
	for _, e := range kube.ContainerExits() {
		if e.Namespace != r.namespace || e.Container != r.container || e.FinishedAt.Before(r.since) {
			continue
		}
		asked, deleting := r.deleted[e.Pod]
		ends = append(ends, containerEnd{Pod: e.Pod, ContainerID: e.ContainerID, ExitCode: e.ExitCode, Reason: e.Reason,
			FinishedAt: e.FinishedAt, Deleting: deleting && !asked.After(e.FinishedAt.Add(time.Second))})
	}
	return ends
}

// logs are everything the recorded containers logged, every pod's file in turn.
func (r *podRecorder) logs() string {
	files, err := filepath.Glob(filepath.Join(r.logDir, "*.log"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var all string
	for _, file := range files {
		data, err := os.ReadFile(file)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		all += string(data)
	}
	return all
}

// runtimeID is a container ID of a pod's status without its runtime's prefix, as the runtime
// names it.
func runtimeID(containerID string) string {
	if _, id, found := strings.Cut(containerID, "://"); found {
		return id
	}
	return containerID
}

// shortID is a container ID cut as crictl prints it.
func shortID(containerID string) string {
	id := runtimeID(containerID)
	return id[:min(12, len(id))]
}

// servingWatch completes a TLS handshake with a replica's webhook server every servingWatchEvery,
// from when it starts until the server stops answering, and keeps when it last did: when the
// replica last served admission requests.
type servingWatch struct {
	mu         sync.Mutex
	lastServed time.Time
	done       chan struct{}
}

// servingWatchEvery is how often a servingWatch shakes hands: often enough to time a replica's
// last answer well within the seconds the specs hold it to, rarely enough that the handshakes of
// four watches cost the replicas little of their CPU.
const servingWatchEvery = 100 * time.Millisecond

// watchServing starts a servingWatch of the webhook server at podIP.
func watchServing(ctx context.Context, podIP string) *servingWatch {
	w := &servingWatch{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(servingWatchEvery)
		defer ticker.Stop()
		failures := 0
		for failures < 5 {
			dialer := &net.Dialer{Timeout: time.Second}
			conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort(podIP, webhookPort), &tls.Config{
				InsecureSkipVerify: true, //nolint:gosec // Only whether it answers matters here.
				MinVersion:         tls.VersionTLS12,
			})
			if err == nil {
				_ = conn.Close()
				failures = 0
				w.mu.Lock()
				w.lastServed = time.Now()
				w.mu.Unlock()
			} else {
				failures++
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(func() { cancel(); <-w.done })
	return w
}

// stopped is closed once the server no longer answers.
func (w *servingWatch) stopped() <-chan struct{} { return w.done }

// last is when the server last answered.
func (w *servingWatch) last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastServed
}

// containerHeader begins the line a podRecorder writes before the logs of each container it follows.
const containerHeader = "==== container "
