//go:build linux

package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/test/testregistry"
)

// Binaries are the programs the cluster runs, all built from source by the Makefile but runc.
type Binaries struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
	KubeScheduler         string
	Kubelet               string
	KubeProxy             string
	// NodeTools is the directory of containerd, containerd-shim-runc-v2, ctr, crictl and the CNI
	// plugins.
	NodeTools string
	// Runc is the OCI runtime containerd runs containers with (Debian's).
	Runc string
	// CertManagerCRDs is a directory of cert-manager's CRD manifests.
	CertManagerCRDs string
}

// Options say what the node runs.
type Options struct {
	// Images are OCI image layouts to import into the node's containerd: the pod sandbox image
	// (PauseImage), cert-manager's (CertManagerImage) and whatever the test's pods run. Anything
	// else is pulled from Registry.
	Images []string
	// CertManagerImage is the image of cert-manager's controllers, among Images.
	CertManagerImage string
}

// Cluster is a running control plane with a real node and cert-manager.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig with cluster-admin rights.
	Kubeconfig string
	// Config is the same identity as a rest config.
	Config *rest.Config
	// Client is a client with that identity, for the built-in types and CRDs.
	Client client.Client
	// LogDir holds each process's log.
	LogDir string
	// WebhookClientCA signs the client certificate kube-apiserver presents to every admission
	// webhook: a webhook server given its certificate (--webhook-client-ca) serves kube-apiserver.
	WebhookClientCA *certs.CA
	// Registry is an OCI registry at RegistryIP with TLS and basic auth, which the node's
	// containerd trusts and has no credentials for: a pod pulls from it with its pull secrets.
	Registry *testregistry.Registry

	// nodes are the running nodes, the first one first.
	nodes     []*node
	processes []*Process
	readyz    func(context.Context) error

	// What AddNode starts another node with.
	bin    Binaries
	dir    string
	certs  *pki
	tokens tokens
	images []string

	mu    sync.Mutex
	exits []ContainerExit
}

// The node lifecycle, shortened so that the loss of a node plays out in under a minute: kubelet
// renews its node's Lease every quarter of NodeLeaseDuration; kube-controller-manager marks a node
// whose Lease it has not seen renewed for NodeMonitorGracePeriod NotReady (Unknown), its pods not
// ready (so they leave their Services' EndpointSlices) and taints it; NodeLossToleration later the
// taint evicts its pods, whose controllers replace them on other nodes. Upstream: 40 s, 50 s and
// 5 minutes.
const (
	NodeLeaseDuration      = 10 * time.Second
	NodeMonitorGracePeriod = 30 * time.Second
	NodeLossToleration     = 20 * time.Second
)

// stepTimeout bounds each wait while the cluster starts.
const stepTimeout = 2 * time.Minute

