// Package operator builds the one controller-runtime Manager that serves every admission webhook
// and runs every controller. cmd/manager, the envtest suites and run-local all build it here, so
// what the tests exercise is what ships.
package operator

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/seedlabs/webhook-operator/internal/controller"
	"github.com/seedlabs/webhook-operator/internal/controller/admissionpolicy"
	"github.com/seedlabs/webhook-operator/internal/controller/deployobject"
	"github.com/seedlabs/webhook-operator/internal/controller/memcached"
	"github.com/seedlabs/webhook-operator/internal/controller/welcome"
	"github.com/seedlabs/webhook-operator/internal/reconcile/guard"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// Defaults of the manager's configuration.
const (
	// DefaultWelcomeImage is the welcome-web image a Welcome runs unless it sets spec.image.
	DefaultWelcomeImage = "ghcr.io/seedlabs/welcome-web:v0.1.0"
	// EnvWelcomeImage overrides DefaultWelcomeImage, as the deploy-image plugin's operand images do.
	EnvWelcomeImage = "WELCOME_IMAGE"
	// DefaultMemcachedImage is the memcached image of every Memcached pool: the official image's
	// 1.6.38-alpine pinned by the digest of its multi-platform index, so that every node runs the
	// same bytes whatever the tag later points to (the tag is for people, the digest is what runs).
	// The digest is the one docker-library/repo-info records for the tag, in
	// repos/memcached/tag-details.md.
	DefaultMemcachedImage = "memcached:1.6.38-alpine@sha256:8b7ce4bb3cb4aa340d690007fd89c1a0a403120a13b48d483de4e5f4e5a33d96"
	// EnvMemcachedImage overrides DefaultMemcachedImage.
	EnvMemcachedImage = "MEMCACHED_IMAGE"
	// EnvMemoryLimit holds the container's memory limit in bytes, from the downward API.
	EnvMemoryLimit = "MEMORY_LIMIT"
	// DefaultShutdownDelay is how long a stopping manager goes on serving webhooks after it
	// reports not ready.
	DefaultShutdownDelay = 5 * time.Second
	// gracefulShutdownTimeout bounds how long the stopped manager waits for its runnables, the
	// webhook server's requests in flight among them.
	gracefulShutdownTimeout = 15 * time.Second
	// DefaultMaxConcurrentReconciles is how many objects of each kind are reconciled at once: a
	// reconcile mostly waits on the API server, so one at a time leaves it idle.
	DefaultMaxConcurrentReconciles = 4
	// DefaultCacheSyncTimeout bounds how long a controller waits for its kinds to be cached: a new
	// leader lists every custom resource and child, which at 100,000 custom resources on a busy API
	// server takes longer than controller-runtime's 2 minutes, and giving up would restart the list.
	DefaultCacheSyncTimeout = 10 * time.Minute
	// LeaderElectionID names the Lease that elects the active manager.
	LeaderElectionID = "webhook-operator.seedlabs.dev"
	// EventSource is the reportingController of the Events the controllers record.
	EventSource = "webhook-operator"
)

// Options configure the Manager. BindFlags fills them from the command line.
type Options struct {
	// MetricsAddr is where metrics are served; "0" turns metrics off.
	MetricsAddr string
	// SecureMetrics serves metrics over HTTPS behind authentication and authorization.
	SecureMetrics bool
	// ProbeAddr is where /healthz and /readyz are served; "0" turns them off.
	ProbeAddr string
	// LeaderElection makes only one replica of the manager active at a time.
	LeaderElection bool
	// LeaderElectionNamespace is where the leader election Lease lives; empty means the
	// manager's own namespace.
	LeaderElectionNamespace string
	// WebhookHost is the address the webhook server binds; empty means every interface.
	WebhookHost string
	// WebhookPort is the port of the webhook server.
	WebhookPort int
	// WebhookCertDir holds tls.crt and tls.key; the server reloads them when they change.
	WebhookCertDir string
	// WebhookClientCA, when set, is a file of PEM CA certificates: the webhook server then serves
	// only callers that present a client certificate one of them signed, as kube-apiserver does
	// when its AdmissionConfiguration gives it one (docs/operations.md). It is read again when it
	// changes.
	WebhookClientCA string
	// MetricsCertDir holds the metrics server's tls.crt and tls.key, reloaded when they change;
	// without them there, the metrics server makes itself a self-signed certificate.
	MetricsCertDir string
	// EnableHTTP2 serves HTTP/2 on the webhook and metrics servers; off by default because of
	// the HTTP/2 Stream Cancellation and Rapid Reset CVEs.
	EnableHTTP2 bool
	// WelcomeImage is the welcome-web image.
	WelcomeImage string
	// MemcachedImage is the memcached image.
	MemcachedImage string
	// AllowedRegistries are the registries a DeployObject's image may come from; empty allows any.
	AllowedRegistries []string
	// ShutdownDelay is how long the manager goes on serving webhooks, not ready, once told to stop.
	ShutdownDelay time.Duration
	// PprofAddr is where net/http/pprof is served, unauthenticated; "0" or empty turns it off.
	PprofAddr string
	// MaxConcurrentReconciles is how many objects of each kind are reconciled at once.
	MaxConcurrentReconciles int
	// CacheSyncTimeout bounds how long a controller waits for its kinds to be cached.
	CacheSyncTimeout time.Duration
	// PolicyStaleness is how long the replica stays ready while the API server has not confirmed
	// that the policy it enforces is the stored one; 0 keeps it ready however long that is.
	PolicyStaleness time.Duration
	// StorageMigration has the leader store the objects of a CRD whose stored versions list one
	// other than its storage version at the storage version, and then trim them
	// (storagemigration.go).
	StorageMigration bool

	// Certs, when Certs.Secret is set, have the manager keep its own webhook serving certificate.
	Certs CertOptions

	// SkipControllerNameValidation allows more than one Manager in a process, as tests need.
	SkipControllerNameValidation bool
}

