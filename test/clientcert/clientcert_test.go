// Package clientcert tests the webhook server with --webhook-client-ca: kube-apiserver, given a
// client certificate by its AdmissionConfiguration as docs/operations.md says, is served, and a
// caller without one is not.
package clientcert

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

func TestClientCertificates(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook client certificates suite")
}

var (
	env *testenv.Env
	// ca signs kube-apiserver's client certificate, and is the manager's --webhook-client-ca.
	ca *certs.CA
)

var _ = BeforeSuite(func() {
	dir, err := os.MkdirTemp("", "webhook-client-ca-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	ca, err = certs.NewCA("kube-apiserver-webhook-client-ca", time.Hour)
	Expect(err).NotTo(HaveOccurred())
	client, err := ca.NewClientPair(pkix.Name{CommonName: "kube-apiserver"}, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	config := filepath.Join(dir, "admission-configuration.yaml")
	admissionConfiguration, webhookKubeconfig := certs.WebhookClientConfig(kubeconfig, filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	for path, data := range map[string][]byte{
		filepath.Join(dir, "client.crt"): client.CertPEM,
		filepath.Join(dir, "client.key"): client.KeyPEM,
		filepath.Join(dir, "ca.crt"):     ca.CertPEM,
		kubeconfig:                       webhookKubeconfig,
		config:                           admissionConfiguration,
	} {
		Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	}
	env, err = testenv.StartWith(testenv.Options{
		APIServerFlags: map[string]string{"admission-control-config-file": config},
		Manager:        func(o *operator.Options) { o.WebhookClientCA = filepath.Join(dir, "ca.crt") },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.Stop)
})

// call posts an empty review to the Welcome's validating webhook with the client certificate of
// pair, none if nil, and returns the HTTP status or the error of the call.
func call(pair *certs.ServingPair) (int, error) {
	config := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only the webhook server's checks of its caller are under test
	if pair != nil {
		cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		Expect(err).NotTo(HaveOccurred())
		config.Certificates = []tls.Certificate{cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: config}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Post("https://"+env.WebhookAddress+"/validate-auth-seedlabs-dev-v1alpha1-welcome", "application/json", strings.NewReader("{}"))
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

var _ = Describe("With --webhook-client-ca", func() {
	It("serves kube-apiserver, which presents the client certificate its AdmissionConfiguration gives it", func(ctx SpecContext) {
		bad := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "refused"},
			Spec: authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](70000)}}
		err := env.Client.Create(ctx, bad, client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want the webhook's 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("(rule welcome.port.range)"))

		good := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "defaulted"},
			Spec: authv1.WelcomeSpec{Name: "Ada", Image: "registry.local:5000/welcome-web:v1"}}
		Expect(env.Client.Create(ctx, good, client.DryRunAll)).To(Succeed(), "the webhooks, mutating and validating, answered")
	})

	// apiextensions-apiserver gives a conversion webhook's client no credentials (it reads no
	// kubeconfig for it): the manager serves /convert without a client certificate, or no Welcome
	// would read at v1alpha1, as the e2e's install with mutual TLS found.
	It("converts for kube-apiserver, which calls a conversion webhook without a client certificate", func(ctx SpecContext) {
		stored := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "converted"},
			Spec: authv1.WelcomeSpec{Name: "Ada"}}
		Expect(env.Client.Create(ctx, stored)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(env.Client.Delete(ctx, stored)).To(Succeed()) })
		read := &authv1alpha1.Welcome{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stored), read)).To(Succeed(), "a read at v1alpha1 of a Welcome stored at v1")
		Expect(read.UID).To(Equal(stored.UID))
	})

	It("refuses a caller without a client certificate, 403 before reading its body, and one of another CA at the handshake", func() {
		Expect(call(nil)).To(Equal(http.StatusForbidden))

		other, err := certs.NewCA("someone-else", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		forged, err := other.NewClientPair(pkix.Name{CommonName: "kube-apiserver"}, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		_, err = call(forged)
		Expect(err).To(HaveOccurred(), "a certificate of another CA is refused")

		trusted, err := ca.NewClientPair(pkix.Name{CommonName: "anyone"}, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(call(trusted)).To(Equal(http.StatusOK), "a certificate of the CA is served (the empty review is answered in the body)")
	})
})