// Start runs the cluster with its logs and configuration under dir, and its node's state under
// /run. It must run inside the namespaces RunInNamespaces makes. On error it stops whatever it
// had started.
func Start(ctx context.Context, bin Binaries, dir string, opts Options) (_ *Cluster, err error) {
	c := &Cluster{LogDir: filepath.Join(dir, "logs"), bin: bin, dir: dir, images: opts.Images}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	certs, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("creating the cluster's certificates: %w", err)
	}
	c.certs, c.WebhookClientCA = certs, certs.webhookClientCA
	tokens, err := writeTokens(filepath.Join(dir, "pki", "tokens.csv"))
	if err != nil {
		return nil, err
	}
	c.tokens = tokens
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, certs.caPEM, tokens.users[adminUser]); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, err
	}
	// The harness's watches, status reads and deletions must not queue behind client-go's
	// default of 5 requests a second.
	c.Config.QPS, c.Config.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), apiextensionsv1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}

	if _, err := c.startProcess("etcd", bin.Etcd,
		"--name=e2e",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379",
		"--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380",
		"--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=e2e=http://127.0.0.1:2380",
		"--unsafe-no-fsync",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	apiserver, err := c.startProcess("kube-apiserver", bin.KubeAPIServer,
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address="+APIServerIP,
		"--advertise-address="+APIServerIP,
		"--secure-port="+strconv.Itoa(APIServerPort),
		"--tls-cert-file="+certs.servingCert,
		"--tls-private-key-file="+certs.servingKey,
		"--client-ca-file="+certs.caCert,
		"--token-auth-file="+tokens.file,
		"--authorization-mode=Node,RBAC",
		// The node's kubelet may change only its own Node and the pods bound to it, as in any
		// cluster kubeadm sets up; upstream leaves the plugin off.
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+certs.serviceAccountPub,
		"--service-account-signing-key-file="+certs.serviceAccountKey,
		"--service-cluster-ip-range="+ServiceCIDR,
		"--allow-privileged=true",
		// Pods tolerate an unreachable or not-ready node for NodeLossToleration (upstream: 5 min).
		"--default-not-ready-toleration-seconds="+strconv.Itoa(int(NodeLossToleration.Seconds())),
		"--default-unreachable-toleration-seconds="+strconv.Itoa(int(NodeLossToleration.Seconds())),
		// Admission webhooks are called at an address of their Service's EndpointSlice, so a
		// failed call names the replica it went to.
		"--enable-aggregator-routing=true",
		"--kubelet-client-certificate="+certs.kubeletClientCert,
		"--kubelet-client-key="+certs.kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--cert-dir="+filepath.Join(dir, "kube-apiserver"),
		// Every admission webhook is called with a client certificate of WebhookClientCA.
		"--admission-control-config-file="+certs.admissionConfiguration,
		// On SIGTERM, answer new requests with 429 and Retry-After until those in flight are done,
		// then give the HTTP server 2 s to close, instead of waiting up to its request timeout
		// (60 s) for every watch to end: after the specs on three nodes, watches whose clients
		// were gone (a pod's network torn down under them, most likely) held Stop past stopGrace.
		"--shutdown-send-retry-after=true",
	)
	if err != nil {
		return nil, err
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	c.readyz = func(ctx context.Context) error {
		_, err := discoveryClient.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := c.waitFor(ctx, "kube-apiserver to be ready", apiserver, c.readyz); err != nil {
		return nil, err
	}

	componentKubeconfig := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
	}
	controllerManager, err := c.startProcess("kube-controller-manager", bin.KubeControllerManager, append(componentKubeconfig,
		"--controllers=*",
		"--node-monitor-period=2s",
		"--node-monitor-grace-period="+NodeMonitorGracePeriod.String(),
		"--service-account-private-key-file="+certs.serviceAccountKey,
		"--root-ca-file="+certs.caCert,
		"--cert-dir="+filepath.Join(dir, "kube-controller-manager"),
	)...)
	if err != nil {
		return nil, err
	}
	// The root CA publisher and the service account controller are the ones pods need first.
	if err := c.waitFor(ctx, "kube-controller-manager to publish kube-root-ca.crt and the default ServiceAccount", controllerManager,
		func(ctx context.Context) error {
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kube-root-ca.crt"}, &corev1.ConfigMap{}); err != nil {
				return err
			}
			return c.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, &corev1.ServiceAccount{})
		}); err != nil {
		return nil, err
	}

	scheduler, err := c.startProcess("kube-scheduler", bin.KubeScheduler, append(componentKubeconfig,
		"--cert-dir="+filepath.Join(dir, "kube-scheduler"),
	)...)
	if err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "kube-scheduler to be healthy", scheduler, healthz("https://127.0.0.1:10259/healthz")); err != nil {
		return nil, err
	}

	if c.Registry, err = testregistry.Start(net.JoinHostPort(RegistryIP, strconv.Itoa(RegistryPort)), net.ParseIP(RegistryIP),
		filepath.Join(dir, "registry", "blobs"), filepath.Join(dir, "registry", "client")); err != nil {
		return nil, err
	}
	if err := c.startNode(ctx, c.firstNode()); err != nil {
		return nil, err
	}

	crds, err := c.createCRDs(ctx, bin.CertManagerCRDs)
	if err != nil {
		return nil, fmt.Errorf("installing cert-manager's CRDs: %w", err)
	}
	if err := c.waitFor(ctx, "cert-manager's CRDs to be established", apiserver, established(c.Client, crds)); err != nil {
		return nil, err
	}
	if err := c.deployCertManager(ctx, opts.CertManagerImage); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop stops the nodes AddNode added, then every process in the reverse order of their start
// (stopInReverse, with the first node's pod sandboxes). kube-scheduler without leader election
// exits 1 on SIGTERM by design; Stop fails only when a process has to be killed, or a pod cannot be
// removed.
func (c *Cluster) Stop() error {
	var errs []error
	for len(c.nodes) > 1 {
		errs = append(errs, c.stopNode(c.nodes[len(c.nodes)-1]))
	}
	var first *node
	if len(c.nodes) == 1 {
		first = c.nodes[0]
		first.stopWatchingContainerExits()
	}
	errs = append(errs, stopInReverse(c.processes, first)...)
	c.processes, c.nodes = nil, nil
	if c.Registry != nil {
		c.Registry.Close()
		c.Registry = nil
	}
	return errors.Join(errs...)
}

// stopInReverse stops processes in the reverse order of their start and, just before the
// containerd of node (nil if none among them), every pod sandbox still on that node, so that their
// containers stop as kubelet would stop them, keeping their logs. How a component exits on SIGTERM
// is its own affair: it returns the errors of processes that had to be killed, and of pods that
// could not be removed.
func stopInReverse(processes []*Process, node *node) []error {
	var errs []error
	for i := len(processes) - 1; i >= 0; i-- {
		if node != nil && processes[i].Name == "containerd" && processes[i].Running() == nil {
			errs = append(errs, node.removeAllPods())
		}
		var exit *exec.ExitError
		if err := processes[i].Stop(stopGrace); err != nil && !errors.As(err, &exit) {
			errs = append(errs, err)
		}
	}
	return errs
}

