//go:build e2e

package e2e

import (
	"context"
	"net"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/test/e2e/cluster"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// startManagerKubelet runs every pod of the manager's Deployment, now and to come, as bin/manager
// (built with the Dockerfile's flags), each listening on its own pod IP.
func startManagerKubelet() *cluster.Kubelet {
	return kube.StartKubelet(fixtures.Namespace, cluster.Container{
		Name:   fixtures.ManagerContainer,
		Binary: cfg.manager,
		Args:   podNetworkArgs,
	})
}

// podNetworkArgs gives a replica of the manager the listen addresses of its own pod. In a cluster
// each pod has a network namespace of its own, so ":8081" binds that pod's interfaces only. Here
// every replica shares the test's network namespace, in which every pod IP is local: two replicas
// binding ":8081", ":8443" or the webhook server's every-interface default would collide, or one
// would answer at the other's pod IP. So the harness rewrites the bind flags to the pod IP, which is
// the isolation the pod's network namespace would give; the addresses the probes, the Service and
// the API server use are the same. The manager's defaults are bound explicitly the same way:
// --health-probe-bind-address (:8081) and --webhook-host (every interface).
func podNetworkArgs(pod *corev1.Pod, args []string) []string {
	ip := pod.Status.PodIP
	onPodIP := func(flag, value string) string {
		if flag == "--webhook-host" {
			if value == "" || value == "0.0.0.0" || value == "::" {
				return ip
			}
			return value
		}
		host, port, err := net.SplitHostPort(value)
		if err != nil || (host != "" && host != "0.0.0.0" && host != "::") {
			return value // "0" turns the server off; a host of its own is kept.
		}
		return net.JoinHostPort(ip, port)
	}
	bindFlags := map[string]bool{"--health-probe-bind-address": false, "--metrics-bind-address": false, "--webhook-host": false}
	var out []string
	for i := 0; i < len(args); i++ {
		flag, value, hasValue := strings.Cut(args[i], "=")
		if _, ok := bindFlags[flag]; !ok {
			out = append(out, args[i])
			continue
		}
		bindFlags[flag] = true
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		out = append(out, flag+"="+onPodIP(flag, value))
	}
	if !bindFlags["--health-probe-bind-address"] {
		out = append(out, "--health-probe-bind-address="+net.JoinHostPort(ip, "8081"))
	}
	if !bindFlags["--webhook-host"] {
		out = append(out, "--webhook-host="+ip)
	}
	return out
}

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

// expectManagerReady checks that every replica the Deployment asks for has a pod, whose container
// runs as a process of kubelet, reported Ready, and whose IP is a ready endpoint of the webhook
// Service. It returns the pods.
func expectManagerReady(ctx context.Context, g Gomega, kubelet *cluster.Kubelet) []corev1.Pod {
	d := managerDeployment(ctx, g)
	pods := managerPods(ctx, g)
	g.ExpectWithOffset(1, pods).To(HaveLen(int(ptr.Deref(d.Spec.Replicas, 1))), "the manager's pods")
	var ips []string
	for i := range pods {
		pod := &pods[i]
		g.ExpectWithOffset(1, podReady(pod)).To(BeTrue(), "pod %s is not Ready", pod.Name)
		p := kubelet.Pod(pod.Name)
		g.ExpectWithOffset(1, p).NotTo(BeNil(), "pod %s has no process", pod.Name)
		g.ExpectWithOffset(1, p.Running()).To(BeTrue(), "the container of pod %s does not run", pod.Name)
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
	for _, slice := range list.Items {
		for _, e := range slice.Endpoints {
			if ptr.Deref(e.Conditions.Ready, false) {
				addresses = append(addresses, e.Addresses...)
			}
		}
	}
	return addresses, nil
}

// endpointTracker polls the webhook Service's ready endpoints every 20 ms and keeps what it saw,
// so that a spec can tell when a replica left the Service, next to when its process stopped.
type endpointTracker struct {
	mu      sync.Mutex
	history []endpointSnapshot
	cancel  context.CancelFunc
	done    chan struct{}
}

type endpointSnapshot struct {
	at    time.Time
	ready []string
}

// maxEndpointSnapshots bounds the tracker's memory: 20 minutes of polls.
const maxEndpointSnapshots = 60000

// trackReadyEndpoints starts an endpointTracker, which the spec's end stops.
func trackReadyEndpoints(ctx context.Context) *endpointTracker {
	ctx, cancel := context.WithCancel(ctx)
	t := &endpointTracker{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(t.done)
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			ready, err := listReadyEndpoints(ctx)
			if err == nil {
				t.mu.Lock()
				if len(t.history) < maxEndpointSnapshots {
					t.history = append(t.history, endpointSnapshot{at: time.Now(), ready: ready})
				}
				t.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(t.stop)
	return t
}

func (t *endpointTracker) stop() {
	t.cancel()
	<-t.done
}

// leftAt is the first time from after on that address was not a ready endpoint.
func (t *endpointTracker) leftAt(address string, after time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.history {
		if !s.at.Before(after) && !slices.Contains(s.ready, address) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// servedAfterLeaving is how long the process of a deleted pod went on running after its pod
// left the webhook Service's ready endpoints: the time kube-apiserver, which learns of the
// change a little later than the suite, has to stop sending it admission requests.
func servedAfterLeaving(g Gomega, t *endpointTracker, p *cluster.PodProcess, deleted time.Time) time.Duration {
	left, ok := t.leftAt(p.Pod.Status.PodIP, deleted)
	g.ExpectWithOffset(1, ok).To(BeTrue(), "pod %s was never seen out of the Service's ready endpoints", p.Name)
	return p.StoppedAt().Sub(left)
}

// minServedAfterLeaving is the least a stopping replica must go on serving once out of the
// Service: the endpoint change still has to reach kube-apiserver's webhook client.
const minServedAfterLeaving = time.Second

// leaseHolder is the pod whose manager holds the leader election Lease, by the identity
// controller-runtime gives it: its host name, the pod's name, then "_" and a UUID. It is empty
// while nobody holds the Lease, as after a leader released it on its way out.
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

// waitManagerReady waits for expectManagerReady, and returns the pods.
func waitManagerReady(ctx context.Context, kubelet *cluster.Kubelet, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(kubelet.Errors()).To(BeEmpty())
		pods = expectManagerReady(ctx, g, kubelet)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return pods
}
