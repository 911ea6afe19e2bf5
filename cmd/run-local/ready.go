package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/scheme"
)

// readyPollInterval is how often waitReady retries the checks that have not passed yet.
const readyPollInterval = 200 * time.Millisecond

// readinessCheck is one thing that must answer before run-local reports ready.
type readinessCheck struct {
	name  string
	check func(context.Context) error
}

// waitReady runs the checks until each has passed once, in order, and fails when timeout passes,
// ctx is done, or failed reports that a component stopped.
func waitReady(ctx context.Context, timeout time.Duration, failed func() error, checks []readinessCheck) error {
	log := ctrl.Log.WithName("run-local")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	begin := time.Now()

	var lastErr error
	lastReported := ""
	for len(checks) > 0 {
		if err := failed(); err != nil {
			return err
		}
		attemptCtx, cancelAttempt := context.WithTimeout(ctx, 10*time.Second)
		lastErr = checks[0].check(attemptCtx)
		cancelAttempt()
		if lastErr == nil {
			log.Info("answers", "what", checks[0].name, "after", time.Since(begin).Round(time.Millisecond))
			checks = checks[1:]
			continue
		}
		if msg := lastErr.Error(); msg != lastReported {
			log.V(1).Info("not answering yet", "what", checks[0].name, "reason", msg)
			lastReported = msg
		}
		select {
		case <-ctx.Done():
			names := make([]string, 0, len(checks))
			for _, c := range checks {
				names = append(names, c.name)
			}
			return fmt.Errorf("not ready after %s: waiting for %s: %w", time.Since(begin).Round(time.Second),
				strings.Join(names, ", "), lastErr)
		case <-ticker.C:
		}
	}
	return nil
}

// apiServerReady checks kube-apiserver's /readyz.
func apiServerReady(cfg *rest.Config) func(context.Context) error {
	return func(ctx context.Context) error {
		dc, err := discovery.NewDiscoveryClientForConfig(restConfigFor(cfg))
		if err != nil {
			return err
		}
		body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("GET /readyz: %w: %s", err, body)
		}
		return nil
	}
}

// webhookServerReady runs the Manager's readiness check: its webhook server completes a TLS
// handshake.
func webhookServerReady(mgr ctrl.Manager) func(context.Context) error {
	checker := mgr.GetWebhookServer().StartedChecker()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil)
		if err != nil {
			return err
		}
		return checker(req)
	}
}

// welcomeDefaulted creates a Welcome with server-side dry run and checks that the mutating webhook
// set spec.replicas: the API server calls the webhook server at its URL and trusts its certificate.
func welcomeDefaulted(cfg *rest.Config) func(context.Context) error {
	var c client.Client
	return func(ctx context.Context) error {
		if c == nil {
			var err error
			if c, err = client.New(restConfigFor(cfg), client.Options{Scheme: scheme.New()}); err != nil {
				return err
			}
		}
		probe := &authv1.Welcome{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "run-local-probe-", Namespace: metav1.NamespaceDefault},
			Spec:       authv1.WelcomeSpec{Name: "probe"},
		}
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return fmt.Errorf("dry-run create of a Welcome: %w", err)
		}
		if probe.Spec.Replicas == nil || *probe.Spec.Replicas != authv1.DefaultReplicas {
			return errors.New("dry-run create of a Welcome came back without spec.replicas defaulted to 1: the mutating webhook did not run")
		}
		return nil
	}
}

// restConfigFor returns a copy of cfg for a client of run-local's own checks.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	return c
}
