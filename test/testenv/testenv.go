// Package testenv starts a real kube-apiserver and etcd with envtest, installs the CRDs and webhook
// configurations generated into config/, and runs the operator's Manager against them, built by
// the same wiring as cmd/manager.
package testenv

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// Operand images the Manager under test is configured with.
const (
	WelcomeImage   = "registry.example.test/welcome-web:test"
	MemcachedImage = "registry.example.test/memcached:test"
)

// Env is a running control plane with the operator's Manager serving its webhooks.
type Env struct {
	// Config is an admin rest config for the API server.
	Config *rest.Config
	// ManagerConfig, when set, is the rest config the Manager runs with from its next start on,
	// such as one impersonating a ServiceAccount bound to config/rbac; Config otherwise.
	ManagerConfig *rest.Config
	// ManagerOptions, when set, changes the Manager's options from its next start on: StartWith's
	// Options.Manager at first.
	ManagerOptions func(*operator.Options)
	// Client reads and writes through the API server directly, never through a cache.
	Client client.Client
	// Manager is the operator's Manager, already started.
	Manager ctrl.Manager
	// ManagerWarnings records the warnings the API server sends the Manager, its caches' requests
	// and its clients' alike.
	ManagerWarnings *Warnings
	// ProbeAddress is where the Manager serves /healthz and /readyz.
	ProbeAddress string
	// MetricsAddress is where the Manager serves /metrics over HTTPS, behind authentication and
	// authorization.
	MetricsAddress string
	// WebhookAddress is where the Manager's webhook server listens.
	WebhookAddress string
	// ServerVersion is the kube-apiserver's version, as it reports it: the suites run against the
	// oldest supported version too (docs/kubernetes-versions.md).
	ServerVersion *version.Version

	environment *envtest.Environment
	stopManager context.CancelFunc
	managerDone chan error
}

// Options change what StartWith starts, for a suite of its own.
type Options struct {
	// APIServerFlags are set on kube-apiserver, beside envtest's own.
	APIServerFlags map[string]string
	// Manager, when set, changes the Manager's options before it is built.
	Manager func(*operator.Options)
}

// Start starts the control plane from $KUBEBUILDER_ASSETS, installs the CRDs and webhook
// configurations from config/, starts the Manager and waits until its webhook server answers TLS.
func Start() (*Env, error) {
	return StartWith(Options{})
}

// StartWith is Start, with the changes of o.
func StartWith(o Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the envtest suites through 'make test', which builds the control plane")
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	environment := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// The operator's scheme tells envtest which CRDs convert (those whose versions implement
		// conversion.Hub and Convertible), which it points at the Manager's /convert; without it,
		// envtest would read client-go's scheme, strip every CRD's conversion, and a conversion
		// test pass without the webhook.
		Scheme: scheme.New(),
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		},
	}
	for name, value := range o.APIServerFlags {
		environment.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := environment.Start()
	if err != nil {
		// Start leaves the control plane running when a later step, such as installing the
		// CRDs, fails.
		return nil, errors.Join(fmt.Errorf("starting envtest: %w", err), environment.Stop())
	}
	e := &Env{Config: cfg, ManagerOptions: o.Manager, environment: environment}
	if e.ServerVersion, err = serverVersion(cfg); err != nil {
		return nil, errors.Join(err, environment.Stop())
	}
	if err := e.startManager(); err != nil {
		return nil, errors.Join(err, environment.Stop())
	}
	return e, nil
}

