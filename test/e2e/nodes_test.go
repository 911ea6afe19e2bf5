//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/test/e2e/cluster"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// The namespaces of the loads of the specs on three nodes.
const (
	nodesDrainNamespace     = "e2e-nodes-drain"
	nodesCrowdedNamespace   = "e2e-nodes-crowded"
	nodesLossNamespace      = "e2e-nodes-loss"
	nodesPartitionNamespace = "e2e-nodes-partition"
	nodesPowerNamespace     = "e2e-nodes-power"
)

// partitionLeftMargin bounds how long after the policy staleness a replica cut off from the API
// server stays a ready endpoint of the webhook Service: kubelet's two failed probes a second
// apart, and the EndpointSlice's update.
const partitionLeftMargin = 10 * time.Second

// partitionBackBound bounds how long after its link is back a cut-off replica takes to be a ready
// endpoint again. Its connection to the API server, silent through the cut, resumes at TCP's next
// retransmission (seconds apart by then) or is replaced once client-go's HTTP/2 health check gives
// up on it (no frame for 30 s, then a ping unanswered for 15 s: at most about 16 s after a cut of
// 29 s); then its watch catches up, its next question (a tenth of the staleness) confirms the
// policy, kubelet probes and the EndpointSlice follows.
const partitionBackBound = 30 * time.Second

// nodeLossLeftBound bounds how long after its node is cut off a replica stays a ready endpoint of
// the webhook Service: kube-controller-manager notices the Lease not renewed within its grace
// period (counted from the last renewal, up to a quarter of the Lease before the cut) and its
// next check, then marks the pods not ready, and the EndpointSlice follows.
const nodeLossLeftBound = cluster.NodeMonitorGracePeriod + 10*time.Second

// nodeLossCallMargin bounds how long after the lost replica left the Service a call resolved to
// it may still fail: one sent just before, waiting out the webhooks' timeoutSeconds (1 s), and
// kube-apiserver's own view of the EndpointSlice, a moment behind the suite's.
const nodeLossCallMargin = 3 * time.Second

// apiServerIdleConnTimeout is how long kube-apiserver keeps a connection to a webhook idle before
// it closes it: its webhook clients' transport is client-go's, which takes net/http's default
// (utilnet.SetTransportDefaults). A call goes out over a kept-alive connection without the
// Service being resolved again, so one to a lost replica fails a call taken over it, the
// Service's endpoints notwithstanding, until this long after its last answer.
const apiServerIdleConnTimeout = 90 * time.Second

