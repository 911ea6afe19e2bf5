// Command cert-manager runs cert-manager's own controllers and CA injector in one process against the
// cluster of its kubeconfig, until SIGTERM or SIGINT.
//
// The webhook-operator end-to-end test runs it in place of cert-manager's controller and cainjector
// binaries, which are not on the Go module proxy. The controllers are the real ones from the
// github.com/cert-manager/cert-manager module, limited to what the test needs (issuers, the self-signed
// and CA signers, the certificates pipeline and CA injection) and configured with the defaults of
// cert-manager's own commands. Nothing listens on a port: there are no metrics, health or webhook
// servers, and no leader election.
//
// The end-to-end test runs it as a pod, from an image built like the operator's, with the pod's
// service account. Outside a pod, the kubeconfig comes from controller-runtime's --kubeconfig flag or
// from $KUBECONFIG: the program never falls back to ~/.kube/config, so it cannot act on a developer's
// real cluster by accident. klog flags such as -v are accepted; logs go to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	"github.com/cert-manager/cert-manager/pkg/util"

	// The issuers and clusterissuers controllers find issuer types in a registry these packages fill.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

const (
	// workers is the number of workers per controller, cert-manager's default.
	workers = 5

	// clusterResourceNamespace holds the Secrets that ClusterIssuers refer to; cert-manager's Helm
	// chart sets it to the namespace cert-manager is installed in.
	clusterResourceNamespace = "cert-manager"

	// cacheSyncTimeout bounds the wait for the first list of every watched resource.
	cacheSyncTimeout = 2 * time.Minute
)

// controllerNames are the cert-manager controllers this program runs, in cert-manager's order.
var controllerNames = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
	crca.CRControllerName,
	trigger.ControllerName,
	issuing.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	klog.InitFlags(nil)
	flag.Parse()
	log := klog.Background()
	ctrl.SetLogger(log)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	context.AfterFunc(ctx, stop) // a second signal during shutdown kills the process
	err := run(ctx, log)
	stop()
	if err != nil {
		log.Error(err, "cert-manager controllers failed")
		klog.Flush()
		os.Exit(1)
	}
	log.Info("cert-manager controllers stopped")
	klog.Flush()
}

// run builds every controller, starts them and blocks until ctx is done or one of them fails.
func run(ctx context.Context, log logr.Logger) error {
	kubeconfig, err := kubeconfigPath()
	if err != nil {
		return err
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, runCtx := errgroup.WithContext(runCtx)

	factory, err := controller.NewContextFactory(runCtx, contextOptions(kubeconfig))
	if err != nil {
		return fmt.Errorf("building cert-manager controller context: %w", err)
	}
	cmCtx, err := factory.Build()
	if err != nil {
		return fmt.Errorf("building cert-manager controller context: %w", err)
	}
	controllers := make(map[string]controller.Interface, len(controllerNames))
	for _, name := range controllerNames {
		newController, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("cert-manager controller %q is not registered", name)
		}
		if controllers[name], err = newController(factory); err != nil {
			return fmt.Errorf("creating cert-manager controller %q: %w", name, err)
		}
	}

	mgr, err := newCAInjector(runCtx, restConfig)
	if err != nil {
		return err
	}

	for name, c := range controllers {
		g.Go(func() error {
			if err := c.Run(workers, runCtx); err != nil {
				return fmt.Errorf("running cert-manager controller %q: %w", name, err)
			}
			return nil
		})
	}
	g.Go(func() error {
		if err := mgr.Start(runCtx); err != nil {
			return fmt.Errorf("running cainjector: %w", err)
		}
		return nil
	})
	cmCtx.SharedInformerFactory.Start(runCtx.Done())
	cmCtx.KubeSharedInformerFactory.Start(runCtx.Done())
	cmCtx.HTTP01ResourceMetadataInformersFactory.Start(runCtx.Done())
	defer func() {
		cmCtx.HTTP01ResourceMetadataInformersFactory.Shutdown()
		cmCtx.KubeSharedInformerFactory.Shutdown()
		cmCtx.SharedInformerFactory.Shutdown()
	}()

	if err := waitForCacheSync(runCtx, cmCtx, mgr); err != nil {
		cancel()
		if runErr := g.Wait(); runErr != nil {
			return runErr
		}
		if ctx.Err() != nil {
			return nil // stopped by a signal while starting
		}
		return err
	}
	log.Info("cert-manager controllers started", "controllers", controllerNames)
	return g.Wait()
}

