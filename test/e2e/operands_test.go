//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/e2e/cluster"
)

// operandsNamespace holds the objects whose operands the specs reach; it enforces the restricted
// Pod Security Standard.
const operandsNamespace = "e2e-operands"

// The operands are reached as a client in the cluster reaches them: at their Service's cluster IP,
// through the rules kube-proxy programs on the node, and at a NodePort on the node's address.
var _ = Describe("The operands of each kind, serving for real", Ordered, func() {
	var clientset *kubernetes.Clientset

	BeforeAll(func(ctx SpecContext) {
		deployWithNamespace(ctx, operandsNamespace, true)
		var err error
		clientset, err = kubernetes.NewForConfig(kube.Config)
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(4*time.Minute))

	It("serves a Welcome's greeting from every replica, at its cluster IP and node port, and the new name once spec.name changes", func(ctx SpecContext) {
		w := &authv1.Welcome{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandsNamespace, Name: "greeter"},
			Spec:       authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)},
		}
		Expect(k8s.Create(ctx, w)).To(Succeed())
		waitAvailable(ctx, "Welcome", w)
		svc := service(ctx, w.Name)
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
		clusterURL := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/hello/"
		nodePortURL := "http://" + net.JoinHostPort(cluster.NodeIP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort))) + "/hello/"
		pods := servingPodsOf(ctx, w, 2)
		Eventually(httpGet).WithContext(ctx).WithArguments(clusterURL).WithTimeout(serviceSync).Should(Equal("Hello Ada"))
		Eventually(httpGet).WithContext(ctx).WithArguments(nodePortURL).WithTimeout(serviceSync).Should(Equal("Hello Ada"))

		By("answering from both replicas through the Service, as each one's access log shows")
		// kube-proxy takes up to a second to add a replica that just turned ready.
		sent := 0
		Eventually(func(g Gomega) {
			for range 10 {
				g.Expect(httpGet(ctx, clusterURL)).To(Equal("Hello Ada"))
				sent++
			}
			for _, pod := range pods {
				log, err := clientset.CoreV1().Pods(operandsNamespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(log)).To(ContainSubstring(`"path":"/hello/","status":200`), "pod %s answered none of %d requests", pod.Name, sent)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		AddReportEntry("Welcome: requests at the Service until both replicas had answered", sent)

		By("rolling out a new spec.name, which is then served")
		Expect(k8s.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"name":"Grace"}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(kinds["Welcome"].available(get(ctx, g, client.ObjectKeyFromObject(w), &authv1.Welcome{}))).To(Succeed())
			for range 10 {
				g.Expect(httpGet(ctx, clusterURL)).To(Equal("Hello Grace"))
			}
			g.Expect(httpGet(ctx, nodePortURL)).To(Equal("Hello Grace"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	}, SpecTimeout(4*time.Minute))

	It("stores and reads a key through a Memcached's Service, runs exactly size memcached pods, and follows kubectl scale", func(ctx SpecContext) {
		m := &cachev1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandsNamespace, Name: "cache"},
			Spec:       cachev1.MemcachedSpec{Size: ptr.To[int32](3)},
		}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		waitAvailable(ctx, "Memcached", m)
		pods := servingPodsOf(ctx, m, 3)
		stored := get(ctx, Default, client.ObjectKeyFromObject(m), &cachev1.Memcached{}).(*cachev1.Memcached)
		Expect(stored.Status.Nodes).To(ConsistOf(podNames(pods)), "status.nodes lists the running memcached pods")

		svc := service(ctx, m.Name)
		address := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
		Eventually(memcachedSetGet).WithContext(ctx).WithArguments(address, "e2e", "stored through the Service").WithTimeout(serviceSync).
			Should(Equal("stored through the Service"))

		By("scaling to one with kubectl scale")
		_, stderr, err := kubectl(ctx, "scale", "-n", operandsNamespace, "memcached/"+m.Name, "--replicas=1")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(func(g Gomega) {
			current := get(ctx, g, client.ObjectKeyFromObject(m), &cachev1.Memcached{}).(*cachev1.Memcached)
			g.Expect(kinds["Memcached"].available(current)).To(Succeed())
			pods := readyPodsOf(ctx, g, m, 1)
			g.Expect(current.Status.Nodes).To(Equal(podNames(pods)))
			all := &corev1.PodList{}
			g.Expect(k8s.List(ctx, all, client.InNamespace(operandsNamespace), client.MatchingLabels(resources.MemcachedSelector(m.Name)))).To(Succeed())
			g.Expect(all.Items).To(HaveLen(1), "pods left, terminating ones included")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		Eventually(memcachedSetGet).WithContext(ctx).WithArguments(address, "e2e", "one left").WithTimeout(serviceSync).Should(Equal("one left"))
	}, SpecTimeout(4*time.Minute))

	It("passes a DeployObject's env to its process on both ports, rolls an image change out with no failed request, and serves a changed port", func(ctx SpecContext) {
		d := &appv1.DeployObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandsNamespace, Name: "echo"},
			Spec: appv1.DeployObjectSpec{
				Image:    cfg.echo + ":v1",
				Replicas: ptr.To[int32](2),
				Ports:    []corev1.ServicePort{{Name: "http", Port: 8080}, {Name: "admin", Port: 9090}},
				Env: []corev1.EnvVar{
					{Name: "LISTEN", Value: "8080,9090"},
					{Name: "GREETING", Value: "hello from the spec"},
				},
				// Without a readiness probe a pod is ready once its container runs, before its
				// process listens, and a request routed to it in between is refused: CI saw one.
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1},
			},
		}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		waitAvailable(ctx, "DeployObject", d)
		servingPodsOf(ctx, d, 2)
		svc := service(ctx, d.Name)
		url := func(port int) string {
			return "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(port)) + "/"
		}
		Eventually(func(g Gomega) {
			for _, port := range []int{8080, 9090} {
				reply := echoGet(ctx, g, url(port))
				g.Expect(reply.Port).To(Equal(port))
				g.Expect(reply.Version).To(Equal("v1"))
				g.Expect(reply.Env).To(HaveKeyWithValue("GREETING", "hello from the spec"))
			}
		}).WithContext(ctx).WithTimeout(serviceSync).Should(Succeed())

		By("changing the image under a steady stream of requests at the Service")
		load := startHTTPLoad(ctx, url(8080))
		Eventually(load.served).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 20))
		start := time.Now()
		Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, cfg.echo+":v2"))))).To(Succeed())
		Eventually(func(g Gomega) {
			current := get(ctx, g, client.ObjectKeyFromObject(d), &appv1.DeployObject{}).(*appv1.DeployObject)
			g.Expect(kinds["DeployObject"].available(current)).To(Succeed())
			g.Expect(current.Status.UpdatedReplicas).To(BeEquivalentTo(2))
			for _, pod := range readyPodsOf(ctx, g, d, 2) {
				g.Expect(pod.Spec.Containers[0].Image).To(Equal(cfg.echo + ":v2"))
			}
			g.Expect(load.lastVersions(20)).To(HaveEach("v2"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		AddReportEntry("DeployObject image change: until only v2 answered", time.Since(start).Round(time.Millisecond).String())
		failures := load.stop()
		AddReportEntry("DeployObject image change: requests at the Service", fmt.Sprintf("%d served (v1 then v2), %d failed", load.served(), len(failures)))
		Expect(failures).To(BeEmpty(), "requests at the Service failed during the rollout")

		By("moving the second port")
		patch := `{"spec":{"ports":[{"name":"http","port":8080},{"name":"admin","port":9191}],"env":[{"name":"LISTEN","value":"8080,9191"},{"name":"GREETING","value":"hello from the spec"}]}}`
		Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		Eventually(func(g Gomega) {
			current := get(ctx, g, client.ObjectKeyFromObject(d), &appv1.DeployObject{}).(*appv1.DeployObject)
			g.Expect(kinds["DeployObject"].available(current)).To(Succeed())
			g.Expect(service(ctx, d.Name).Spec.Ports).To(ConsistOf(HaveField("Port", BeEquivalentTo(8080)), HaveField("Port", BeEquivalentTo(9191))))
			g.Expect(echoGet(ctx, g, url(9191)).Port).To(Equal(9191))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(echoGet(ctx, Default, url(8080)).Port).To(Equal(8080))
	}, SpecTimeout(5*time.Minute))

	It("passes a DeployObject's args to its process, and rolls a change out only once its readiness probe passes", func(ctx SpecContext) {
		probe := func(port int32) *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(port)}}, PeriodSeconds: 1}
		}
		d := &appv1.DeployObject{
			ObjectMeta: metav1.ObjectMeta{Namespace: operandsNamespace, Name: "probed"},
			Spec: appv1.DeployObjectSpec{
				Image:          cfg.echo + ":v1",
				Ports:          []corev1.ServicePort{{Name: "http", Port: 8080}},
				Env:            []corev1.EnvVar{{Name: "LISTEN", Value: "8080"}},
				Args:           []string{"--from-the-spec", "$(LISTEN)"},
				ReadinessProbe: probe(8080),
			},
		}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		waitAvailable(ctx, "DeployObject", d)
		before := servingPodsOf(ctx, d, 1)
		svc := service(ctx, d.Name)
		url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/"
		Eventually(func(g Gomega) {
			g.Expect(echoGet(ctx, g, url).Args).To(Equal([]string{"--from-the-spec", "8080"}), "kubelet expands $(LISTEN) from spec.env")
		}).WithContext(ctx).WithTimeout(serviceSync).Should(Succeed())

		By("probing a port nothing listens on: the new pod runs and is never ready, the old one serves")
		Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"readinessProbe":{"httpGet":{"port":8081}}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			current := get(ctx, g, client.ObjectKeyFromObject(d), &appv1.DeployObject{}).(*appv1.DeployObject)
			g.Expect(current.Status.ObservedGeneration).To(Equal(current.Generation))
			g.Expect(meta.FindStatusCondition(current.Status.Conditions, conditions.Ready)).To(And(
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", conditions.ReasonReconciling)))
			g.Expect(meta.IsStatusConditionTrue(current.Status.Conditions, conditions.Reconciling)).To(BeTrue())
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(operandsNamespace), client.MatchingLabels(resources.DeployObjectSelector(d.Name)))).To(Succeed())
			g.Expect(pods.Items).To(ContainElement(And(
				HaveField("Spec.Containers", ContainElement(HaveField("ReadinessProbe.HTTPGet.Port", intstr.FromInt32(8081)))),
				HaveField("Status.ContainerStatuses", ContainElement(And(HaveField("Started", HaveValue(BeTrue())), HaveField("Ready", BeFalse())))),
			)), "a pod of the new template, started and not ready")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(echoGet(ctx, Default, url).Hostname).To(Equal(before[0].Name), "the old pod still serves")

		By("probing the served port again: the rollout completes")
		Expect(k8s.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"readinessProbe":{"httpGet":{"port":8080}}}}`)))).To(Succeed())
		waitAvailable(ctx, "DeployObject", d)
		servingPodsOf(ctx, d, 1)
	}, SpecTimeout(4*time.Minute))
})

// waitAvailable waits until obj, of one of the operator's kinds, reports every replica ready and
// Ready for its generation.
func waitAvailable(ctx context.Context, kind string, obj client.Object) {
	waitRolledOut(ctx, kind, obj, conditions.Ready)
}

// waitRolledOut waits until obj, of one of the operator's kinds, reports every replica ready and
// the condition of type ready True for its generation: Ready in this tree, Available in an
// earlier commit.
func waitRolledOut(ctx context.Context, kind string, obj client.Object, ready string) {
	EventuallyWithOffset(2, func(g Gomega) {
		g.Expect(kinds[kind].rolledOut(readAt(ctx, g, obj, kinds[kind].newObject()), ready)).To(Succeed(), "its Deployment: %s", deploymentState(ctx, obj))
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "%s %s", kind, obj.GetName())
}

// deploymentState says, for a failure, where the Deployment of the name and namespace of obj is
// in its rollout, or why it cannot be read.
func deploymentState(ctx context.Context, obj client.Object) string {
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), d); err != nil {
		return err.Error()
	}
	owner := ""
	if ref := metav1.GetControllerOf(d); ref != nil {
		owner = ref.APIVersion
	}
	st := d.Status
	return fmt.Sprintf("generation %d, observed %d, replicas %d, updated %d, ready %d, available %d, owner at %s, annotations %v, managers %d",
		d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, owner, d.Annotations, len(d.ManagedFields))
}

// readAt reads obj at its own version into into, an object of the version these specs' Go code
// reads: a v1alpha1 object of the operator's kinds has the fields of v1 (a Welcome's password
// aside, which into drops), so that an object of the previous release, which serves v1alpha1
// alone, is read as well.
func readAt(ctx context.Context, g Gomega, obj, into client.Object) client.Object {
	gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	g.ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
	g.ExpectWithOffset(1, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)).To(Succeed())
	return into
}

// service is the Service of that name in operandsNamespace.
func service(ctx context.Context, name string) *corev1.Service {
	svc := &corev1.Service{}
	ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Namespace: operandsNamespace, Name: name}, svc)).To(Succeed())
	return svc
}

// serviceSync bounds how long a Service takes to follow its pods, on a loaded machine: a Deployment
// counts a pod available as soon as the pod is Ready, kube-controller-manager's EndpointSlice
// controller adds it to the Service's EndpointSlice on its next sync after that, and kube-proxy
// programs the slice within its minimum sync period (1 s) after that. When idle, all of it takes
// about a second; an object reporting Ready can precede it.
const serviceSync = 30 * time.Second

// servingPodsOf waits until readyPodsOf holds. A request at the Service may still need kube-proxy's
// sync (serviceSync).
func servingPodsOf(ctx context.Context, owner client.Object, want int) []corev1.Pod {
	var pods []corev1.Pod
	EventuallyWithOffset(1, func(g Gomega) {
		pods = readyPodsOf(ctx, g, owner, want)
	}).WithContext(ctx).WithTimeout(serviceSync).Should(Succeed())
	return pods
}

// readyPodsOf checks that the Deployment owner controls runs exactly want pods, not being
// deleted, each running and Ready on the node, and that each is a ready endpoint of the Service
// of the same name. It returns them.
func readyPodsOf(ctx context.Context, g Gomega, owner client.Object, want int) []corev1.Pod {
	deployments, _ := ownedBy(ctx, g, owner)
	g.ExpectWithOffset(1, deployments).To(HaveLen(1))
	var pods []corev1.Pod
	for _, pod := range controlledPods(ctx, g, controlledReplicaSets(ctx, g, &deployments[0])) {
		if pod.DeletionTimestamp == nil {
			pods = append(pods, pod)
		}
	}
	g.ExpectWithOffset(1, pods).To(HaveLen(want))
	endpointSlices := &discoveryv1.EndpointSliceList{}
	g.ExpectWithOffset(1, k8s.List(ctx, endpointSlices, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{discoveryv1.LabelServiceName: owner.GetName()})).To(Succeed())
	var ready []string
	for _, s := range endpointSlices.Items {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, false) {
				ready = append(ready, e.Addresses...)
			}
		}
	}
	for _, pod := range pods {
		g.ExpectWithOffset(1, pod.Spec.NodeName).To(Equal(cluster.NodeName))
		g.ExpectWithOffset(1, pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", pod.Name)
		g.ExpectWithOffset(1, podReady(&pod)).To(BeTrue(), "pod %s", pod.Name)
		g.ExpectWithOffset(1, ready).To(ContainElement(pod.Status.PodIP), "pod %s is a ready endpoint of its Service", pod.Name)
	}
	return pods
}

func podNames(pods []corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// operandClient makes every request on a new connection, so each goes through kube-proxy's
// rules as they are at that moment.
var operandClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// httpGet returns the body of a GET of url, which must answer 200.
func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := operandClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// echoReply is what e2e-echo answers.
type echoReply struct {
	Version  string            `json:"version"`
	Port     int               `json:"port"`
	Hostname string            `json:"hostname"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
}