// The highly available install on a cluster of three real nodes: the first node and two that
// cluster.AddNode adds, each in a network namespace of its own. The other containers run on the
// first node alone: the two nodes are drained and removed after these specs.
var _ = Describe("The highly available install on three nodes", Label("nodes"), Ordered, ContinueOnFailure, func() {
	// rec records how the manager's containers end, and their logs.
	var rec *podRecorder

	BeforeAll(func(ctx SpecContext) {
		var added []string
		DeferCleanup(func(ctx SpecContext) {
			// Whatever runs there (cert-manager, after a drain of the first node) goes back to the
			// first node the way a decommissioned node's pods go: evicted, then the nodes removed.
			for _, name := range added {
				_, stderr, err := kubectl(ctx, "cordon", name)
				Expect(err).NotTo(HaveOccurred(), stderr)
			}
			// Each node is removed, whatever came of the other.
			var errs []error
			for _, name := range added {
				if _, stderr, err := kubectl(ctx, "drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=2m"); err != nil {
					errs = append(errs, fmt.Errorf("kubectl drain %s: %w: %s", name, err, stderr))
				}
				errs = append(errs, kube.RemoveNode(ctx, name))
			}
			Expect(errors.Join(errs...)).NotTo(HaveOccurred())
			expectCertManagerAvailable(ctx)
		}, NodeTimeout(5*time.Minute))
		used, err := cluster.TmpfsUsed()
		Expect(err).NotTo(HaveOccurred())
		for range len(cluster.NodeNames) - 1 {
			start := time.Now()
			name, err := kube.AddNode(ctx)
			Expect(err).NotTo(HaveOccurred())
			added = append(added, name)
			AddReportEntry("nodes: "+name+" Ready, its Services programmed, after", time.Since(start).Round(time.Millisecond).String())
			now, err := cluster.TmpfsUsed()
			Expect(err).NotTo(HaveOccurred())
			AddReportEntry("nodes: "+name+"'s state on the tmpfs /run at start (the images imported, containerd's and kubelet's state)", fmt.Sprintf("%.1f MiB", float64(now-used)/(1<<20)))
			used = now
		}
		costs, err := kube.NodeCosts()
		Expect(err).NotTo(HaveOccurred())
		var lines []string
		for _, cost := range costs {
			lines = append(lines, fmt.Sprintf("%s: RSS %.0f MiB, %d threads, %d inotify watches", cost.Name, float64(cost.RSS)/(1<<20), cost.Threads, cost.InotifyWatches))
		}
		AddReportEntry("nodes: containerd, kubelet and kube-proxy of each node", strings.Join(lines, "\n"))

		rec = recordManagers("managers-nodes")
		DeferCleanup(forceUninstall)
		out, err := deployWithClientCA(ctx)
		Expect(err).NotTo(HaveOccurred(), "make deploy %s:\n%s", clientCADeployConfig, out)
		waitManagerReady(ctx, 2*time.Minute)
		for _, ns := range []string{nodesDrainNamespace, nodesCrowdedNamespace, nodesLossNamespace, nodesPartitionNamespace, nodesPowerNamespace} {
			Expect(k8s.Create(ctx, restrictedNamespace(ns))).To(Succeed())
		}
	}, NodeTimeout(6*time.Minute))

	It("runs the manager's replicas on different nodes, again after each of two rollout restarts", func(ctx SpecContext) {
		expectSpread(ctx, "after make deploy")
		for i := range 2 {
			restartManager(ctx)
			expectSpread(ctx, fmt.Sprintf("after rollout restart %d", i+1))
		}
	}, SpecTimeout(8*time.Minute))

	It("drains the leader's node under load: a replica always ready, one Lease transition, the replacement on the third node, every request admitted", func(ctx SpecContext) {
		before := waitManagerReady(ctx, time.Minute)
		exitsBefore := len(rec.exits())
		leader := liveLeader(ctx, before)
		leaderPod := before[slices.IndexFunc(before, func(p corev1.Pod) bool { return p.Name == leader })]
		survivor := before[slices.IndexFunc(before, func(p corev1.Pod) bool { return p.Name != leader })]
		drained := leaderPod.Spec.NodeName
		third := slices.DeleteFunc(slices.Clone(cluster.NodeNames), func(n string) bool {
			return slices.ContainsFunc(before, func(p corev1.Pod) bool { return p.Spec.NodeName == n })
		})
		Expect(third).To(HaveLen(1), "the replicas run on two of the three nodes")
		_, lease := leaseHolder(ctx, Default)
		transitions := ptr.Deref(lease.Spec.LeaseTransitions, 0)

		load := startCRLoad(ctx, loadOptions{namespace: nodesDrainNamespace, perKind: loadPerKind, interval: loadInterval, maxRequests: 900})
		Eventually(load.acknowledged).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">=", 10))
		endpoints := trackReadyEndpoints(ctx)

		start := time.Now()
		stderr, took, err := drain(ctx, drained, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred(), "kubectl drain %s:\n%s", drained, stderr)
		AddReportEntry("drain: kubectl drain of the leader's node "+drained+" took", took.Round(time.Millisecond).String())

		after := waitManagerReady(ctx, 2*time.Minute)
		AddReportEntry("drain: the replicas after", placement(after))
		Expect(after).To(ContainElement(HaveField("UID", survivor.UID)), "the replica on the other node runs on")
		replacement := after[slices.IndexFunc(after, func(p corev1.Pod) bool { return p.UID != survivor.UID })]
		Expect(replacement.Spec.NodeName).To(Equal(third[0]), "the replacement runs on the node that had no replica")
		endpoints.expectInServiceSince(start)
		// The drained leader released the Lease on its way out; whichever replica asked first took
		// it, the survivor or, as often, the replacement as it started.
		AddReportEntry("drain: the new leader", liveLeader(ctx, after))
		_, lease = leaseHolder(ctx, Default)
		Expect(ptr.Deref(lease.Spec.LeaseTransitions, 0)).To(Equal(transitions+1), "the Lease changed hands once")

		finishLoadWithoutFailures(ctx, load, "drain on three nodes")
		expectStoppedCleanly(ctx, rec, leaderPod.Name)
		expectNoExits(rec, exitsBefore)
	}, SpecTimeout(8*time.Minute))

	// The first node, so that the replicas end on the two added nodes, where the specs after this
	// one need them; only the manager's pods, as the first node also runs cert-manager.
	It("drains the node that runs both replicas: kubectl waits on the disruption budget, the replicas move to the other nodes, every request admitted", func(ctx SpecContext) {
		crowded := cluster.NodeName
		By("running both replicas on " + crowded + ", the others cordoned")
		pods := restartManagerOn(ctx, crowded)
		AddReportEntry("crowded drain: the replicas before", placement(pods))
		exitsBefore := len(rec.exits())
		load := startCRLoad(ctx, loadOptions{namespace: nodesCrowdedNamespace, perKind: loadPerKind, interval: loadInterval, maxRequests: 900})
		Eventually(load.acknowledged).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">=", 10))
		endpoints := trackReadyEndpoints(ctx)

		start := time.Now()
		stderr, took, err := drain(ctx, crowded, managerPodSelector(ctx), "--delete-emptydir-data", "--timeout=3m")
		Expect(err).NotTo(HaveOccurred(), "kubectl drain %s:\n%s", crowded, stderr)
		AddReportEntry("crowded drain: kubectl drain of "+crowded+" took", took.Round(time.Millisecond).String())
		blocked := strings.Count(stderr, "Cannot evict pod as it would violate the pod's disruption budget")
		AddReportEntry("crowded drain: evictions the disruption budget refused, each retried 5 s later", blocked)
		Expect(blocked).To(BeNumerically(">=", 1), "kubectl drain never waited on the disruption budget:\n%s", stderr)

		after := waitManagerReady(ctx, 2*time.Minute)
		AddReportEntry("crowded drain: the replicas after", placement(after))
		var nodes []string
		for _, pod := range after {
			nodes = append(nodes, pod.Spec.NodeName)
		}
		Expect(nodes).To(ConsistOf(cluster.NodeNames[1:]), "one replica on each of the other nodes")
		endpoints.expectInServiceSince(start)
		finishLoadWithoutFailures(ctx, load, "drain of the node of both replicas")
		for _, pod := range pods {
			expectStoppedCleanly(ctx, rec, pod.Name)
		}
		expectNoExits(rec, exitsBefore)
	}, SpecTimeout(8*time.Minute))

	It("takes a replica cut off from the API server out of the Service within the policy staleness, so that none answers under a policy changed meanwhile, and back once it reaches the API server", func(ctx SpecContext) {
		pods := replicasOffTheFirstNode(ctx)
		exitsBefore := len(rec.exits())
		leader := liveLeader(ctx, pods)
		cutPod := pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name != leader })]
		survivor := pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == leader })]
		address := cutPod.Status.PodIP
		review := newReplicaReview(ctx, nodesPartitionNamespace, "moving", "nginx:latest")
		load := startCRLoad(ctx, loadOptions{namespace: nodesPartitionNamespace, perKind: loadPerKind, interval: loadInterval, maxRequests: 900})
		Eventually(load.acknowledged).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">=", 10))
		endpoints := trackReadyEndpoints(ctx)

		By("cutting " + cutPod.Name + ", which does not lead, off the API server")
		cut := time.Now()
		Expect(kube.CutFromAPIServer(ctx, cutPod.Spec.NodeName, address)).To(Succeed())
		reconnected := false
		DeferCleanup(func(ctx SpecContext) {
			if !reconnected {
				Expect(kube.ReconnectToAPIServer(ctx, cutPod.Spec.NodeName, address)).To(Succeed())
			}
		}, NodeTimeout(time.Minute))
		left := endpoints.waitLeft(ctx, address, cut, operator.DefaultPolicyStaleness+partitionLeftMargin, "the cut-off replica")
		AddReportEntry("partition: the cut-off replica out of the webhook Service after", left.Sub(cut).Round(time.Millisecond).String())
		// It asks the API server every tenth of the staleness: its last answer came at most that
		// long before the cut.
		Expect(left.Sub(cut)).To(BeNumerically(">=", operator.DefaultPolicyStaleness*9/10), "the replica left before the staleness ran out")

		By("changing the AdmissionPolicy meanwhile: a moving tag is only a warning")
		policy := &policyv1.AdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
			Spec:       policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{ID: "deployobject.image.pinned", Action: policyv1.Warn}}},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, policy))).To(Succeed())
		}, NodeTimeout(time.Minute))
		Eventually(func(g Gomega) {
			g.Expect(review.on(ctx, g, survivor).Allowed).To(BeTrue(), "the replica that reaches the API server applies the new policy")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(review.on(ctx, Default, cutPod).Allowed).To(BeFalse(), "the cut-off replica holds the policy of before the cut, out of the Service")

		By("reconnecting it")
		back := time.Now()
		Expect(kube.ReconnectToAPIServer(ctx, cutPod.Spec.NodeName, address)).To(Succeed())
		reconnected = true
		joined := endpoints.waitJoined(ctx, address, back, partitionBackBound, "the cut-off replica")
		AddReportEntry("partition: back in the webhook Service after its link came back", joined.Sub(back).Round(time.Millisecond).String())
		answer := review.on(ctx, Default, cutPod)
		Expect(answer.Allowed).To(BeTrue(), "the replica is back under the policy changed while it was cut off: %v", answer.Result)

		endpoints.expectInServiceSince(cut)
		finishLoadWithoutFailures(ctx, load, "partition")
		Expect(k8s.Delete(ctx, policy)).To(Succeed())
		expectNoExits(rec, exitsBefore)
	}, SpecTimeout(6*time.Minute))

	It("loses the leader's node: admissions time out only on calls to its replica, until it leaves the Service and over connections kept alive to it, the other replica leads, the node's pods move, and it comes back clean", func(ctx SpecContext) {
		loseLeadersNode(ctx, linkCut)
	}, SpecTimeout(10*time.Minute))

	It("loses power on the leader's node, its pods frozen and every process of it killed: the same bounds as a cut link, and it boots clean", func(ctx SpecContext) {
		loseLeadersNode(ctx, powerLoss)
	}, SpecTimeout(10*time.Minute))
})

