//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

func managerDeployment(ctx context.Context, g Gomega) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: fixtures.ManagerDeployment}, d)).To(Succeed())
	return d
}

// managerPods are the pods of the manager's Deployment that are not being deleted.
func managerPods(ctx context.Context, g Gomega) []corev1.Pod {
	d := managerDeployment(ctx, g)
	list := &corev1.PodList{}
	g.ExpectWithOffset(1, k8s.List(ctx, list, client.InNamespace(fixtures.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels))).To(Succeed())
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			pods = append(pods, pod)
		}
	}
	return pods
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// expectManagerReady checks that every replica the Deployment asks for has a pod on the node,
// whose manager container runs and is Ready, and whose IP is a ready endpoint of the webhook
// Service. It returns the pods.
func expectManagerReady(ctx context.Context, g Gomega) []corev1.Pod {
	d := managerDeployment(ctx, g)
	pods := managerPods(ctx, g)
	g.ExpectWithOffset(1, pods).To(HaveLen(int(ptr.Deref(d.Spec.Replicas, 1))), "the manager's pods")
	var ips []string
	for i := range pods {
		pod := &pods[i]
		g.ExpectWithOffset(1, podReady(pod)).To(BeTrue(), "pod %s is not Ready", pod.Name)
		status := managerStatus(pod)
		g.ExpectWithOffset(1, status).NotTo(BeNil(), "pod %s has no manager container status", pod.Name)
		g.ExpectWithOffset(1, status.State.Running).NotTo(BeNil(), "the manager container of pod %s does not run", pod.Name)
		g.ExpectWithOffset(1, status.Ready).To(BeTrue(), "the manager container of pod %s is not ready", pod.Name)
		ips = append(ips, pod.Status.PodIP)
	}
	g.ExpectWithOffset(1, readyEndpoints(ctx, g)).To(ConsistOf(ips), "the webhook Service's ready endpoints")
	return pods
}

// readyEndpoints are the addresses the webhook Service's EndpointSlices hold as ready: the ones
// kube-apiserver picks from for each admission request.
func readyEndpoints(ctx context.Context, g Gomega) []string {
	addresses, err := listReadyEndpoints(ctx)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return addresses
}

func listReadyEndpoints(ctx context.Context) ([]string, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := k8s.List(ctx, list, client.InNamespace(fixtures.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: fixtures.WebhookService}); err != nil {
		return nil, err
	}
	var addresses []string
	for i := range list.Items {
		addresses = append(addresses, readyAddresses(&list.Items[i])...)
	}
	return addresses, nil
}

// readyAddresses are the addresses slice holds as ready.
func readyAddresses(slice *discoveryv1.EndpointSlice) []string {
	var addresses []string
	for _, e := range slice.Endpoints {
		if ptr.Deref(e.Conditions.Ready, false) {
			addresses = append(addresses, e.Addresses...)
		}
	}
	return addresses
}

// endpointTracker watches the webhook Service's EndpointSlices, on a client of its own, and keeps
// every change of its ready addresses with the time it arrived, so that a spec can tell when a
// replica left the Service, next to when its process stopped. A watch sees each change as soon as
// a poll would, without loading the API server the specs share.
type endpointTracker struct {
	mu      sync.Mutex
	history []endpointSnapshot
}

type endpointSnapshot struct {
	at    time.Time
	ready []string
}

// maxEndpointSnapshots bounds the tracker's memory.
const maxEndpointSnapshots = 10000

// trackReadyEndpoints starts an endpointTracker, which the spec's end stops, and returns once it
// has seen the Service's endpoints as they are now.
func trackReadyEndpoints(ctx context.Context) *endpointTracker {
	clientset, err := kubernetes.NewForConfig(rest.CopyConfig(kube.Config))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	informer := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithNamespace(fixtures.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discoveryv1.LabelServiceName + "=" + fixtures.WebhookService
		})).Discovery().V1().EndpointSlices().Informer()
	ctx, cancel := context.WithCancel(ctx)
	t := &endpointTracker{}
	record := func(any) {
		var ready []string
		for _, obj := range informer.GetStore().List() {
			ready = append(ready, readyAddresses(obj.(*discoveryv1.EndpointSlice))...)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(t.history) < maxEndpointSnapshots {
			t.history = append(t.history, endpointSnapshot{at: time.Now(), ready: ready})
		}
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
		DeleteFunc: record,
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	DeferCleanup(func() { cancel(); <-done })
	ExpectWithOffset(1, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)).To(BeTrue(), "the EndpointSlices of the webhook Service")
	record(nil)
	return t
}