// Restart stops the named control plane process (etcd or kube-apiserver, say) as a kubelet
// stops a static pod, SIGTERM then SIGKILL after stopGrace, and starts it again with the same
// arguments, so on the same data directory and ports; then it waits until kube-apiserver is
// ready again. It returns how long that took from SIGTERM, and how the process stopped.
func (c *Cluster) Restart(ctx context.Context, name string) (down time.Duration, stopped error, err error) {
	i := slices.IndexFunc(c.processes, func(p *Process) bool { return p.Name == name })
	if i < 0 {
		return 0, nil, fmt.Errorf("no process %s", name)
	}
	start := time.Now()
	stopped = c.processes[i].Stop(stopGrace)
	p, err := c.processes[i].again()
	if err != nil {
		return 0, stopped, err
	}
	c.processes[i] = p
	if err := c.waitFor(ctx, "kube-apiserver to be ready after restarting "+name, c.process("kube-apiserver"), c.readyz); err != nil {
		return 0, stopped, err
	}
	return time.Since(start), stopped, nil
}

// process is the running process of that name; the cluster starts each of its components once.
func (c *Cluster) process(name string) *Process {
	return c.processes[slices.IndexFunc(c.processes, func(p *Process) bool { return p.Name == name })]
}

// stopGrace is how long a control plane process gets to stop on SIGTERM before SIGKILL.
const stopGrace = 15 * time.Second

func (c *Cluster) startProcess(name, binary string, args ...string) (*Process, error) {
	return c.startProcessWithEnv(name, binary, args, nil)
}

// startProcessWithEnv starts a process with env added to the test's environment.
func (c *Cluster) startProcessWithEnv(name, binary string, args, env []string) (*Process, error) {
	p, err := StartProcess(name, c.LogDir, binary, args, env)
	if err != nil {
		return nil, err
	}
	c.processes = append(c.processes, p)
	return p, nil
}

// waitFor polls check until it succeeds, failing early when p exits.
func (c *Cluster) waitFor(ctx context.Context, what string, p *Process, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, stepTimeout, true, func(ctx context.Context) (bool, error) {
		if err := p.Running(); err != nil {
			return false, err
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("waiting for %s: %w (last: %w)", what, err, last)
	}
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// createCRDs creates the CRDs in every YAML file of dir and returns their names.
func (c *Cluster) createCRDs(ctx context.Context, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD manifests in %s", dir)
	}
	var names []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			if err := c.Client.Create(ctx, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			names = append(names, crd.Name)
		}
	}
	return names, nil
}

// established checks that every named CRD is established.
func established(k8s client.Client, names []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				return fmt.Errorf("CRD %s is not established", name)
			}
		}
		return nil
	}
}

// healthz checks a component's /healthz, which its authorization always allows; its serving
// certificate is self-signed, and the answer is all that matters here.
func healthz(url string) func(context.Context) error {
	httpClient := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // A health probe of a self-signed test component.
	}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// The users the cluster's components and the test authenticate as, with a bearer token each.
const (
	adminUser     = "cluster-admin"
	kubeProxyUser = "system:kube-proxy"
)

// kubeletUser is the user the kubelet of the named node authenticates as.
func kubeletUser(node string) string {
	return "system:node:" + node
}

// tokens are each user's bearer token, and the API server's token file that holds them.
type tokens struct {
	file  string
	users map[string]string
}

// writeTokens makes a token for the admin (in system:masters), for the kubelet of each of
// NodeNames (a node, which the Node authorizer and NodeRestriction hold to its own node and pods)
// and for kube-proxy (bound to system:node-proxier by default), and writes the API server's token
// file, which it reads once.
func writeTokens(file string) (tokens, error) {
	groups := map[string]string{adminUser: "system:masters", kubeProxyUser: ""}
	users := []string{adminUser, kubeProxyUser}
	for _, node := range NodeNames {
		groups[kubeletUser(node)] = "system:nodes"
		users = append(users, kubeletUser(node))
	}
	t := tokens{file: file, users: map[string]string{}}
	var lines strings.Builder
	for _, user := range users {
		token, err := randomToken()
		if err != nil {
			return tokens{}, err
		}
		t.users[user] = token
		fmt.Fprintf(&lines, "%s,%s,%s,%q\n", token, user, user, groups[user])
	}
	return t, os.WriteFile(file, []byte(lines.String()), 0o600)
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeKubeconfig writes a kubeconfig for the API server with a bearer token.
func writeKubeconfig(path string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   "https://" + APIServerIP + ":" + strconv.Itoa(APIServerPort),
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}
