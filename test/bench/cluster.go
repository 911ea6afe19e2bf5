package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

// Groups of the Welcome CRD's copies that the admission comparison creates beside the real one.
const (
	// bareGroup is matched by no webhook and no policy: what the API server costs alone.
	bareGroup = "bare.bench.seedlabs.dev"
	// policyGroup is matched by a ValidatingAdmissionPolicy holding the Welcome rules in CEL.
	policyGroup = "policy.bench.seedlabs.dev"
	// mutatingPolicyGroup is matched by that policy and by a MutatingAdmissionPolicy that fills
	// the Welcome defaults, when the API server serves it.
	mutatingPolicyGroup = "mutating.bench.seedlabs.dev"
	// benchHolder is the leader election identity the bench takes to keep the manager's
	// controllers idle while a plain client makes the same writes.
	benchHolder = "bench-plain-client"
	// leaseNamespace holds the manager's leader election Lease.
	leaseNamespace = "default"
)

// cluster is envtest's kube-apiserver and etcd with the operator's CRDs and webhook configurations,
// the Welcome CRD's copies and policies, and the operator's manager binary as a child process.
type cluster struct {
	env    *envtest.Environment
	config *rest.Config
	client client.Client
	// kubeconfig is the manager process's kubeconfig: managerUser, a cluster admin.
	kubeconfig string
	// ca signs the webhook server's certificates; the webhook configurations trust it.
	ca *certs.CA
	// certDir holds the webhook server's tls.crt and tls.key.
	certDir string
	// webhookAddress is where the manager serves its webhooks.
	webhookAddress string
	workDir        string
	// audit is the API server's log of the manager's requests.
	audit *auditLog
	// trivial serves the trivial webhooks.
	trivial *trivialWebhooks
}

// managerUser is who the manager process authenticates as; the audit policy logs this user only.
const managerUser = "bench-manager"