// since are the snapshots from after on, starting with the one in force at after.
func (t *endpointTracker) since(after time.Time) []endpointSnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	var snapshots []endpointSnapshot
	for i, s := range t.history {
		if s.at.Before(after) && i+1 < len(t.history) && t.history[i+1].at.Before(after) {
			continue // replaced before after
		}
		snapshots = append(snapshots, s)
	}
	return snapshots
}

// expectInServiceSince asserts that a replica was in the webhook Service at every moment from
// after on; when none was, it says when, with the Service's ready addresses over that time.
func (t *endpointTracker) expectInServiceSince(after time.Time) {
	GinkgoHelper()
	snapshots := t.since(after)
	if len(snapshots) > 0 && !slices.ContainsFunc(snapshots, func(s endpointSnapshot) bool { return len(s.ready) == 0 }) {
		return
	}
	var lines []string
	for _, s := range snapshots {
		lines = append(lines, fmt.Sprintf("%+.3fs: %s", s.at.Sub(after).Seconds(), strings.Join(s.ready, ", ")))
	}
	Fail("no replica was in the webhook Service at some moment: its ready addresses, from " +
		after.Format("15:04:05.000") + " on:\n" + strings.Join(lines, "\n"))
}

// leftAt is the first time from after on that address was not a ready endpoint: after itself if
// it was not one then.
func (t *endpointTracker) leftAt(address string, after time.Time) (time.Time, bool) {
	return t.firstAt(after, func(ready []string) bool { return !slices.Contains(ready, address) })
}

// firstAt is the first time from after on that the ready addresses were as wanted: after itself
// if they were then.
func (t *endpointTracker) firstAt(after time.Time, wanted func(ready []string) bool) (time.Time, bool) {
	for _, s := range t.since(after) {
		if wanted(s.ready) {
			if s.at.Before(after) {
				return after, true
			}
			return s.at, true
		}
	}
	return time.Time{}, false
}

// waitLeft waits up to timeout until address is not a ready endpoint from after on, and returns
// when it first was not (leftAt); what names the replica in the failure.
func (t *endpointTracker) waitLeft(ctx context.Context, address string, after time.Time, timeout time.Duration, what string) time.Time {
	GinkgoHelper()
	return waitFor(ctx, timeout, func() (time.Time, bool) { return t.leftAt(address, after) }, what+" left the webhook Service")
}

// waitJoined waits up to timeout until address is a ready endpoint from after on, and returns when
// it first was; what names the replica in the failure.
func (t *endpointTracker) waitJoined(ctx context.Context, address string, after time.Time, timeout time.Duration, what string) time.Time {
	GinkgoHelper()
	joinedAt := func() (time.Time, bool) {
		return t.firstAt(after, func(ready []string) bool { return slices.Contains(ready, address) })
	}
	return waitFor(ctx, timeout, joinedAt, what+" is back in the webhook Service")
}

// waitFor waits up to timeout until at finds its time, and returns it.
func waitFor(ctx context.Context, timeout time.Duration, at func() (time.Time, bool), description string) time.Time {
	GinkgoHelper()
	var found time.Time
	Eventually(func() bool {
		var ok bool
		found, ok = at()
		return ok
	}).WithContext(ctx).WithTimeout(timeout).Should(BeTrue(), description)
	return found
}

// drain runs kubectl drain of node with args, after registering its uncordon for the spec's end,
// and returns kubectl's stderr, how long it took, and its error.
func drain(ctx context.Context, node string, args ...string) (string, time.Duration, error) {
	DeferCleanup(func(ctx SpecContext) {
		_, stderr, err := kubectl(ctx, "uncordon", node)
		Expect(err).NotTo(HaveOccurred(), stderr)
	}, NodeTimeout(time.Minute))
	start := time.Now()
	_, stderr, err := kubectl(ctx, append([]string{"drain", node}, args...)...)
	return stderr, time.Since(start), err
}

// managerPodSelector is kubectl drain's flag that limits it to the manager's pods: a drain of the
// first node would otherwise evict cert-manager and the other specs' operands too.
func managerPodSelector(ctx context.Context) string {
	return "--pod-selector=" + labels.SelectorFromSet(managerDeployment(ctx, Default).Spec.Selector.MatchLabels).String()
}

