package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// CertOptions make the manager keep its own CA and webhook serving certificate, for clusters
// without cert-manager: open-policy-agent/cert-controller (what Gatekeeper uses) creates them in a
// Secret, renews them before they expire, and injects the CA into the webhook configurations,
// keeping the previous CA beside a new one until every replica serves the new (caRollover).
// Every replica runs it; the Secret's resourceVersion settles which write wins, and every replica
// loads the certificate the Secret holds, mounted at the webhook certificate directory, as it
// changes.
type CertOptions struct {
	// Secret is the Secret, namespace/name, holding the CA and the serving certificate; empty
	// leaves the certificate to someone else (cert-manager). It must exist: an empty Secret will do.
	Secret string
	// DNSNames are the serving certificate's names: the webhook Service's.
	DNSNames []string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration are the configurations whose
	// caBundles must verify the serving certificate before the server starts; with Secret, the CA
	// is injected into them.
	MutatingWebhookConfiguration, ValidatingWebhookConfiguration string
	// ConversionCRDs are the CustomResourceDefinitions whose conversion webhook the server serves:
	// their caBundles must verify the serving certificate too, and with Secret the CA is injected
	// into them as well.
	ConversionCRDs []string
}

// checksTrust reports whether the server waits for the webhook configurations to trust its
// certificate: always with Secret (validate requires both names), and in cert-manager mode when
// they are named.
func (c CertOptions) checksTrust() bool {
	return c.Secret != "" || c.MutatingWebhookConfiguration != "" || c.ValidatingWebhookConfiguration != "" || len(c.ConversionCRDs) > 0
}

// validate refuses options that name part of what their mode needs: the server waits for both
// configurations (and any conversion CRDs beside them), and with Secret the certificate needs its
// DNS names and its CA goes into both.
func (c CertOptions) validate() error {
	switch {
	case c.Secret != "" && (len(c.DNSNames) == 0 || c.MutatingWebhookConfiguration == "" || c.ValidatingWebhookConfiguration == ""):
		return errors.New("--cert-secret needs --cert-dns-names, --cert-mutating-webhook-configuration and --cert-validating-webhook-configuration")
	case c.MutatingWebhookConfiguration == "" || c.ValidatingWebhookConfiguration == "":
		return errors.New("--cert-mutating-webhook-configuration and --cert-validating-webhook-configuration go together, " +
			"and --cert-conversion-crds needs them")
	case c.Secret != "" && len(c.ConversionCRDs) > 1:
		// cert-controller sees only what it keeps (namedOnly), and a list can be narrowed to one name.
		return fmt.Errorf("--cert-secret injects the CA into one CRD's conversion webhook, and --cert-conversion-crds names %d", len(c.ConversionCRDs))
	}
	return nil
}

// secretKey parses Secret.
func (c CertOptions) secretKey() (types.NamespacedName, error) {
	namespace, name, ok := strings.Cut(c.Secret, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--cert-secret=%q: want namespace/name", c.Secret)
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
}

// addCertRotator has mgr keep the certificate c describes in certDir, and closes ready once the
// certificate is there and its CA injected into both webhook configurations: then the API server
// trusts what the webhook server serves. cert-controller writes through a client that rolls a new
// CA over without a failing window (caRollover).
func addCertRotator(mgr ctrl.Manager, c CertOptions, certDir string, ready chan struct{}) error {
	key, err := c.secretKey()
	if err != nil {
		return err
	}
	rollover, err := addCARollover(mgr, c, key)
	if err != nil {
		return err
	}
	// cert-controller makes its controller with controller-runtime's name check, which the
	// manager's SkipNameValidation does not reach: a manager that skips it, one of several in a
	// process, gives its rotator a name of its own.
	controllerName := "cert-rotator"
	if ptr.Deref(mgr.GetControllerOptions().SkipNameValidation, false) {
		controllerName = fmt.Sprintf("%s-%d", controllerName, rotatorsInProcess.Add(1))
	}
	return rotator.AddRotator(rotatorManager{Manager: mgr, client: rollover.client(mgr.GetClient()), config: c.narrowed(mgr.GetConfig(), key)}, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        certDir,
		CAName:         "webhook-operator-ca",
		CAOrganization: "webhook-operator",
		DNSName:        c.DNSNames[0],
		ExtraDNSNames:  c.DNSNames[1:],
		IsReady:        ready,
		Webhooks:       c.rotatorWebhooks(),
		FieldOwner:     EventSource,
		ControllerName: controllerName,
		// Every replica serves the webhooks, so every replica must get its certificate, leader
		// or not.
		RequireLeaderElection: false,
	})
}

