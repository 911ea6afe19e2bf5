package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// trivialGroup is matched by a mutating and a validating webhook that both call the trivial
// stdlib handler: what two webhook calls cost the API server when the handler does nothing.
const trivialGroup = "trivial.bench.seedlabs.dev"

// trivialWebhooks serves the trivial handler to the API server from this process.
type trivialWebhooks struct {
	server *http.Server
	calls  atomic.Int64
}

// serveTrivialWebhooks serves the trivial handler over TLS with a certificate of the cluster's CA
// and registers it as a mutating and a validating webhook for the Welcome copy in trivialGroup.
func (c *cluster) serveTrivialWebhooks(ctx context.Context) (*trivialWebhooks, error) {
	pair, err := c.ca.NewServingPair(nil, []net.IP{net.ParseIP("127.0.0.1")}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &trivialWebhooks{}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	t.server = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.calls.Add(1)
			fixtures.TrivialAdmission(w, r)
		}),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = t.server.Serve(tls.NewListener(listener, tlsConfig)) }()

	url := "https://" + listener.Addr().String() + "/"
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{trivialGroup}, APIVersions: []string{"v1"}, Resources: []string{"welcomes"},
		},
	}}
	clientConfig := admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: c.ca.CertPEM}
	matchConditions := []admissionregistrationv1.MatchCondition{{
		Name:       "spec-changed",
		Expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec",
	}}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "trivial.bench.seedlabs.dev"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mtrivial.bench.seedlabs.dev", ClientConfig: clientConfig, Rules: rules, SideEffects: &sideEffects,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](1), MatchConditions: matchConditions,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "trivial.bench.seedlabs.dev"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vtrivial.bench.seedlabs.dev", ClientConfig: clientConfig, Rules: rules, SideEffects: &sideEffects,
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](1), MatchConditions: matchConditions,
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		}},
	}
	if err := c.client.Create(ctx, mutating); err != nil {
		return nil, err
	}
	if err := c.client.Create(ctx, validating); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *trivialWebhooks) stop() error { return t.server.Close() }
