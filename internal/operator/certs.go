package operator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// CertOptions make the manager keep its own CA and webhook serving certificate, for clusters
// without cert-manager: open-policy-agent/cert-controller (what Gatekeeper uses) creates them in a
// Secret, renews them before they expire, and injects the CA into the webhook configurations.
// Every replica runs it; the Secret's resourceVersion settles which write wins, and every replica
// loads the certificate the Secret holds, mounted at the webhook certificate directory, as it
// changes.
type CertOptions struct {
	// Secret is the Secret, namespace/name, holding the CA and the serving certificate; empty
	// leaves the certificate to someone else (cert-manager). It must exist: an empty Secret will do.
	Secret string
	// DNSNames are the serving certificate's names: the webhook Service's.
	DNSNames []string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration are the configurations the CA
	// is injected into.
	MutatingWebhookConfiguration, ValidatingWebhookConfiguration string
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
// trusts what the webhook server serves.
func addCertRotator(mgr ctrl.Manager, c CertOptions, certDir string, ready chan struct{}) error {
	key, err := c.secretKey()
	if err != nil {
		return err
	}
	if len(c.DNSNames) == 0 || c.MutatingWebhookConfiguration == "" || c.ValidatingWebhookConfiguration == "" {
		return errors.New("--cert-secret needs --cert-dns-names, --cert-mutating-webhook-configuration and --cert-validating-webhook-configuration")
	}
	return rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        certDir,
		CAName:         "webhook-operator-ca",
		CAOrganization: "webhook-operator",
		DNSName:        c.DNSNames[0],
		ExtraDNSNames:  c.DNSNames[1:],
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: c.MutatingWebhookConfiguration, Type: rotator.Mutating},
			{Name: c.ValidatingWebhookConfiguration, Type: rotator.Validating},
		},
		FieldOwner: EventSource,
		// Every replica serves the webhooks, so every replica must get its certificate, leader
		// or not.
		RequireLeaderElection: false,
	})
}

// gatedServer starts the webhook server only once ready is closed and trusted passes: before the
// certificate is in its directory the server could not start, and before its CA is in the webhook
// configurations the API server would not trust it. Until then the webhook readiness check fails.
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

// caInjected checks, reading past the cache, that every webhook of both configurations carries
// the CA of the certificate Secret as its caBundle.
func caInjected(reader client.Reader, c CertOptions) func(context.Context) error {
	return func(ctx context.Context) error {
		key, err := c.secretKey()
		if err != nil {
			return err
		}
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, key, secret); err != nil {
			return fmt.Errorf("reading the certificate Secret %s: %w", key, err)
		}
		ca := secret.Data["ca.crt"]
		var bundles [][]byte
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := reader.Get(ctx, client.ObjectKey{Name: c.MutatingWebhookConfiguration}, mutating); err != nil {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", c.MutatingWebhookConfiguration, err)
		}
		for _, w := range mutating.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := reader.Get(ctx, client.ObjectKey{Name: c.ValidatingWebhookConfiguration}, validating); err != nil {
			return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.ValidatingWebhookConfiguration, err)
		}
		for _, w := range validating.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		for _, b := range bundles {
			if len(ca) == 0 || !bytes.Equal(b, ca) {
				return errors.New("a webhook's caBundle is not the CA of the certificate Secret yet")
			}
		}
		return nil
	}
}