// rotatorWebhooks are what cert-controller injects the CA into: both webhook configurations and
// the conversion webhook of every CRD named.
func (c CertOptions) rotatorWebhooks() []rotator.WebhookInfo {
	webhooks := []rotator.WebhookInfo{
		{Name: c.MutatingWebhookConfiguration, Type: rotator.Mutating},
		{Name: c.ValidatingWebhookConfiguration, Type: rotator.Validating},
	}
	for _, crd := range c.ConversionCRDs {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: crd, Type: rotator.CRDConversion})
	}
	return webhooks
}

// rotatorsInProcess counts the cert rotators of managers that skip the controller name check.
var rotatorsInProcess atomic.Int64

// rotatorManager is the manager cert-controller is added to: cert-controller writes the Secret
// and the webhook configurations with the manager's client, and reads them through a cache of its
// own, made from the manager's config, and has no option for either.
type rotatorManager struct {
	ctrl.Manager
	client client.Client
	config *rest.Config
}

// GetClient implements manager.Manager.
func (m rotatorManager) GetClient() client.Client {
	return m.client
}

// GetConfig implements manager.Manager.
func (m rotatorManager) GetConfig() *rest.Config {
	return m.config
}

// narrowed is cfg for cert-controller's cache: it caches every object of each kind it reads (every
// Secret of the namespace, every webhook configuration and every CRD of the cluster, whole), and
// needs only the objects it keeps. A CRD alone takes 40 to 150 KiB of heap in such a cache
// (BenchmarkCRDCacheBytes), so a cluster of a thousand CRDs would cost a replica 40 to 150 MiB, and
// reading every Secret of the namespace would let it read Helm's release Secrets there. So its
// list and watch requests of each collection are narrowed to the object it keeps by a field
// selector on its name (namedOnly), which RBAC can grant by resourceNames.
func (c CertOptions) narrowed(cfg *rest.Config, secret types.NamespacedName) *rest.Config {
	names := map[string]string{
		"/api/v1/namespaces/" + secret.Namespace + "/secrets":                   secret.Name,
		"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations":   c.MutatingWebhookConfiguration,
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": c.ValidatingWebhookConfiguration,
	}
	if len(c.ConversionCRDs) == 1 {
		names["/apis/apiextensions.k8s.io/v1/customresourcedefinitions"] = c.ConversionCRDs[0]
	}
	narrowed := rest.CopyConfig(cfg)
	narrowed.Wrap(func(rt http.RoundTripper) http.RoundTripper { return namedOnly{next: rt, names: names} })
	return narrowed
}

// namedOnly narrows the requests that list or watch a collection of names, by the path that ends
// in it (behind a proxy, the API server's URL may have a path of its own), to the one object of it
// named: their field selector gets metadata.name=<name>, beside any it has.
type namedOnly struct {
	next  http.RoundTripper
	names map[string]string
}

// RoundTrip implements http.RoundTripper.
func (n namedOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return n.next.RoundTrip(req)
	}
	for collection, name := range n.names {
		if !strings.HasSuffix(req.URL.Path, collection) {
			continue
		}
		req = req.Clone(req.Context())
		query := req.URL.Query()
		selector := "metadata.name=" + name
		if s := query.Get("fieldSelector"); s != "" {
			selector = s + "," + selector
		}
		query.Set("fieldSelector", selector)
		req.URL.RawQuery = query.Encode()
		break
	}
	return n.next.RoundTrip(req)
}

// gatedServer starts the webhook server only once ready is closed and trusted passes: before the
// certificate is in its directory the server could not start, and before every caBundle verifies
// it the API server would not trust it. Until then the webhook readiness check fails.
type gatedServer struct {
	webhook.Server
	ready <-chan struct{}
	// trusted checks that the API server trusts the certificate: cert-controller counts a
	// configuration it cannot find as injected.
	trusted func(context.Context) error
}