func (e *Env) startManager() error {
	wo := &e.environment.WebhookInstallOptions
	probeAddress, err := freeLocalAddress()
	if err != nil {
		return err
	}
	metricsAddress, err := freeLocalAddress()
	if err != nil {
		return err
	}
	options := operator.Options{
		MetricsAddr:                  metricsAddress,
		SecureMetrics:                true,
		ProbeAddr:                    probeAddress,
		WebhookHost:                  wo.LocalServingHost,
		WebhookPort:                  wo.LocalServingPort,
		WebhookCertDir:               wo.LocalServingCertDir,
		WelcomeImage:                 WelcomeImage,
		MemcachedImage:               MemcachedImage,
		AllowedRegistries:            fixtures.AllowedRegistries,
		SkipControllerNameValidation: true,
		MaxConcurrentReconciles:      operator.DefaultMaxConcurrentReconciles,
		PolicyStaleness:              operator.DefaultPolicyStaleness,
		StorageMigration:             true,
	}
	if e.ManagerOptions != nil {
		e.ManagerOptions(&options)
	}
	cfg := rest.CopyConfig(cmp.Or(e.ManagerConfig, e.Config))
	e.ManagerWarnings = &Warnings{}
	cfg.WarningHandlerWithContext = e.ManagerWarnings
	mgr, err := operator.New(cfg, options)
	if err != nil {
		return err
	}
	c, err := client.New(e.Config, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	e.Manager, e.Client = mgr, c
	e.ProbeAddress, e.MetricsAddress = probeAddress, metricsAddress
	e.WebhookAddress = net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))

	ctx, cancel := context.WithCancel(context.Background())
	e.stopManager, e.managerDone = cancel, make(chan error, 1)
	go func() { e.managerDone <- mgr.Start(ctx) }()

	// The probe and metrics servers start beside the webhook server; wait for them too, so that a
	// spec that runs first does not find them closed.
	waits := []struct {
		what string
		try  func() error
	}{
		{"the webhook server at " + e.WebhookAddress, dialTLS(e.WebhookAddress)},
		{"the probe server at " + probeAddress, dialTCP(probeAddress)},
		{"the metrics server at " + metricsAddress, dialTCP(metricsAddress)},
	}
	for _, w := range waits {
		if err := waitUntil(w.what, w.try, e.managerDone, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// serverVersion asks the API server of cfg for its version.
func serverVersion(cfg *rest.Config) (*version.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's version %q: %w", info.GitVersion, err)
	}
	return v, nil
}

// freeLocalAddress returns a loopback address with a port nothing listens on now.
func freeLocalAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitUntil calls try until it succeeds, failing when timeout passes or the Manager stops; what
// the stopped Manager returned stays in managerDone, for Stop.
func waitUntil(what string, try func() error, managerDone chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %w", what, timeout, err)
		}
		select {
		case err := <-managerDone:
			managerDone <- err
			return fmt.Errorf("the manager stopped before %s answered: %w", what, err)
		case <-ticker.C:
		}
	}
}

// dialTLS completes a TLS handshake with address.
func dialTLS(address string) func() error {
	return func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", address,
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that the server answers TLS
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// dialTCP opens a TCP connection to address.
func dialTCP(address string) func() error {
	return func() error {
		conn, err := net.DialTimeout("tcp", address, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// RestartManager stops the Manager and starts a new one against the same control plane, as a
// restarted Pod does. It fails if the stopped Manager returned an error.
func (e *Env) RestartManager() error {
	e.stopManager()
	if err := <-e.managerDone; err != nil {
		return fmt.Errorf("the manager stopped with an error: %w", err)
	}
	return e.startManager()
}

// ManagerDone receives what the running Manager's Start returned, once it has stopped.
func (e *Env) ManagerDone() <-chan error { return e.managerDone }

// EtcdURL is where the control plane's etcd serves its clients: what a spec reads there is what
// kube-apiserver stored.
func (e *Env) EtcdURL() string { return e.environment.ControlPlane.Etcd.URL.String() }

// Stop stops the Manager, then the control plane.
func (e *Env) Stop() error {
	e.stopManager()
	var errs []error
	if err := <-e.managerDone; err != nil {
		errs = append(errs, fmt.Errorf("the manager stopped with an error: %w", err))
	}
	if err := e.environment.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stopping envtest: %w", err))
	}
	return errors.Join(errs...)
}

// NewClientWithWarnings returns a client that records the warnings the API server sends, as
// kubectl prints them.
func (e *Env) NewClientWithWarnings() (client.Client, *Warnings, error) {
	cfg := rest.CopyConfig(e.Config)
	warnings := &Warnings{}
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: e.Manager.GetScheme()})
	return c, warnings, err
}

// Warnings records the warning headers of API responses.
type Warnings struct {
	mu       sync.Mutex
	messages []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *Warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, message string) {
	if code != 299 || message == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// Take returns the warnings recorded so far and forgets them.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.messages
	w.messages = nil
	return m
}

// ModuleRoot returns the directory of the operator's go.mod, searching up from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isOperatorModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the operator's go.mod above the working directory")
		}
		dir = parent
	}
}

func isOperatorModule(goMod []byte) bool {
	const first = "module github.com/seedlabs/webhook-operator\n"
	return len(goMod) >= len(first) && string(goMod[:len(first)]) == first
}
