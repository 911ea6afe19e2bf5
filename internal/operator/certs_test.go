package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/test/reconciletest"
)

var testCertOptions = CertOptions{Secret: "system/server-cert", DNSNames: []string{"webhook-service.system.svc"},
	MutatingWebhookConfiguration: "mutating", ValidatingWebhookConfiguration: "validating"}

// testCA is a CA and a serving certificate of it, for the webhook Service's name.
type testCA struct {
	ca      *certs.CA
	serving *certs.ServingPair
}

func newTestCA(t *testing.T, validity time.Duration) testCA {
	t.Helper()
	ca, err := certs.NewCA("test", validity)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.NewServingPair(testCertOptions.DNSNames, nil, validity)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{ca: ca, serving: serving}
}

func bundle(cas ...testCA) []byte {
	var b []byte
	for _, c := range cas {
		b = append(b, c.ca.CertPEM...)
	}
	return b
}

func mutatingConfiguration(bundles ...[]byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutating"}}
	for i, b := range bundles {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "m" + strconv.Itoa(i) + ".seedlabs.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service"},
			CABundle: b,
		}})
	}
	return c
}

func validatingConfiguration(bundles ...[]byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validating"}}
	for i, b := range bundles {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "v" + strconv.Itoa(i) + ".seedlabs.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service"},
			CABundle: b,
		}})
	}
	return c
}

func certSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: "server-cert"}, Data: data}
}

func TestServesTrusted(t *testing.T) {
	current, previous, other := newTestCA(t, time.Hour), newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	tests := []struct {
		name    string
		serving []byte
		objects []client.Object
		trusted bool
	}{
		{name: "every caBundle is the CA of the served certificate", serving: current.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current), bundle(current)), validatingConfiguration(bundle(current))}, trusted: true},
		{name: "every caBundle holds it beside the previous CA, during a rollover", serving: current.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current, previous), bundle(previous, current)), validatingConfiguration(bundle(current, previous))}, trusted: true},
		{name: "the served certificate is still the previous CA's, during a rollover", serving: previous.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current, previous)), validatingConfiguration(bundle(current, previous))}, trusted: true},
		{name: "one caBundle holds another CA", serving: current.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current), bundle(other)), validatingConfiguration(bundle(current))}},
		{name: "one caBundle is empty yet", serving: current.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current)), validatingConfiguration(nil)}},
		{name: "a configuration is missing, as with a misnamed flag", serving: current.serving.CertPEM,
			objects: []client.Object{mutatingConfiguration(bundle(current))}},
		{name: "no certificate is mounted yet",
			objects: []client.Object{mutatingConfiguration(bundle(current)), validatingConfiguration(bundle(current))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certFile := filepath.Join(t.TempDir(), "tls.crt")
			if tt.serving != nil {
				if err := os.WriteFile(certFile, tt.serving, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := servesTrusted(reconciletest.NewClient(t, nil, tt.objects...), testCertOptions, certFile)(context.Background())
			if trusted := err == nil; trusted != tt.trusted {
				t.Errorf("servesTrusted() = %v, want trusted %t", err, tt.trusted)
			}
		})
	}
}

func conversionCRD(caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "welcomes.auth.seedlabs.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service:  &apiextensionsv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: ptr.To("/convert")},
				CABundle: caBundle,
			}},
		}},
	}
}