// Start implements manager.Runnable.
func (s *gatedServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	log := ctrl.LoggerFrom(ctx).WithName("webhook-certificate")
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		err := s.trusted(ctx)
		if err != nil {
			log.Info("the webhook server waits for its CA in the webhook configurations", "reason", err.Error())
		}
		return err == nil, nil
	}); err != nil {
		return nil // stopped before the CA was injected
	}
	return s.Server.Start(ctx)
}

// servesTrusted checks, reading past the cache, that the caBundle of every webhook of both
// configurations verifies the certificate in certFile, the one the webhook server serves. During
// a CA rollover a caBundle holds more than one CA.
func servesTrusted(reader client.Reader, c CertOptions, certFile string) func(context.Context) error {
	return func(ctx context.Context) error {
		data, err := os.ReadFile(certFile)
		if err != nil {
			return fmt.Errorf("reading the serving certificate: %w", err)
		}
		chain := parseCertificates(data)
		if len(chain) == 0 {
			return fmt.Errorf("%s holds no certificate", certFile)
		}
		webhooks, missing, err := readWebhooks(ctx, reader, c)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s not found", strings.Join(missing, " and "))
		}
		for _, w := range webhooks {
			if err := verifyChain(parseCertificates(w.clientConfig.CABundle), chain, ""); err != nil {
				return fmt.Errorf("the caBundle of webhook %s does not verify the serving certificate yet: %w", w.name, err)
			}
		}
		return nil
	}
}

// namedWebhook is one webhook of either configuration, or a CRD's conversion webhook.
type namedWebhook struct {
	// name is configuration/webhook, or the CRD's name.
	name         string
	clientConfig admissionregistrationv1.WebhookClientConfig
}

// readWebhooks reads, past the cache, every webhook of both configurations and the conversion
// webhook of every CRD named that exists; missing names a configuration that does not exist.
func readWebhooks(ctx context.Context, reader client.Reader, c CertOptions) (webhooks []namedWebhook, missing []string, err error) {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	switch err := reader.Get(ctx, client.ObjectKey{Name: c.MutatingWebhookConfiguration}, mutating); {
	case apierrors.IsNotFound(err):
		missing = append(missing, "MutatingWebhookConfiguration "+c.MutatingWebhookConfiguration)
	case err != nil:
		return nil, nil, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", c.MutatingWebhookConfiguration, err)
	}
	for _, w := range mutating.Webhooks {
		webhooks = append(webhooks, namedWebhook{name: mutating.Name + "/" + w.Name, clientConfig: w.ClientConfig})
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	switch err := reader.Get(ctx, client.ObjectKey{Name: c.ValidatingWebhookConfiguration}, validating); {
	case apierrors.IsNotFound(err):
		missing = append(missing, "ValidatingWebhookConfiguration "+c.ValidatingWebhookConfiguration)
	case err != nil:
		return nil, nil, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.ValidatingWebhookConfiguration, err)
	}
	for _, w := range validating.Webhooks {
		webhooks = append(webhooks, namedWebhook{name: validating.Name + "/" + w.Name, clientConfig: w.ClientConfig})
	}
	for _, name := range c.ConversionCRDs {
		// A missing CRD has no object to convert, and the manager serves every other webhook
		// without it (crds.go); the CA is injected into it once it is back.
		crd := &apiextensionsv1.CustomResourceDefinition{}
		switch err := reader.Get(ctx, client.ObjectKey{Name: name}, crd); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
		}
		w, err := conversionWebhook(crd)
		if err != nil {
			return nil, nil, err
		}
		webhooks = append(webhooks, w)
	}
	return webhooks, missing, nil
}

// conversionWebhook is crd's conversion webhook; a CRD without one is an error, since the
// options say the server serves it.
func conversionWebhook(crd *apiextensionsv1.CustomResourceDefinition) (namedWebhook, error) {
	conversion := crd.Spec.Conversion
	if conversion == nil || conversion.Strategy != apiextensionsv1.WebhookConverter || conversion.Webhook == nil || conversion.Webhook.ClientConfig == nil {
		return namedWebhook{}, fmt.Errorf("CustomResourceDefinition %s has no conversion webhook", crd.Name)
	}
	cc := conversion.Webhook.ClientConfig
	w := namedWebhook{name: crd.Name, clientConfig: admissionregistrationv1.WebhookClientConfig{URL: cc.URL, CABundle: cc.CABundle}}
	if s := cc.Service; s != nil {
		w.clientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	return w, nil
}
