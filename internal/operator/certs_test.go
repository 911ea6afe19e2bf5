package operator

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

func TestCAInjected(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nthe operator's CA\n-----END CERTIFICATE-----\n")
	opts := CertOptions{Secret: "system/server-cert", DNSNames: []string{"svc.system.svc"},
		MutatingWebhookConfiguration: "mutating", ValidatingWebhookConfiguration: "validating"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: "server-cert"}, Data: map[string][]byte{"ca.crt": ca}}
	mutating := func(bundles ...[]byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutating"}}
		for _, b := range bundles {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: b}})
		}
		return c
	}
	validating := func(bundles ...[]byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validating"}}
		for _, b := range bundles {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: b}})
		}
		return c
	}
	emptySecret := secret.DeepCopy()
	emptySecret.Data = nil
	tests := []struct {
		name    string
		objects []client.Object
		trusted bool
	}{
		{name: "every webhook carries the Secret's CA", objects: []client.Object{secret, mutating(ca, ca), validating(ca)}, trusted: true},
		{name: "one webhook carries another CA", objects: []client.Object{secret, mutating(ca, []byte("another CA")), validating(ca)}},
		{name: "one webhook carries none yet", objects: []client.Object{secret, mutating(ca), validating(nil)}},
		{name: "a configuration is missing, as with a misnamed flag", objects: []client.Object{secret, mutating(ca)}},
		{name: "the Secret holds no CA yet", objects: []client.Object{emptySecret, mutating(nil), validating(nil)}},
		{name: "the Secret is missing", objects: []client.Object{mutating(ca), validating(ca)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := caInjected(reconciletest.NewClient(t, nil, tt.objects...), opts)(context.Background())
			if trusted := err == nil; trusted != tt.trusted {
				t.Errorf("caInjected() = %v, want trusted %t", err, tt.trusted)
			}
		})
	}
}