// TestServesTrustedChecksTheConversionWebhooks: a CRD whose conversion webhook the server serves
// must trust its certificate as the webhook configurations do, or the API server could not read
// the objects stored at another version.
func TestServesTrustedChecksTheConversionWebhooks(t *testing.T) {
	current, other := newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	opts := testCertOptions
	opts.ConversionCRDs = []string{"welcomes.auth.seedlabs.dev"}
	configurations := []client.Object{mutatingConfiguration(bundle(current)), validatingConfiguration(bundle(current))}
	noConversion := conversionCRD(nil)
	noConversion.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for _, tc := range []struct {
		name string
		crd  client.Object
		want string
	}{
		{name: "its caBundle is the CA of the served certificate", crd: conversionCRD(bundle(current))},
		{name: "its caBundle holds another CA", crd: conversionCRD(bundle(other)), want: "webhook welcomes.auth.seedlabs.dev does not verify"},
		{name: "its caBundle is empty yet", crd: conversionCRD(nil), want: "webhook welcomes.auth.seedlabs.dev does not verify"},
		{name: "it has no conversion webhook", crd: noConversion, want: "has no conversion webhook"},
		{name: "it is missing: nothing to convert, and every other webhook is served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certFile := filepath.Join(t.TempDir(), "tls.crt")
			if err := os.WriteFile(certFile, current.serving.CertPEM, 0o600); err != nil {
				t.Fatal(err)
			}
			objects := configurations
			if tc.crd != nil {
				objects = append(slices.Clone(configurations), tc.crd)
			}
			err := servesTrusted(reconciletest.NewClient(t, nil, objects...), opts, certFile)(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("servesTrusted() = %v, want trusted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("servesTrusted() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestTrustBeforeServing(t *testing.T) {
	current, next, installer := newTestCA(t, time.Hour), newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	expired := newTestCA(t, time.Nanosecond)
	renewed, err := current.ca.NewServingPair(testCertOptions.DNSNames, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string][]byte{
		caCertKey: current.ca.CertPEM, "ca.key": []byte("current CA key"),
		corev1.TLSCertKey: current.serving.CertPEM, corev1.TLSPrivateKeyKey: current.serving.KeyPEM,
	}
	// What cert-controller writes when it replaces the CA: the new CA and a certificate of it.
	newCA := map[string][]byte{
		caCertKey: next.ca.CertPEM, "ca.key": []byte("next CA key"),
		corev1.TLSCertKey: next.serving.CertPEM, corev1.TLSPrivateKeyKey: next.serving.KeyPEM,
	}
	tests := []struct {
		name    string
		stored  map[string][]byte
		objects []client.Object
		write   map[string][]byte
		want    map[string][]byte
	}{
		{
			name:   "a new CA goes before the CAs the caBundles trust now, and its certificate waits",
			stored: stored,
			objects: []client.Object{
				mutatingConfiguration(bundle(current), bundle(current, expired)), validatingConfiguration(bundle(current, installer)),
			},
			write: newCA,
			want: map[string][]byte{
				caCertKey: bundle(next, current, installer), "ca.key": []byte("next CA key"),
				corev1.TLSCertKey: current.serving.CertPEM, corev1.TLSPrivateKeyKey: current.serving.KeyPEM,
			},
		},
		{
			name:    "the certificate of the new CA is written once every caBundle holds it",
			stored:  map[string][]byte{caCertKey: bundle(next, current), "ca.key": []byte("next CA key"), corev1.TLSCertKey: current.serving.CertPEM, corev1.TLSPrivateKeyKey: current.serving.KeyPEM},
			objects: []client.Object{mutatingConfiguration(bundle(next, current)), validatingConfiguration(bundle(next, current))},
			write:   map[string][]byte{caCertKey: bundle(next, current), "ca.key": []byte("next CA key"), corev1.TLSCertKey: next.serving.CertPEM, corev1.TLSPrivateKeyKey: next.serving.KeyPEM},
			want:    map[string][]byte{caCertKey: bundle(next, current), "ca.key": []byte("next CA key"), corev1.TLSCertKey: next.serving.CertPEM, corev1.TLSPrivateKeyKey: next.serving.KeyPEM},
		},
		{
			name:    "a serving certificate renewed under the same CA is written at once",
			stored:  stored,
			objects: []client.Object{mutatingConfiguration(bundle(current)), validatingConfiguration(bundle(current))},
			write:   map[string][]byte{caCertKey: current.ca.CertPEM, "ca.key": []byte("current CA key"), corev1.TLSCertKey: renewed.CertPEM, corev1.TLSPrivateKeyKey: renewed.KeyPEM},
			want:    map[string][]byte{caCertKey: current.ca.CertPEM, "ca.key": []byte("current CA key"), corev1.TLSCertKey: renewed.CertPEM, corev1.TLSPrivateKeyKey: renewed.KeyPEM},
		},
		{
			name:    "the first CA, into empty caBundles, comes without a certificate",
			stored:  nil,
			objects: []client.Object{mutatingConfiguration(nil), validatingConfiguration(nil)},
			write:   newCA,
			want:    map[string][]byte{caCertKey: next.ca.CertPEM, "ca.key": []byte("next CA key")},
		},
		{
			name:   "without webhook configurations there is nothing to wait for",
			stored: nil,
			write:  newCA,
			want:   newCA,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := reconciletest.NewClient(t, nil, append(tt.objects, certSecret(tt.stored))...)
			r := &caRollover{opts: testCertOptions, secret: types.NamespacedName{Namespace: "system", Name: "server-cert"}, api: c}
			s := certSecret(map[string][]byte{})
			for k, v := range tt.write {
				s.Data[k] = v
			}
			if err := r.trustBeforeServing(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			for k := range mergeKeys(s.Data, tt.want) {
				if string(s.Data[k]) != string(tt.want[k]) {
					t.Errorf("%s = %q, want %q", k, s.Data[k], tt.want[k])
				}
			}
		})
	}
}

func mergeKeys(maps ...map[string][]byte) map[string]bool {
	keys := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			keys[k] = true
		}
	}
	return keys
}

func TestInjectStoredCA(t *testing.T) {
	current, previous := newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	stored := bundle(current, previous)
	c := reconciletest.NewClient(t, nil, certSecret(map[string][]byte{caCertKey: stored}))
	r := &caRollover{opts: testCertOptions, secret: types.NamespacedName{Namespace: "system", Name: "server-cert"}, api: c}
	// cert-controller's stale cache would inject the previous CA alone.
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mutatingConfiguration(bundle(previous), nil))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: object}
	if err := r.injectStoredCA(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	webhooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	if len(webhooks) != 2 {
		t.Fatalf("%d webhooks, want 2", len(webhooks))
	}
	for i, w := range webhooks {
		got, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "caBundle")
		if got != base64.StdEncoding.EncodeToString(stored) {
			t.Errorf("webhook %d: caBundle is not the Secret's ca.crt", i)
		}
	}
}

// TestInjectStoredCAIntoAConversionWebhook: cert-controller injects into a CRD's conversion
// webhook through the same client, so it gets the stored ca.crt too.
func TestInjectStoredCAIntoAConversionWebhook(t *testing.T) {
	current, previous := newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	stored := bundle(current, previous)
	c := reconciletest.NewClient(t, nil, certSecret(map[string][]byte{caCertKey: stored}))
	r := &caRollover{opts: testCertOptions, secret: types.NamespacedName{Namespace: "system", Name: "server-cert"}, api: c}
	crd := conversionCRD(bundle(previous))
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: object}
	if err := r.injectStoredCA(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if got != base64.StdEncoding.EncodeToString(stored) {
		t.Errorf("the conversion webhook's caBundle is %q, not the Secret's ca.crt", got)
	}

	none := conversionCRD(nil)
	none.Spec.Conversion = nil
	none.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(none)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.injectStoredCA(context.Background(), &unstructured.Unstructured{Object: object}); err == nil || !strings.Contains(err.Error(), "has no conversion webhook") {
		t.Errorf("injecting into a CRD without a conversion webhook: %v, want an error saying so", err)
	}
}

func TestReplicas(t *testing.T) {
	endpointSlice := func(service, port string, number int32, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "system", Name: service + "-" + port, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   endpoints,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To(number)}},
		}
	}
	endpoint := func(address string, ready, serving *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{address}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving}}
	}
	validating := validatingConfiguration(nil)
	validating.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://localhost:9443/validate")}
	c := reconciletest.NewClient(t, nil,
		mutatingConfiguration(nil, nil), validating,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: "webhook-service"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "metrics", Port: 8443}, {Name: "https", Port: 443},
		}}},
		endpointSlice("webhook-service", "https", 9443,
			endpoint("10.0.0.1", ptr.To(true), nil),
			endpoint("10.0.0.2", nil, nil),
			endpoint("10.0.0.3", ptr.To(false), ptr.To(true)),
			endpoint("10.0.0.4", ptr.To(false), ptr.To(false)),
		),
		endpointSlice("webhook-service", "metrics", 8443, endpoint("10.0.0.1", ptr.To(true), nil)),
		endpointSlice("another-service", "https", 9443, endpoint("10.0.0.9", ptr.To(true), nil)),
	)
	r := &caRollover{opts: testCertOptions, api: c}
	got, err := r.replicas(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []replica{
		{address: "10.0.0.1:9443", serverName: "webhook-service.system.svc"},
		{address: "10.0.0.2:9443", serverName: "webhook-service.system.svc"},
		{address: "10.0.0.3:9443", serverName: "webhook-service.system.svc"},
		{address: "localhost:9443", serverName: "localhost"},
	}
	if len(got) != len(want) {
		t.Fatalf("replicas() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("replicas()[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestReconcileDropsThePreviousCAOnceEveryReplicaServesTheNew(t *testing.T) {
	current, previous := newTestCA(t, time.Hour), newTestCA(t, time.Hour)
	keyPair := func(c testCA) *tls.Certificate {
		pair, err := tls.X509KeyPair(c.serving.CertPEM, c.serving.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &pair
	}
	objects := []client.Object{
		certSecret(map[string][]byte{caCertKey: bundle(current, previous), corev1.TLSCertKey: current.serving.CertPEM}),
		mutatingConfiguration(bundle(current, previous)), validatingConfiguration(bundle(current, previous)),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: "webhook-service"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
	}
	// Two replicas, each a ready endpoint in a slice of its own; the second still serves the
	// previous CA's certificate.
	var serving []*atomic.Pointer[tls.Certificate]
	for i := range 2 {
		pair := &atomic.Pointer[tls.Certificate]{}
		server := httptest.NewUnstartedServer(http.NotFoundHandler())
		server.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return pair.Load(), nil }}
		server.StartTLS()
		t.Cleanup(server.Close)
		serving = append(serving, pair)
		address := server.Listener.Addr().(*net.TCPAddr)
		objects = append(objects, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "system", Name: "webhook-service-" + strconv.Itoa(i), Labels: map[string]string{discoveryv1.LabelServiceName: "webhook-service"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{address.IP.String()}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(address.Port))}},
		})
	}
	serving[0].Store(keyPair(current))
	serving[1].Store(keyPair(previous))
	c := reconciletest.NewClient(t, nil, objects...)
	r := &caRollover{opts: testCertOptions, secret: types.NamespacedName{Namespace: "system", Name: "server-cert"}, api: c, writer: c}
	caCert := func() []byte {
		s := &corev1.Secret{}
		if err := c.Get(context.Background(), r.secret, s); err != nil {
			t.Fatal(err)
		}
		return s.Data[caCertKey]
	}

	result, err := r.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != rolloverCheckInterval || !bytes.Equal(caCert(), bundle(current, previous)) {
		t.Errorf("a replica serves the previous CA's certificate: got requeue after %s and %d CAs, want %s and both CAs kept",
			result.RequeueAfter, len(parseCertificates(caCert())), rolloverCheckInterval)
	}

	serving[1].Store(keyPair(current))
	result, err = r.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if result.RequeueAfter != 0 || !bytes.Equal(caCert(), current.ca.CertPEM) {
		t.Errorf("every replica serves the new CA's certificate: got requeue after %s and %d CAs, want no requeue and the new CA alone",
			result.RequeueAfter, len(parseCertificates(caCert())))
	}
}