// kubeconfigPath returns the kubeconfig file that ctrl.GetConfig reads: the --kubeconfig flag that
// controller-runtime registers, else $KUBECONFIG; or, in a pod, "" for the pod's in-cluster
// configuration, which both ctrl.GetConfig and cert-manager's context factory then use.
func kubeconfigPath() (string, error) {
	if f := flag.Lookup(config.KubeconfigFlagName); f != nil && f.Value.String() != "" {
		return f.Value.String(), nil
	}
	if path := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); path != "" {
		return path, nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return "", nil
	}
	return "", fmt.Errorf("no kubeconfig, and not in a pod: pass --%s or set %s", config.KubeconfigFlagName, clientcmd.RecommendedConfigPathEnvVar)
}

// contextOptions mirrors the defaults of cert-manager's controller command (cert-manager's
// internal/apis/config/controller/v1alpha1/defaults.go), with the cluster resource namespace of its
// Helm chart. ACME and Gateway API settings are left empty: those controllers do not run.
func contextOptions(kubeconfig string) controller.ContextOptions {
	return controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          "", // all namespaces
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: true,
			IssuerAmbientCredentials:        false,
		},
		IngressShimOptions: controller.IngressShimOptions{
			DefaultIssuerKind:                 cmapi.IssuerKind,
			DefaultIssuerGroup:                cmapi.SchemeGroupVersion.Group,
			DefaultAutoCertificateAnnotations: []string{"kubernetes.io/tls-acme"},
		},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           false, // Secrets outlive their Certificate
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
}

// newCAInjector returns a manager running cert-manager's cainjector reconcilers for every injectable
// kind, set up like cert-manager's cainjector command: Secrets are read from the API server, never
// cached, and CA data may come from a Secret or from a Certificate's Secret.
func newCAInjector(ctx context.Context, restConfig *rest.Config) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	for _, addToScheme := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, // core and admissionregistration
		cmscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
	} {
		if err := addToScheme(scheme); err != nil {
			return nil, fmt.Errorf("building cainjector scheme: %w", err)
		}
	}

	// The user agent names the field manager of cainjector's server-side apply.
	mgr, err := ctrl.NewManager(util.RestConfigWithUserAgent(restConfig, "cainjector"), ctrl.Options{
		Scheme: scheme,
		Cache:  cache.Options{ReaderFailOnMissingInformer: true},
		Client: client.Options{
			Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("creating cainjector manager: %w", err)
	}

	if err := requireCertManagerCRDs(mgr); err != nil {
		return nil, err
	}

	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("registering cainjector reconcilers: %w", err)
	}
	return mgr, nil
}

// requireCertManagerCRDs fails when the API server does not serve cert-manager's kinds, which the
// controllers would otherwise wait for forever.
func requireCertManagerCRDs(mgr ctrl.Manager) error {
	for _, kind := range []string{cmapi.CertificateKind, cmapi.CertificateRequestKind, cmapi.IssuerKind, cmapi.ClusterIssuerKind} {
		gk := schema.GroupKind{Group: cmapi.SchemeGroupVersion.Group, Kind: kind}
		if _, err := mgr.GetRESTMapper().RESTMapping(gk, cmapi.SchemeGroupVersion.Version); err != nil {
			return fmt.Errorf("cert-manager CRDs are not installed (apply the cert-manager module's deploy/crds first): %w", err)
		}
	}
	return nil
}

// waitForCacheSync waits until the informers of the controllers and of cainjector have listed
// everything they watch, so that "started" means the controllers see the cluster.
func waitForCacheSync(ctx context.Context, cmCtx *controller.Context, mgr ctrl.Manager) error {
	ctx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()

	var unsynced []string
	for typ, synced := range cmCtx.SharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			unsynced = append(unsynced, typ.String())
		}
	}
	for typ, synced := range cmCtx.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			unsynced = append(unsynced, typ)
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		unsynced = append(unsynced, "cainjector cache")
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("informer caches not synced within %s: %v: %w", cacheSyncTimeout, unsynced, context.Cause(ctx))
	}
	return nil
}