// A nodeLoss is a way a node is lost, and comes back.
type nodeLoss struct {
	// name heads the report's entries.
	name string
	// namespace holds the load of the spec.
	namespace string
	// lost and back say what lose and comeBack do, for the spec's steps.
	lost, back string
	// lose takes the node off the cluster at once, its replica silent; comeBack undoes it.
	lose, comeBack func(ctx context.Context, node string) error
}

var (
	// linkCut cuts the node's link: its processes run on, unheard.
	linkCut = nodeLoss{
		name: "node loss", namespace: nodesLossNamespace, lost: "cutting %s off the network", back: "restoring %s's link",
		lose:     func(ctx context.Context, node string) error { return kube.CutNode(ctx, node) },
		comeBack: func(ctx context.Context, node string) error { return kube.RestoreNode(ctx, node) },
	}
	// powerLoss stops the node as a machine stops without power, and boots it again.
	powerLoss = nodeLoss{
		name: "power loss", namespace: nodesPowerNamespace, lost: "cutting %s's power", back: "booting %s",
		lose: func(ctx context.Context, node string) error {
			killed, err := kube.PowerOffNode(ctx, node)
			AddReportEntry("power loss: processes killed besides containerd, kubelet and kube-proxy: containerd shims / in the pods' cgroups",
				fmt.Sprintf("%d / %d", killed.Shims, killed.InPods))
			if err == nil && (killed.Shims == 0 || killed.InPods == 0) {
				err = fmt.Errorf("%s, which runs pods, lost power with no containerd shim or no pod's process to kill", node)
			}
			return err
		},
		comeBack: func(ctx context.Context, node string) error { return kube.PowerOnNode(ctx, node) },
	}
)

