// Command run-local brings the whole operator up on a machine with nothing but Go: etcd and
// kube-apiserver through envtest with the CRDs and webhook configurations from config/,
// kube-controller-manager as a child process, and the Manager in-process serving the webhooks with
// a certificate from the project's own certs package. It prints how to use the cluster once a
// Welcome has been defaulted through the API server, and stops everything on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

const (
	// webhookHost is where the webhook server listens and what the API server calls.
	webhookHost = "127.0.0.1"
	// certValidity is how long the local CA and serving certificates are valid; a run that
	// outlives it needs a restart.
	certValidity = 30 * 24 * time.Hour
	// controllerManagerStopTimeout bounds how long kube-controller-manager may take to exit on
	// SIGTERM before it is killed.
	controllerManagerStopTimeout = 10 * time.Second
	// managerStopTimeout bounds how long the Manager may take to stop its runnables.
	managerStopTimeout = 30 * time.Second
)

// flagsRunLocalOwns are operator flags whose values run-local chooses itself.
var flagsRunLocalOwns = []string{"webhook-host", "webhook-port", "webhook-cert-dir", "leader-elect", "leader-election-namespace"}

// config is what run needs; main fills it from the command line.
type config struct {
	// assetsDir holds etcd, kube-apiserver and kube-controller-manager.
	assetsDir string
	// kubeconfigOut is where the admin kubeconfig is written once everything is ready; the
	// webhook certificates and the kube-controller-manager log go next to it.
	kubeconfigOut string
	// manifestsDir is the kustomize config directory holding crd/bases and webhook.
	manifestsDir string
	// readyTimeout bounds the wait for everything to answer.
	readyTimeout time.Duration
	// operator configures the Manager; run sets the webhook server, leader election and metrics.
	operator operator.Options
	// stdout receives the usage block.
	stdout io.Writer
}

func main() {
	cfg := config{stdout: os.Stdout}
	flag.StringVar(&cfg.assetsDir, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"The directory holding etcd, kube-apiserver and kube-controller-manager (make controlplane builds them); defaults to $KUBEBUILDER_ASSETS.")
	flag.StringVar(&cfg.kubeconfigOut, "kubeconfig-out", filepath.Join("bin", "local", "kubeconfig"),
		"Where to write the admin kubeconfig once everything is ready; removed on exit.")
	flag.StringVar(&cfg.manifestsDir, "config-dir", "config", "The directory holding crd/bases and webhook.")
	flag.DurationVar(&cfg.readyTimeout, "ready-timeout", 2*time.Minute, "How long to wait for everything to answer.")
	cfg.operator.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: true, DestWriter: os.Stderr}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range flagsRunLocalOwns {
		if set[name] {
			fmt.Fprintf(os.Stderr, "run-local: --%s is chosen by run-local and cannot be set\n", name)
			os.Exit(2)
		}
	}
	// Nothing scrapes metrics or probes a local run; serve them only when asked to.
	if !set["metrics-bind-address"] {
		cfg.operator.MetricsAddr = "0"
	}
	if !set["health-probe-bind-address"] {
		cfg.operator.ProbeAddr = "0"
	}

	if err := run(ctrl.SetupSignalHandler(), cfg); err != nil {
		fmt.Fprintf(os.Stderr, "run-local: %v\n", err)
		os.Exit(1)
	}
}