// servedAfterLeaving is how long a stopping replica went on serving (completing TLS handshakes on
// its webhook port) after its pod left the webhook Service's ready endpoints: the time
// kube-apiserver, which learns of the change a little later than the suite, has to stop sending
// it admission requests. It waits until the replica no longer serves.
func servedAfterLeaving(ctx context.Context, g Gomega, t *endpointTracker, w *servingWatch, pod *corev1.Pod, after time.Time) time.Duration {
	g.EventuallyWithOffset(1, w.stopped()).WithContext(ctx).WithTimeout(time.Minute).Should(BeClosed(), "pod %s never stopped serving", pod.Name)
	left, ok := t.leftAt(pod.Status.PodIP, after)
	g.ExpectWithOffset(1, ok).To(BeTrue(), "pod %s was never seen out of the Service's ready endpoints", pod.Name)
	return w.last().Sub(left)
}

// minServedAfterLeaving is the least a stopping replica must go on serving once out of the
// Service: the endpoint change still has to reach kube-apiserver's webhook client. A replica that
// stops on its own (a lost Lease) leaves the Service only once its readiness probe failed twice,
// a second apart, and kubelet reported it: 1.2–3.8 s of its 5 s --shutdown-delay.
const minServedAfterLeaving = time.Second

// minServedAfterDeleted is the least a deleted replica must go on serving once out of the Service:
// its pod leaves the EndpointSlice as soon as it is deleted, about when kubelet sends SIGTERM, so
// most of the 5 s --shutdown-delay is left (docs/operations.md).
const minServedAfterDeleted = 2500 * time.Millisecond

// leaseHolder is the pod whose manager holds the leader election Lease, by the identity
// controller-runtime gives it: its host name, the pod's name, then "_" and a UUID that is new in
// every run of the container. It is empty while nobody holds the Lease, as after a leader released
// it on its way out.
func leaseHolder(ctx context.Context, g Gomega) (string, *coordinationv1.Lease) {
	lease := &coordinationv1.Lease{}
	g.ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: fixtures.Namespace, Name: operator.LeaderElectionID}, lease)).To(Succeed())
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" {
		return "", lease
	}
	pod, _, found := strings.Cut(holder, "_")
	g.ExpectWithOffset(1, found).To(BeTrue(), "the Lease's holder %q is not <host name>_<uuid>", holder)
	return pod, lease
}

// liveLeader waits until a running manager holds the Lease, renewed within its renew period of
// 2 s (after a leader is killed, the Lease names it until it expires), and returns its pod.
func liveLeader(ctx context.Context, pods []corev1.Pod) string {
	var holder string
	EventuallyWithOffset(1, func(g Gomega) {
		var lease *coordinationv1.Lease
		holder, lease = leaseHolder(ctx, g)
		g.Expect(slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == holder })).To(BeTrue(),
			"the Lease's holder %q is none of the running replicas", holder)
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		g.Expect(time.Since(lease.Spec.RenewTime.Time)).To(BeNumerically("<", 3*time.Second), "the Lease was last renewed at %s", lease.Spec.RenewTime)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "a running replica leads")
	return holder
}

// managerStatus is the status of the manager container of pod, or nil.
func managerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == fixtures.ManagerContainer {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// waitManagerReady waits for expectManagerReady, and returns the pods.
func waitManagerReady(ctx context.Context, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		pods = expectManagerReady(ctx, g)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return pods
}

// killManager sends SIGKILL to the manager container's process of pod, for real: kubelet finds
// it dead, reports the pod not ready and starts the container again. It returns the killed
// container's ID.
func killManager(ctx context.Context, rec *podRecorder, pod *corev1.Pod) string {
	status := managerStatus(pod)
	ExpectWithOffset(1, status).NotTo(BeNil())
	ExpectWithOffset(1, status.ContainerID).NotTo(BeEmpty(), "the manager container of pod %s has not started", pod.Name)
	rec.markKilled(status.ContainerID)
	ExpectWithOffset(1, kube.KillContainer(ctx, status.ContainerID)).To(Succeed())
	return status.ContainerID
}

// restartCount is how many times kubelet started the manager container of pod again.
func restartCount(pod *corev1.Pod) int32 {
	if status := managerStatus(pod); status != nil {
		return status.RestartCount
	}
	return 0
}