// loseLeadersNode loses the node of the leading replica, both replicas first off the first node,
// under admission load, and asserts what a lost node may cost: calls that time out, only to the
// lost replica, only until it leaves the Service and over the connections kube-apiserver kept
// alive to it; the other replica leads, a replacement runs on a node that is up, and the lost node
// comes back Ready, untainted and rid of its evicted pods.
func loseLeadersNode(ctx context.Context, how nodeLoss) {
	pods := replicasOffTheFirstNode(ctx)
	expectSpread(ctx, "off the first node")

	leader := liveLeader(ctx, pods)
	lostPod := pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == leader })]
	survivor := pods[slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name != leader })]
	lost := lostPod.Spec.NodeName
	load := startCRLoad(ctx, loadOptions{namespace: how.namespace, perKind: loadPerKind, interval: loadInterval, maxRequests: 1200})
	Eventually(load.acknowledged).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">=", 30))
	endpoints := trackReadyEndpoints(ctx)

	By(fmt.Sprintf(how.lost, lost))
	// Registered first, so that a loss that fails halfway is undone too.
	restored := false
	DeferCleanup(func(ctx SpecContext) {
		if !restored {
			Expect(how.comeBack(ctx, lost)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute)) // a boot of a node whose processes still run stops them first
	cut := time.Now()
	Expect(how.lose(ctx, lost)).To(Succeed())
	// No connection to the lost replica can be made from now on (its SYN is dropped), so those
	// kube-apiserver holds are all it will ever send a call over once the replica is out of
	// the Service.
	lostAddress := netip.MustParseAddrPort(net.JoinHostPort(lostPod.Status.PodIP, webhookPort))
	kept, err := kube.APIServerConnectionsTo(lostAddress)
	Expect(err).NotTo(HaveOccurred())
	left := endpoints.waitLeft(ctx, lostPod.Status.PodIP, cut, nodeLossLeftBound, "the lost replica")
	AddReportEntry(how.name+": the lost replica out of the webhook Service after", left.Sub(cut).Round(time.Millisecond).String())
	keptOut, err := kube.APIServerConnectionsTo(lostAddress)
	Expect(err).NotTo(HaveOccurred())
	Expect(liveLeader(ctx, []corev1.Pod{survivor})).To(Equal(survivor.Name), "the replica on a node that is up leads")
	AddReportEntry(how.name+": the other replica leads after", time.Since(cut).Round(time.Millisecond).String())

	// The taint evicts the lost node's pods after NodeLossToleration; their controllers replace
	// them on nodes that are up: the manager's replica, and the load's operands.
	var replacement corev1.Pod
	Eventually(func(g Gomega) {
		now := expectManagerReady(ctx, g)
		g.Expect(now).To(ContainElement(HaveField("UID", survivor.UID)))
		replacement = now[slices.IndexFunc(now, func(p corev1.Pod) bool { return p.UID != survivor.UID })]
	}).WithContext(ctx).WithTimeout(cluster.NodeMonitorGracePeriod + cluster.NodeLossToleration + maxReplacement).Should(Succeed())
	AddReportEntry(how.name+": a replacement replica Ready after", time.Since(cut).Round(time.Millisecond).String())
	Expect(replacement.Spec.NodeName).NotTo(Equal(lost))
	AddReportEntry(how.name+": the replicas after", placement([]corev1.Pod{survivor, replacement}))

	// Each connection closes when a call over it times out, or when it has been idle for
	// kube-apiserver's idle timeout; its last use was before the cut.
	Eventually(func() (int, error) { return kube.APIServerConnectionsTo(lostAddress) }).WithContext(ctx).
		WithTimeout(time.Until(cut.Add(apiServerIdleConnTimeout+nodeLossCallMargin))).
		Should(BeZero(), "kube-apiserver's connections to the lost replica")
	closed := time.Now()
	AddReportEntry(how.name+": kube-apiserver's connections to the lost replica, at the cut / as it left the Service / none left after",
		fmt.Sprintf("%d / %d / %s", kept, keptOut, closed.Sub(cut).Round(time.Second)))

	By(fmt.Sprintf(how.back, lost))
	restored = true // tried once, whatever comes of it
	back := time.Now()
	Expect(how.comeBack(ctx, lost)).To(Succeed())
	Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Name: lost}, node)).To(Succeed())
		g.Expect(node.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		g.Expect(node.Spec.Taints).To(BeEmpty(), "the node's taints")
		list := &corev1.PodList{}
		g.Expect(k8s.List(ctx, list, client.MatchingFields{"spec.nodeName": lost})).To(Succeed())
		for _, pod := range list.Items {
			g.Expect(pod.DeletionTimestamp).To(BeNil(), "pod %s/%s, evicted while the node was lost, is still there", pod.Namespace, pod.Name)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	AddReportEntry(how.name+": the node Ready, untainted and rid of its evicted pods after it began to come back", time.Since(back).Round(time.Millisecond).String())

	progress := load.acknowledged()
	Eventually(load.acknowledged).WithContext(ctx).WithTimeout(time.Minute).Should(BeNumerically(">=", progress+10))
	stats := load.stop()
	reportLoad(how.name, stats, nil)
	var first, last time.Time
	var afterLeft []loadFailure
	for _, f := range stats.admissionFailures {
		// kube-apiserver names the Service's host in the error, not the address it dialled; a
		// timeout is what a call to the replica that cannot answer comes to, and the other one
		// answers.
		Expect(isCallTimeout(f.err.Error())).To(BeTrue(), "a failure other than a call that timed out: %s", f)
		Expect(f.at).To(BeTemporally(">", cut), "a call failed before the cut: %s", f)
		Expect(f.at).To(BeTemporally("<=", closed.Add(nodeLossCallMargin)), "a call failed after kube-apiserver's last connection to the lost replica closed: %s", f)
		if f.at.After(left.Add(nodeLossCallMargin)) {
			afterLeft = append(afterLeft, f)
		}
		if first.IsZero() {
			first = f.at
		}
		last = f.at
	}
	// Out of the Service, the replica is sent only what goes over a connection already open
	// to it, and such a call fails once: it closes the connection.
	Expect(len(afterLeft)).To(BeNumerically("<=", kept), "calls that failed %s or more after the lost replica left the Service, more than kube-apiserver's %d connections to it:\n%s",
		nodeLossCallMargin, kept, strings.Join(failureLines(afterLeft), "\n"))
	window := "none failed"
	if !first.IsZero() {
		window = fmt.Sprintf("%s to %s after the cut, %d after the replica left the Service", first.Sub(cut).Round(time.Millisecond), last.Sub(cut).Round(time.Millisecond), len(afterLeft))
	}
	AddReportEntry(how.name+": failed admissions", fmt.Sprintf("%d of %d requests, %s", len(stats.admissionFailures), stats.creates+stats.updates+stats.deletes, window))
	Expect(failureLines(stats.otherFailures)).To(BeEmpty(), "requests of the load failed for another reason than admission")
	converged := load.waitConverged(ctx, 3*time.Minute)
	AddReportEntry(how.name+": time to converge after the load stopped", converged.Round(time.Millisecond).String())
}

// isCallTimeout reports whether msg, kube-apiserver's error for a webhook call, says the call
// timed out (the webhooks' timeoutSeconds): what a call to an address that no longer answers, not
// even with a reset, comes to.
func isCallTimeout(msg string) bool {
	return strings.Contains(msg, "failed calling webhook") &&
		(strings.Contains(msg, "context deadline exceeded") || strings.Contains(msg, "i/o timeout") || strings.Contains(msg, "Client.Timeout exceeded"))
}

// replicasOffTheFirstNode returns the manager's ready pods, once none runs on the first node,
// which shares the suite's network and so cannot be cut off: as they are if none does, or else
// restarted onto the added nodes (restartManagerOn).
func replicasOffTheFirstNode(ctx context.Context) []corev1.Pod {
	GinkgoHelper()
	pods := waitManagerReady(ctx, 2*time.Minute)
	if slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == cluster.NodeName }) {
		By("moving both replicas off the first node")
		pods = restartManagerOn(ctx, cluster.NodeNames[1:]...)
	}
	return pods
}