// BindFlags registers the manager's flags, in the kubebuilder spirit, on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "0",
		"The address the metrics endpoint binds to, :8443 for HTTPS or :8080 for HTTP; 0 turns it off.")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS, allowing only clients that authenticate and are authorized to get /metrics.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false,
		"Enable leader election, so that only one replica of the manager is active.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"The namespace of the leader election Lease; empty means the manager's own namespace.")
	fs.StringVar(&o.WebhookHost, "webhook-host", "", "The address the webhook server binds to; empty means every interface.")
	fs.IntVar(&o.WebhookPort, "webhook-port", webhook.DefaultPort, "The port the webhook server listens on.")
	fs.StringVar(&o.WebhookClientCA, "webhook-client-ca", "",
		"A file of PEM CA certificates: the webhook server then serves only callers presenting a client certificate one of them "+
			"signed, such as kube-apiserver with an AdmissionConfiguration that gives it one. Read again when it changes. "+
			"Empty serves any caller.")
	// Both certificate directories default to controller-runtime's own defaults, under TMPDIR.
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"),
		"The directory holding the webhook server's tls.crt and tls.key.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", filepath.Join(os.TempDir(), "k8s-metrics-server", "serving-certs"),
		"The directory holding the metrics server's tls.crt and tls.key; without them it serves a self-signed certificate.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", false, "Serve HTTP/2 on the webhook and metrics servers.")
	fs.StringVar(&o.WelcomeImage, "welcome-image", envOr(EnvWelcomeImage, DefaultWelcomeImage),
		"The welcome-web image a Welcome runs unless it sets spec.image (env "+EnvWelcomeImage+").")
	fs.StringVar(&o.MemcachedImage, "memcached-image", envOr(EnvMemcachedImage, DefaultMemcachedImage),
		"The memcached image of every Memcached pool (env "+EnvMemcachedImage+").")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", DefaultShutdownDelay,
		"How long the manager goes on serving webhooks, reporting not ready, after SIGTERM, so that no admission request "+
			"is sent to a replica that has stopped; keep terminationGracePeriodSeconds above it plus 15s.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0",
		"The address net/http/pprof binds to, such as 127.0.0.1:6060, for profiling; it is unauthenticated, "+
			"so bind it to loopback only. 0 turns it off.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles,
		"How many objects of each kind are reconciled at once.")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", DefaultCacheSyncTimeout,
		"How long a controller waits for its kinds to be cached before the manager gives up and exits: "+
			"a new leader lists every custom resource and its children first.")
	fs.DurationVar(&o.PolicyStaleness, "policy-staleness", DefaultPolicyStaleness,
		"How long the replica stays ready while the API server has not confirmed that the AdmissionPolicy it enforces "+
			"is the stored one, as when the replica is cut off from it: past that, it reports not ready, so that no "+
			"admission request is answered under a policy that may have changed, until the API server answers again. "+
			"At least 1s; 0 keeps it ready however long that is.")
	fs.BoolVar(&o.StorageMigration, "storage-migration", true,
		"On the leader, store every object of the operator's CRDs at the CRD's storage version whenever the CRD lists "+
			"another stored version, as after an upgrade that changed it, and then trim the CRD's status.storedVersions to "+
			"the storage version. false leaves that to you (a StorageVersionMigration, docs/upgrade.md).")
	fs.StringVar(&o.Certs.Secret, "cert-secret", "",
		"namespace/name of a Secret in which the manager keeps its own CA and webhook serving certificate, renewing them and "+
			"injecting the CA into the webhook configurations, for clusters without cert-manager; mount it at --webhook-cert-dir. "+
			"Empty leaves the certificate to cert-manager.")
	fs.Func("cert-dns-names", "With --cert-secret: comma-separated DNS names of the serving certificate, the webhook Service's.",
		func(value string) error {
			for _, n := range strings.Split(value, ",") {
				if n = strings.TrimSpace(n); n != "" {
					o.Certs.DNSNames = append(o.Certs.DNSNames, n)
				}
			}
			return nil
		})
	fs.StringVar(&o.Certs.MutatingWebhookConfiguration, "cert-mutating-webhook-configuration", "",
		"The MutatingWebhookConfiguration whose every caBundle must verify the serving certificate before the webhook "+
			"server starts and the manager turns ready; with --cert-secret, the manager injects its CA into it.")
	fs.StringVar(&o.Certs.ValidatingWebhookConfiguration, "cert-validating-webhook-configuration", "",
		"The ValidatingWebhookConfiguration whose every caBundle must verify the serving certificate before the webhook "+
			"server starts and the manager turns ready; with --cert-secret, the manager injects its CA into it.")
	fs.Func("cert-conversion-crds",
		"Comma-separated CustomResourceDefinitions whose conversion webhook the server serves: like the webhook "+
			"configurations, their caBundle must verify the serving certificate before the webhook server starts and the "+
			"manager turns ready; with --cert-secret, the manager injects its CA into it (one CRD, then).",
		func(value string) error {
			for _, n := range strings.Split(value, ",") {
				if n = strings.TrimSpace(n); n != "" {
					o.Certs.ConversionCRDs = append(o.Certs.ConversionCRDs, n)
				}
			}
			return nil
		})
	fs.Func("allowed-registries",
		"Comma-separated registries a DeployObject's image may come from, such as docker.io,registry.local:5000; "+
			"unset allows any. May be repeated.",
		func(value string) error {
			for _, r := range strings.Split(value, ",") {
				if r = strings.TrimSpace(r); r != "" {
					o.AllowedRegistries = append(o.AllowedRegistries, r)
				}
			}
			return nil
		})
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// MemoryLimit is the soft memory limit to give the Go runtime, a tenth below the container's
// memory limit in bytes as the downward API puts it in the environment variable EnvMemoryLimit,
// so the garbage collector works harder before the kernel kills the process. It reports false
// when GOMEMLIMIT is set, which the runtime obeys instead, or when no limit is known.
func MemoryLimit(getenv func(string) string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	limit, err := strconv.ParseInt(getenv(EnvMemoryLimit), 10, 64)
	if err != nil || limit <= 0 {
		return 0, false
	}
	return limit / 10 * 9, true
}