const auditPolicyYAML = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [` + managerUser + `]
- level: None
`

func startCluster(ctx context.Context, workDir string) (*cluster, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	welcomeCRD, err := readCRD(filepath.Join(root, "config", "crd", "bases", "auth.seedlabs.dev_welcomes.yaml"))
	if err != nil {
		return nil, err
	}
	var copies []*apiextensionsv1.CustomResourceDefinition
	for _, group := range []string{bareGroup, policyGroup, mutatingPolicyGroup, trivialGroup} {
		copies = append(copies, crdInGroup(welcomeCRD, group))
	}
	auditPolicy := filepath.Join(workDir, "audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(auditPolicyYAML), 0o600); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		// The operator's scheme, so that envtest keeps the conversion webhook of the CRDs whose
		// versions convert (it points them at the manager's /convert) rather than strip it.
		Scheme:                scheme.New(),
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		CRDs:                  copies,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}},
	}
	// The API server logs the manager's requests, and only those, so that the bench counts what
	// the manager writes by resource.
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", auditPolicy).
		Set("audit-log-path", filepath.Join(workDir, "audit.log")).
		Set("audit-log-mode", "blocking").
		// Room for the Services of 10k objects, a third of them NodePort (Welcome's default).
		Set("service-cluster-ip-range", "10.96.0.0/12").
		Set("service-node-port-range", "20000-60000")
	// Room in etcd for 100,000 custom resources with their children.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(8<<30))
	// Stopping an API server holding tens of thousands of objects and their watches takes a while.
	env.ControlPlaneStopTimeout = 2 * time.Minute
	cfg, err := env.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting envtest: %w", err), env.Stop())
	}
	c := &cluster{env: env, config: cfg, workDir: workDir, audit: &auditLog{path: filepath.Join(workDir, "audit.log")}}
	if err := c.setUp(ctx); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return c, nil
}

func (c *cluster) setUp(ctx context.Context) error {
	cfg := rest.CopyConfig(c.config)
	cfg.QPS, cfg.Burst = -1, 0
	var err error
	if c.client, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	admin, err := c.env.AddUser(envtest.User{Name: managerUser, Groups: []string{"system:masters"}}, c.config)
	if err != nil {
		return err
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(c.workDir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}

	// The webhook server gets certificates from a CA of our own, so that the certificate swap can
	// serve a new pair the API server trusts.
	wo := c.env.WebhookInstallOptions
	c.webhookAddress = net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	if c.ca, err = certs.NewCA("webhook-operator bench CA", 24*time.Hour); err != nil {
		return err
	}
	c.certDir = filepath.Join(c.workDir, "webhook-certs")
	if err := c.writeServingPair(); err != nil {
		return err
	}
	if err := c.trustCA(ctx); err != nil {
		return err
	}
	if c.trivial, err = c.serveTrivialWebhooks(ctx); err != nil {
		return err
	}
	return c.installPolicies(ctx)
}

// writeServingPair writes a new serving pair for the webhook server's address and returns nothing
// but an error; the new leaf is what the certificate swap waits for.
func (c *cluster) writeServingPair() error {
	host, _, _ := net.SplitHostPort(c.webhookAddress)
	pair, err := c.ca.NewServingPair([]string{"localhost"}, []net.IP{net.ParseIP(host)}, 24*time.Hour)
	if err != nil {
		return err
	}
	return pair.WriteDir(c.certDir, c.ca.CertPEM)
}

// servedCertificate is the leaf the webhook server presents now.
func (c *cluster) servedCertificate() (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.ca.CertPEM)
	host, _, _ := net.SplitHostPort(c.webhookAddress)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", c.webhookAddress,
		&tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// trustCA has the webhook configurations and the CRDs' conversion webhooks trust the bench's CA.
func (c *cluster) trustCA(ctx context.Context) error {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.client.List(ctx, &crds); err != nil {
		return err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if conv := crd.Spec.Conversion; conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = c.ca.CertPEM
		if err := c.client.Update(ctx, crd); err != nil {
			return err
		}
	}
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.client.List(ctx, &mutating); err != nil {
		return err
	}
	for i := range mutating.Items {
		cfg := &mutating.Items[i]
		for j := range cfg.Webhooks {
			cfg.Webhooks[j].ClientConfig.CABundle = c.ca.CertPEM
		}
		if err := c.client.Update(ctx, cfg); err != nil {
			return err
		}
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.client.List(ctx, &validating); err != nil {
		return err
	}
	for i := range validating.Items {
		cfg := &validating.Items[i]
		for j := range cfg.Webhooks {
			cfg.Webhooks[j].ClientConfig.CABundle = c.ca.CertPEM
		}
		if err := c.client.Update(ctx, cfg); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) stop() error {
	var err error
	if c.trivial != nil {
		err = c.trivial.stop()
	}
	return errors.Join(err, c.env.Stop())
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// crdInGroup is the CRD with the same schema in another API group.
func crdInGroup(crd *apiextensionsv1.CustomResourceDefinition, group string) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	out.Spec.Group = group
	out.Name = out.Spec.Names.Plural + "." + group
	out.Spec.Names.ShortNames = nil
	out.Spec.Names.Categories = nil
	return out
}

// managerProcess is the operator's manager binary running against the cluster, as a pod runs it.
type managerProcess struct {
	cmd *exec.Cmd
	// done is closed once the process has exited, with exitErr set.
	done    chan struct{}
	exitErr error
	log     *os.File
	pprof   string
	metrics string
	probe   string
	// servingAfter is how long it took from exec to the first TLS handshake with the webhook server.
	servingAfter time.Duration
}

// managerFlags are the flags every manager process gets beside the addresses.
type managerFlags struct {
	binary string
	extra  []string
	// env is added to the bench's own environment.
	env     []string
	logPath string
	// cgroup, when set, is the memory cgroup the process runs in.
	cgroup *memoryCgroup
}

// startManager execs the manager and waits until its webhook server completes a TLS handshake
// with the certificate the webhook configurations trust.
func (c *cluster) startManager(f managerFlags) (*managerProcess, error) {
	pprofAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(c.webhookAddress)
	args := append([]string{
		"--webhook-host=" + host, "--webhook-port=" + port, "--webhook-cert-dir=" + c.certDir,
		"--health-probe-bind-address=" + probeAddr,
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false",
		"--pprof-bind-address=" + pprofAddr,
		"--leader-elect", "--leader-election-namespace=" + leaseNamespace,
		"--shutdown-delay=0s",
		"--welcome-image=" + testenv.WelcomeImage, "--memcached-image=" + testenv.MemcachedImage,
		"--zap-log-level=error",
	}, f.extra...)
	logFile, err := os.OpenFile(f.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.binary, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+c.kubeconfig), f.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if f.cgroup != nil {
		if err := f.cgroup.run(cmd); err != nil {
			_ = logFile.Close()
			return nil, err
		}
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	m := &managerProcess{cmd: cmd, done: make(chan struct{}), log: logFile, pprof: pprofAddr, metrics: metricsAddr, probe: probeAddr}
	go func() {
		m.exitErr = cmd.Wait()
		close(m.done)
	}()
	for {
		if _, err := c.servedCertificate(); err == nil {
			m.servingAfter = time.Since(started)
			return m, nil
		}
		select {
		case <-m.done:
			_ = logFile.Close()
			return nil, fmt.Errorf("the manager exited before serving (%w); see %s", m.exitErr, f.logPath)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(started) > time.Minute {
			return nil, errors.Join(errors.New("the manager did not serve within a minute"), m.stop())
		}
	}
}

// wait waits interval, and fails when the process exited, ctx ended or deadline passed.
func (m *managerProcess) wait(ctx context.Context, deadline time.Time, interval time.Duration) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("not done by %s", deadline.Format(time.TimeOnly))
	}
	select {
	case <-m.done:
		return fmt.Errorf("the manager exited (%w)", m.exitErr)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(interval):
		return nil
	}
}

// stop sends SIGTERM and waits for the process to exit; the manager releases its Lease on the way.
func (m *managerProcess) stop() error {
	defer func() { _ = m.log.Close() }()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		// The exit status of a process stopped by a signal says nothing more.
		return nil
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
		return errors.New("the manager did not stop within 30s of SIGTERM")
	}
}

// get fetches a path from the manager's pprof or metrics server.
func get(ctx context.Context, address, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
	if err != nil {
		return nil, err
	}
	status, body, err := roundTrip(http.DefaultClient, req)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET %s%s: HTTP %d", address, path, status)
	}
	return body, err
}

// roundTrip sends req and reads the whole reply, so that the connection is kept alive.
func roundTrip(c *http.Client, req *http.Request) (status int, body []byte, err error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// holdLease takes the manager's leader election Lease for the bench, so that a manager process
// serves webhooks but runs no controller; the manager must not be holding it.
func (c *cluster) holdLease(ctx context.Context) error {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: operator.LeaderElectionID, Namespace: leaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(benchHolder),
			LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	err := c.client.Create(ctx, lease)
	if apierrors.IsAlreadyExists(err) {
		current := &coordinationv1.Lease{}
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(lease), current); err != nil {
			return err
		}
		if h := ptr.Deref(current.Spec.HolderIdentity, ""); h != "" && h != benchHolder {
			return fmt.Errorf("the Lease is held by %q", h)
		}
		current.Spec = lease.Spec
		return c.client.Update(ctx, current)
	}
	return err
}

// releaseLease gives the Lease up and, when wait is set, waits until a manager process holds it.
func (c *cluster) releaseLease(ctx context.Context, wait bool) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: operator.LeaderElectionID, Namespace: leaseNamespace}}
	if err := c.client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
		return err
	}
	if !wait {
		return nil
	}
	return c.waitForLeader(ctx)
}

// waitForLeader waits until a manager process holds the Lease.
func (c *cluster) waitForLeader(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		current := &coordinationv1.Lease{}
		err := c.client.Get(ctx, types.NamespacedName{Name: operator.LeaderElectionID, Namespace: leaseNamespace}, current)
		if err == nil {
			if h := ptr.Deref(current.Spec.HolderIdentity, ""); h != "" && h != benchHolder {
				return nil
			}
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("no manager took the Lease within a minute")
}

func (c *cluster) createNamespace(ctx context.Context, name string) error {
	return client.IgnoreAlreadyExists(c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// liveHeap reads HeapAlloc, the bytes of live objects, from the manager's heap profile after a
// forced garbage collection.
func (m *managerProcess) liveHeap(ctx context.Context) (uint64, error) {
	body, err := get(ctx, m.pprof, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if v, ok := strings.CutPrefix(string(line), "# HeapAlloc = "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no HeapAlloc in the heap profile")
}

// status reads a size in bytes from the manager process's /proc status: VmRSS:, VmHWM: (the peak RSS).
func (m *managerProcess) status(field string) (uint64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in the process status", field)
}