// restartManagerOn restarts the manager (restartManager) with every node but nodes cordoned, so
// that its replicas run on nodes alone, and uncordons them again; it returns the pods.
func restartManagerOn(ctx context.Context, nodes ...string) []corev1.Pod {
	GinkgoHelper()
	var cordoned []string
	for _, n := range cluster.NodeNames {
		if !slices.Contains(nodes, n) {
			cordoned = append(cordoned, n)
		}
	}
	uncordon := func(ctx context.Context) {
		for _, n := range cordoned {
			_, stderr, err := kubectl(ctx, "uncordon", n)
			Expect(err).NotTo(HaveOccurred(), stderr)
		}
	}
	DeferCleanup(uncordon, NodeTimeout(time.Minute))
	for _, n := range cordoned {
		_, stderr, err := kubectl(ctx, "cordon", n)
		Expect(err).NotTo(HaveOccurred(), stderr)
	}
	pods := restartManager(ctx)
	for _, pod := range pods {
		Expect(nodes).To(ContainElement(pod.Spec.NodeName), "pod %s runs on a cordoned node", pod.Name)
	}
	uncordon(ctx)
	return pods
}

// restartManager runs kubectl rollout restart of the manager, waits for kubectl rollout status,
// and then until every replica is Ready and none is of before the restart; it returns the pods.
func restartManager(ctx context.Context) []corev1.Pod {
	before := waitManagerReady(ctx, time.Minute)
	_, stderr, err := kubectl(ctx, "rollout", "restart", "-n", fixtures.Namespace, "deployment/"+fixtures.ManagerDeployment)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), stderr)
	_, stderr, err = kubectl(ctx, "rollout", "status", "-n", fixtures.Namespace, "deployment/"+fixtures.ManagerDeployment, "--timeout=3m")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), stderr)
	var pods []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		pods = expectManagerReady(ctx, g)
		for _, pod := range pods {
			g.Expect(slices.ContainsFunc(before, func(old corev1.Pod) bool { return old.UID == pod.UID })).To(BeFalse(), "pod %s is of before the restart", pod.Name)
		}
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	return pods
}

// expectSpread waits until every manager replica is ready and checks that no two share a node,
// reporting where they run.
func expectSpread(ctx context.Context, when string) {
	pods := waitManagerReady(ctx, 2*time.Minute)
	nodes := map[string]bool{}
	for _, pod := range pods {
		nodes[pod.Spec.NodeName] = true
	}
	AddReportEntry("spread: the replicas "+when, placement(pods))
	ExpectWithOffset(1, nodes).To(HaveLen(len(pods)), "the replicas %s share a node: %s", when, placement(pods))
}

// placement says which node each pod runs on.
func placement(pods []corev1.Pod) string {
	var lines []string
	for _, pod := range pods {
		lines = append(lines, pod.Name+" on "+pod.Spec.NodeName)
	}
	return strings.Join(lines, ", ")
}

// expectCertManagerAvailable waits until every replica of cert-manager's controllers is available
// again, after its pod moved.
func expectCertManagerAvailable(ctx context.Context) {
	EventuallyWithOffset(1, func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: cluster.CertManagerNamespace, Name: "cert-manager"}, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(ptr.Deref(d.Spec.Replicas, 1)))
		g.Expect(d.Status.AvailableReplicas).To(Equal(ptr.Deref(d.Spec.Replicas, 1)))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}