// tlsOptions sets TLS 1.2 as the floor and, unless HTTP/2 is enabled, offers only HTTP/1.1.
func (o *Options) tlsOptions() []func(*tls.Config) {
	opts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }}
	if !o.EnableHTTP2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}

// New builds the Manager, step by step: the webhook server, the manager, the certificate it keeps
// (with --cert-secret), the policy in force, the leader gate, the webhooks, the controllers and
// the checks.
func New(cfg *rest.Config, o Options) (*Manager, error) {
	imagePolicy, err := webhooks.NewImagePolicy(o.AllowedRegistries)
	if err != nil {
		return nil, fmt.Errorf("--allowed-registries: %w", err)
	}
	if o.PolicyStaleness != 0 && o.PolicyStaleness < minPolicyStaleness {
		return nil, fmt.Errorf("--policy-staleness=%s: must be 0 (never unready) or at least %s, since the API server is asked every tenth of it",
			o.PolicyStaleness, minPolicyStaleness)
	}
	server, err := newWebhookServer(o)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, o.managerOptions(server.Server))
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := server.keepCertificate(mgr, o); err != nil {
		return nil, fmt.Errorf("managing the webhook certificate: %w", err)
	}

	// The AdmissionPolicy named cluster, when it exists, decides what admission does about each
	// rule and which registries are allowed; until then, and once it is deleted, every rule keeps
	// its default action and --allowed-registries holds.
	policy := newLivePolicy(webhooks.DefaultPolicy(imagePolicy))
	// Any of the CRDs may be missing: each kind's controller, and the policy's watch, wait for it.
	crds := newCRDWatch(mgr)
	if err := mgr.Add(crds); err != nil {
		return nil, fmt.Errorf("watching the CustomResourceDefinitions: %w", err)
	}
	policySynced, err := watchPolicy(mgr, crds, policy, imagePolicy, o.PolicyStaleness)
	if err != nil {
		return nil, fmt.Errorf("watching the admission policy: %w", err)
	}

	m := newManager(mgr, o.ShutdownDelay, server.stopping)
	controllers, err := leaderElected(cfg, mgr, o, m)
	if err != nil {
		return nil, err
	}
	namespaces := cachedNamespaces{cache: mgr.GetCache()}
	webhooks.Setup(mgr, webhooks.Options{Policy: policy, Namespaces: namespaces, Recorder: mgr.GetEventRecorder(EventSource)})
	if o.StorageMigration {
		discovery, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, mgr.GetHTTPClient())
		if err != nil {
			return nil, fmt.Errorf("adding the storage migration: %w", err)
		}
		if err := controllers.Add(&storageMigration{crds: crds, api: mgr.GetAPIReader(), writer: mgr.GetClient(), discovery: discovery,
			log: mgr.GetLogger().WithName("storage-migration"), cleaned: map[string]int64{}}); err != nil {
			return nil, fmt.Errorf("adding the storage migration: %w", err)
		}
	}
	if err := addControllers(mgr, controllers, crds, o, guard.Guard{Policy: policy, Namespaces: namespaces, Recorder: mgr.GetEventRecorder(EventSource)}, policy); err != nil {
		return nil, err
	}
	if err := addChecks(mgr, m, policySynced); err != nil {
		return nil, err
	}
	return m, nil
}