func echoGet(ctx context.Context, g Gomega, url string) echoReply {
	body, err := httpGet(ctx, url)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var reply echoReply
	g.ExpectWithOffset(1, json.Unmarshal([]byte(body), &reply)).To(Succeed(), "%s", body)
	return reply
}

// memcachedSetGet stores value under key and reads it back on one connection to address, in
// memcached's text protocol, and returns what was read.
func memcachedSetGet(ctx context.Context, address, key, value string) (string, error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := fmt.Fprintf(conn, "set %s 0 0 %d\r\n%s\r\n", key, len(value), value); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if line != "STORED\r\n" {
		return "", fmt.Errorf("set: %q", line)
	}
	if _, err := fmt.Fprintf(conn, "get %s\r\n", key); err != nil {
		return "", err
	}
	var reply [3]string // VALUE <key> <flags> <bytes>, the data, END
	for i := range reply {
		if reply[i], err = r.ReadString('\n'); err != nil {
			return "", err
		}
	}
	if !strings.HasPrefix(reply[0], "VALUE "+key+" ") || reply[2] != "END\r\n" {
		return "", fmt.Errorf("get: %q", reply)
	}
	data := reply[1]
	return strings.TrimSuffix(data, "\r\n"), nil
}

// httpLoad GETs an e2e-echo URL every 20 ms, each on a new connection, and keeps the version of
// every answer and every failure.
type httpLoad struct {
	mu       sync.Mutex
	versions []string
	failures []string
	cancel   context.CancelFunc
	done     chan struct{}
}

func startHTTPLoad(ctx context.Context, url string) *httpLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &httpLoad{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(l.done)
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			body, err := httpGet(ctx, url)
			if ctx.Err() != nil {
				return
			}
			var reply echoReply
			if err == nil {
				err = json.Unmarshal([]byte(body), &reply)
			}
			l.mu.Lock()
			if err != nil {
				l.failures = append(l.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
			} else {
				l.versions = append(l.versions, reply.Version)
			}
			l.mu.Unlock()
		}
	}()
	DeferCleanup(func() { l.stop() })
	return l
}

func (l *httpLoad) served() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.versions)
}

// lastVersions are the versions of the last n answers.
func (l *httpLoad) lastVersions(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.versions) < n {
		return nil
	}
	return append([]string(nil), l.versions[len(l.versions)-n:]...)
}

// stop ends the load and returns its failures.
func (l *httpLoad) stop() []string {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}