// run starts the control plane, kube-controller-manager and the Manager, waits until all of them
// answer, writes the kubeconfig and blocks until ctx is done; then it stops everything it started,
// in reverse order. It returns an error when anything fails to start or stops unexpectedly.
func run(ctx context.Context, cfg config) (err error) {
	log := ctrl.Log.WithName("run-local")
	begin := time.Now()

	if err := cfg.check(); err != nil {
		return err
	}
	localDir := filepath.Dir(cfg.kubeconfigOut)
	certDir := filepath.Join(localDir, "certs")

	var stack cleanupStack
	defer func() { err = errors.Join(err, stack.run()) }()

	// 1. etcd and kube-apiserver with the CRDs and the webhook configurations.
	testEnv := &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			// Set the paths so that --assets wins over KUBEBUILDER_ASSETS in the environment.
			APIServer: &envtest.APIServer{Path: filepath.Join(cfg.assetsDir, "kube-apiserver")},
			Etcd:      &envtest.Etcd{Path: filepath.Join(cfg.assetsDir, "etcd")},
		},
		BinaryAssetsDirectory: cfg.assetsDir,
		Scheme:                scheme.New(),
		CRDDirectoryPaths:     []string{filepath.Join(cfg.manifestsDir, "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(cfg.manifestsDir, "webhook")},
			LocalServingHost: webhookHost,
		},
	}
	stack.push("etcd and kube-apiserver", testEnv.Stop)
	log.Info("starting etcd and kube-apiserver", "assets", cfg.assetsDir)
	restCfg, err := testEnv.Start()
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver from %s: %w", cfg.assetsDir, err)
	}
	if ctx.Err() != nil {
		log.Info("interrupted while starting; stopping")
		return nil
	}
	apiServerURL := testEnv.ControlPlane.APIServer.SecureServing.URL("https", "/").String()
	log.Info("kube-apiserver is up", "url", apiServerURL, "after", time.Since(begin).Round(time.Millisecond))

	// envtest always makes its own webhook CA in Start, so the configurations it installed trust
	// that one; point them at ours instead. The URLs (and host and port) stay as envtest set them.
	ca, err := certs.NewCA("webhook-operator run-local CA", certValidity)
	if err != nil {
		return err
	}
	if err := writeServingPair(ca, certDir, webhookHost); err != nil {
		return fmt.Errorf("writing the webhook serving certificate: %w", err)
	}
	stack.push("webhook serving certificates", func() error { return removeServingPair(certDir) })
	webhooks := &testEnv.WebhookInstallOptions
	webhooks.LocalServingCAData = ca.CertPEM
	if err := webhooks.ModifyWebhookDefinitions(); err != nil {
		return fmt.Errorf("pointing the webhook configurations at the local CA: %w", err)
	}
	if err := webhooks.Install(restCfg); err != nil {
		return fmt.Errorf("updating the webhook configurations: %w", err)
	}

	// 2. kube-controller-manager, so that Deployments get ReplicaSets and owned objects are
	// garbage collected.
	workDir, err := os.MkdirTemp("", "run-local-")
	if err != nil {
		return err
	}
	stack.push("temporary files", func() error { return os.RemoveAll(workDir) })
	kcm, err := startControllerManager(testEnv, ca, controllerManagerFiles{
		binary:  filepath.Join(cfg.assetsDir, "kube-controller-manager"),
		workDir: workDir,
		logPath: filepath.Join(localDir, "kube-controller-manager.log"),
	})
	if err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	stack.push("kube-controller-manager", func() error { return kcm.stop(controllerManagerStopTimeout) })
	log.Info("started kube-controller-manager", "pid", kcm.pid(), "log", kcm.logPath)

	// 3. The Manager, serving the webhooks the configurations now call.
	opts := cfg.operator
	opts.WebhookHost = webhookHost
	opts.WebhookPort = webhooks.LocalServingPort
	opts.WebhookCertDir = certDir
	opts.LeaderElection = false
	mgr, err := operator.New(restCfg, opts)
	if err != nil {
		return err
	}
	mgrCtx, stopManager := context.WithCancel(ctx)
	mgrDone := make(chan struct{})
	var mgrErr error
	go func() {
		defer close(mgrDone)
		mgrErr = mgr.Start(mgrCtx)
	}()
	stack.push("manager", func() error {
		stopManager()
		select {
		case <-mgrDone:
			return mgrErr
		case <-time.After(managerStopTimeout):
			return fmt.Errorf("the manager did not stop within %s", managerStopTimeout)
		}
	})
	log.Info("started the manager", "webhookServer", net.JoinHostPort(webhookHost, fmt.Sprint(opts.WebhookPort)),
		"welcomeImage", opts.WelcomeImage)

	// 4. Wait until everything answers, then hand out the kubeconfig.
	failed := func() error {
		select {
		case <-mgrDone:
			return fmt.Errorf("the manager stopped: %w", orStopped(mgrErr))
		case <-kcm.exited():
			return kcm.exitError()
		default:
			return nil
		}
	}
	err = waitReady(ctx, cfg.readyTimeout, failed, []readinessCheck{
		{name: "kube-apiserver", check: apiServerReady(restCfg)},
		{name: "webhook server", check: webhookServerReady(mgr)},
		{name: "kube-controller-manager", check: kcm.healthy},
		{name: "Welcome defaulting through the API server", check: welcomeDefaulted(restCfg)},
	})
	if err != nil {
		if ctx.Err() != nil {
			log.Info("interrupted while starting; stopping")
			return nil
		}
		return err
	}
	if err := writeFileAtomic(cfg.kubeconfigOut, testEnv.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	stack.push("kubeconfig "+cfg.kubeconfigOut, func() error { return os.Remove(cfg.kubeconfigOut) })
	ready := time.Since(begin).Round(100 * time.Millisecond)
	log.Info("ready", "after", ready)
	printUsage(cfg.stdout, usage{
		kubeconfig:    cfg.kubeconfigOut,
		apiServerURL:  apiServerURL,
		webhookServer: net.JoinHostPort(webhookHost, fmt.Sprint(opts.WebhookPort)),
		certDir:       certDir,
		kcmLog:        kcm.logPath,
		readyAfter:    ready,
	})

	// 5. Stay up until interrupted, or until a component stops on its own.
	select {
	case <-ctx.Done():
		log.Info("stopping")
		return nil
	case <-mgrDone:
		return fmt.Errorf("the manager stopped: %w", orStopped(mgrErr))
	case <-kcm.exited():
		return kcm.exitError()
	}
}

// check fails with a hint when the inputs run needs are missing.
func (c config) check() error {
	if c.assetsDir == "" {
		return errors.New("--assets is empty and KUBEBUILDER_ASSETS is not set: run `make run-local`")
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		info, err := os.Stat(filepath.Join(c.assetsDir, name))
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable in %s: run `make controlplane` to build the control plane", name, c.assetsDir)
		}
	}
	for _, dir := range []string{filepath.Join(c.manifestsDir, "crd", "bases"), filepath.Join(c.manifestsDir, "webhook")} {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s is missing: run run-local from the module root, after `make manifests`", dir)
		}
	}
	if c.kubeconfigOut == "" {
		return errors.New("--kubeconfig-out must not be empty")
	}
	return nil
}

// orStopped turns the nil a Manager returns when it stops without an error into one.
func orStopped(err error) error {
	if err == nil {
		return errors.New("stopped without an error before it was asked to")
	}
	return err
}

// writeServingPair writes tls.crt, tls.key and ca.crt for localhost and host into dir.
func writeServingPair(ca *certs.CA, dir, host string) error {
	pair, err := ca.NewServingPair([]string{"localhost"}, []net.IP{net.ParseIP(host)}, certValidity)
	if err != nil {
		return err
	}
	return pair.WriteDir(dir, ca.CertPEM)
}

// removeServingPair removes the files writeServingPair wrote, and dir when nothing else is in it.
func removeServingPair(dir string) error {
	var errs []error
	for _, name := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		errs = append(errs, os.Remove(dir))
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes data to a temporary file next to path, creating the directory if missing,
// and renames it over path, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