// webhookServer is the manager's webhook server (serving.go), and what its shutdown and its
// certificate need of it.
type webhookServer struct {
	webhook.Server
	// stopping is set when the manager starts to stop, and the server to refuse new work.
	stopping *atomic.Bool
	// certGate holds the server back until the certificate it serves is trusted; nil when no
	// webhook configuration is named (Certs).
	certGate   *gatedServer
	certsReady chan struct{}
}

// newWebhookServer is the webhook server: TLS 1.2 and up, HTTP/1.1 unless HTTP/2 is enabled,
// client certificates checked when --webhook-client-ca is set, request bodies within budget, and,
// when the webhook configurations are named, not started before they trust its certificate.
func newWebhookServer(o Options) (*webhookServer, error) {
	tlsOptions := o.tlsOptions()
	if o.WebhookClientCA != "" {
		cas, err := newClientCAs(o.WebhookClientCA)
		if err != nil {
			return nil, fmt.Errorf("--webhook-client-ca: %w", err)
		}
		tlsOptions = append(tlsOptions, cas.tlsOption)
	}
	s := &webhookServer{stopping: new(atomic.Bool), certsReady: make(chan struct{})}
	s.Server = servingServer{
		Server: webhook.NewServer(webhook.Options{
			Host:     o.WebhookHost,
			Port:     o.WebhookPort,
			CertDir:  o.WebhookCertDir,
			CertName: webhookCertName,
			TLSOpts:  tlsOptions,
		}),
		stopping:           s.stopping,
		bodies:             newBodyBudget(bodyBytesPerCaller, bodyBytesInAll),
		clientCertificates: o.WebhookClientCA != "",
	}
	servingCertificateExpiry.watch(filepath.Join(o.WebhookCertDir, webhookCertName))
	if o.Certs.checksTrust() {
		s.certGate = &gatedServer{Server: s.Server, ready: s.certsReady}
		s.Server = s.certGate
	}
	return s, nil
}

// keepCertificate has mgr keep the webhook's certificate in --cert-secret; without it, cert-manager
// keeps it, mounted before the manager starts. Either way, when the webhook configurations are
// named, the server starts, and the manager turns ready, only once their caBundles verify it: in
// cert-manager mode its CA injector may not have written them yet, and helm install --wait or
// kubectl rollout status would return while kube-apiserver cannot trust the webhooks.
func (s *webhookServer) keepCertificate(mgr ctrl.Manager, o Options) error {
	if !o.Certs.checksTrust() {
		return nil
	}
	if err := o.Certs.validate(); err != nil {
		return err
	}
	if o.Certs.Secret == "" {
		close(s.certsReady)
	} else if err := addCertRotator(mgr, o.Certs, o.WebhookCertDir, s.certsReady); err != nil {
		return err
	}
	s.certGate.trusted = servesTrusted(mgr.GetAPIReader(), o.Certs, filepath.Join(o.WebhookCertDir, webhookCertName))
	return nil
}