// TestTrustCheckNamesBothConfigurations: the webhook server waits for both configurations to
// trust its certificate, so naming one alone is a mistake, said at start; with --cert-secret, so
// is leaving out a name or the DNS names.
func TestTrustCheckNamesBothConfigurations(t *testing.T) {
	for _, tc := range []struct {
		certs CertOptions
		want  string
	}{
		{CertOptions{MutatingWebhookConfiguration: "m"}, "go together"},
		{CertOptions{ValidatingWebhookConfiguration: "v"}, "go together"},
		{CertOptions{Secret: "system/cert", MutatingWebhookConfiguration: "m", ValidatingWebhookConfiguration: "v"}, "--cert-secret needs --cert-dns-names"},
		{CertOptions{Secret: "system/cert", DNSNames: []string{"svc"}, MutatingWebhookConfiguration: "m"}, "--cert-secret needs"},
		{CertOptions{ConversionCRDs: []string{"welcomes.auth.seedlabs.dev"}}, "--cert-conversion-crds needs them"},
	} {
		s, err := newWebhookServer(Options{Certs: tc.certs, WebhookCertDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		err = s.keepCertificate(nil, Options{Certs: tc.certs})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error saying %q", tc.certs, err, tc.want)
		}
	}
}

// TestRotatorReadsOnlyWhatItKeeps: the config cert-controller's cache is made from narrows each
// list and watch of a collection it reads to the object it keeps, behind an API server URL with a
// path of its own too, and leaves every other request alone; with several conversion CRDs, which
// no field selector narrows to, self-signed mode is refused.
func TestRotatorReadsOnlyWhatItKeeps(t *testing.T) {
	var seen []string
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.Query().Get("fieldSelector"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer apiServer.Close()
	options := testCertOptions
	options.ConversionCRDs = []string{"welcomes.auth.seedlabs.dev"}
	key := types.NamespacedName{Namespace: "system", Name: "server-cert"}
	cfg := options.narrowed(&rest.Config{Host: apiServer.URL + "/proxy/cluster-a"}, key)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, request := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/system/secrets?watch=true"},
		{http.MethodGet, "/api/v1/namespaces/system/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls"},
		{http.MethodGet, "/api/v1/namespaces/system/secrets/server-cert"},
		{http.MethodGet, "/api/v1/namespaces/other/secrets"},
		{http.MethodGet, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?limit=500"},
		{http.MethodGet, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"},
		{http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"},
		{http.MethodPut, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/welcomes.auth.seedlabs.dev"},
	} {
		req, err := http.NewRequest(request.method, apiServer.URL+"/proxy/cluster-a"+request.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []string{
		"GET /proxy/cluster-a/api/v1/namespaces/system/secrets?metadata.name=server-cert",
		"GET /proxy/cluster-a/api/v1/namespaces/system/secrets?type=kubernetes.io/tls,metadata.name=server-cert",
		"GET /proxy/cluster-a/api/v1/namespaces/system/secrets/server-cert?",
		"GET /proxy/cluster-a/api/v1/namespaces/other/secrets?",
		"GET /proxy/cluster-a/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?metadata.name=" + options.MutatingWebhookConfiguration,
		"GET /proxy/cluster-a/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?metadata.name=" + options.ValidatingWebhookConfiguration,
		"GET /proxy/cluster-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions?metadata.name=welcomes.auth.seedlabs.dev",
		"PUT /proxy/cluster-a/apis/apiextensions.k8s.io/v1/customresourcedefinitions/welcomes.auth.seedlabs.dev?",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the API server saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}

	options.ConversionCRDs = append(options.ConversionCRDs, "memcacheds.cache.seedlabs.dev")
	if err := options.validate(); err == nil || !strings.Contains(err.Error(), "one CRD") {
		t.Errorf("self-signed mode with two conversion CRDs: %v", err)
	}
}