// managerOptions are the manager's options: the webhook server, metrics, probes, the cache
// (cache.go) and the controllers' concurrency. The manager itself is not leader-elected: the
// controllers alone are, by the leader gate (leaderElected).
func (o *Options) managerOptions(server webhook.Server) ctrl.Options {
	metricsOptions := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		SecureServing: o.SecureMetrics,
		CertDir:       o.MetricsCertDir,
		TLSOpts:       o.tlsOptions(),
	}
	if o.SecureMetrics {
		metricsOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsOptions,
		WebhookServer:           server,
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          false,
		GracefulShutdownTimeout: ptr.To(gracefulShutdownTimeout),
		Cache:                   cacheOptions(),
		NewClient:               newClient,
		Controller: config.Controller{
			SkipNameValidation:      &o.SkipControllerNameValidation,
			MaxConcurrentReconciles: max(o.MaxConcurrentReconciles, 1),
			CacheSyncTimeout:        o.CacheSyncTimeout,
		},
	}
}

// leaderElected adds the leader gate (leader.go) to mgr, and returns the manager the controllers
// are added to, which runs them on the leader alone.
func leaderElected(cfg *rest.Config, mgr ctrl.Manager, o Options, m *Manager) (ctrl.Manager, error) {
	gate := &leaderGate{name: LeaderElectionID, stop: m.stop}
	if o.LeaderElection {
		var err error
		if gate.lock, err = leaderelection.NewResourceLock(cfg, mgr, leaderelection.Options{
			LeaderElection:          true,
			LeaderElectionID:        LeaderElectionID,
			LeaderElectionNamespace: o.LeaderElectionNamespace,
			RenewDeadline:           renewDeadline,
		}); err != nil {
			return nil, fmt.Errorf("setting up leader election: %w", err)
		}
	}
	if err := mgr.Add(gate); err != nil {
		return nil, fmt.Errorf("adding the leader gate: %w", err)
	}
	return leaderOnly{Manager: mgr, gate: gate}, nil
}

// addControllers adds the controller of each kind to controllers, each once its CRD exists.
// Every kind's controller gets the same dependencies, and its own subscription to the policy's
// changes.
func addControllers(mgr, controllers ctrl.Manager, crds *crdWatch, o Options, specGuard guard.Guard, policy *livePolicy) error {
	deps := func() controller.Deps {
		return controller.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(EventSource),
			Guard: specGuard, PolicyChanges: policy.subscribe()}
	}
	if err := (&welcome.Reconciler{Deps: deps(), Image: o.WelcomeImage}).SetupWithManager(crds.gate(controllers, welcomeCRD)); err != nil {
		return fmt.Errorf("setting up the Welcome controller: %w", err)
	}
	if err := (&memcached.Reconciler{Deps: deps(), Image: o.MemcachedImage}).SetupWithManager(crds.gate(controllers, memcachedCRD)); err != nil {
		return fmt.Errorf("setting up the Memcached controller: %w", err)
	}
	if err := (&deployobject.Reconciler{Deps: deps()}).SetupWithManager(crds.gate(controllers, deployObjectCRD)); err != nil {
		return fmt.Errorf("setting up the DeployObject controller: %w", err)
	}
	if err := (&admissionpolicy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(crds.gate(controllers, admissionPolicyCRD)); err != nil {
		return fmt.Errorf("setting up the AdmissionPolicy controller: %w", err)
	}
	return nil
}

// addChecks adds the probes: alive while the process runs; ready while the webhook server
// completes a TLS handshake (so the API server's calls succeed), the manager is not stopping, and
// the policy in force is the stored one, as the API server confirmed within the staleness allowed.
func addChecks(mgr ctrl.Manager, m *Manager, policySynced healthz.Checker) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	for _, c := range []struct {
		name  string
		check healthz.Checker
	}{
		{"webhook", mgr.GetWebhookServer().StartedChecker()},
		{"shutdown", m.readyUntilStopping},
		{"admission-policy", policySynced},
	} {
		if err := mgr.AddReadyzCheck(c.name, c.check); err != nil {
			return fmt.Errorf("adding the readiness check %s: %w", c.name, err)
		}
	}
	return nil
}
