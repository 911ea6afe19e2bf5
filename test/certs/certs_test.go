// Package certs runs the manager as it runs where cert-manager is not installed (--cert-secret)
// against a real kube-apiserver: it makes its own CA and serving certificate in a Secret,
// injects the CA into the webhook configurations, turns ready only once the API server can
// trust what it serves, and renews the certificate without failing an admission request.
//
// No kubelet runs here, so the suite plays its part: it writes the Secret's keys into the
// manager's certificate directory as they change, as a Secret volume does.
package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

const (
	namespace  = "webhook-operator-system"
	secretName = "webhook-operator-webhook-server-cert"
	// host is the name the API server calls the webhooks by, and the certificate's DNS name.
	host = "localhost"
	// The configurations as controller-gen generates them into config/webhook.
	mutatingConfiguration   = "mutating-webhook-configuration"
	validatingConfiguration = "validating-webhook-configuration"
)

func TestCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Certificates without cert-manager")
}

var (
	k8s          client.Client
	certDir      string
	probeAddress string
	webhookAddr  string
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run the envtest suites through 'make test', which builds the control plane")
	}
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	port, err := freePort()
	Expect(err).NotTo(HaveOccurred())
	// envtest installs the configurations with a URL of the given host and a CA of its own, which
	// the manager's certificate does not chain to: until the manager injects its CA, the API
	// server trusts nothing it serves.
	environment := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(root, "config", "webhook")},
			LocalServingHost: host,
			LocalServingPort: port,
		},
	}
	cfg, err := environment.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(environment.Stop)

	k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	// The install ships the Secret empty; the manager fills it.
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName}})).To(Succeed())

	certDir = GinkgoT().TempDir()
	probeAddress, err = freeAddress()
	Expect(err).NotTo(HaveOccurred())
	webhookAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	mgr, err := operator.New(cfg, operator.Options{
		MetricsAddr:    "0",
		ProbeAddr:      probeAddress,
		WebhookHost:    "127.0.0.1",
		WebhookPort:    port,
		WebhookCertDir: certDir,
		WelcomeImage:   testenv.WelcomeImage,
		MemcachedImage: testenv.MemcachedImage,
		Certs: operator.CertOptions{
			Secret:                         namespace + "/" + secretName,
			DNSNames:                       []string{host},
			MutatingWebhookConfiguration:   mutatingConfiguration,
			ValidatingWebhookConfiguration: validatingConfiguration,
		},
		SkipControllerNameValidation: true,
		MaxConcurrentReconciles:      operator.DefaultMaxConcurrentReconciles,
	})
	Expect(err).NotTo(HaveOccurred())
	mgrCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
	})
})

// secret is the manager's certificate Secret as stored.
func secret(ctx context.Context) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: secretName}, s)
}

// caBundles are the caBundle of every webhook of both configurations.
func caBundles(ctx context.Context) ([][]byte, error) {
	var bundles [][]byte
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: mutatingConfiguration}, m); err != nil {
		return nil, err
	}
	for _, w := range m.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: validatingConfiguration}, v); err != nil {
		return nil, err
	}
	for _, w := range v.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	return bundles, nil
}

// ready is the answer of the manager's webhook readiness check.
func ready(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probeAddress+"/readyz/webhook", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// mountSecret writes the Secret's keys into certDir whenever they change, until ctx ends, as
// the kubelet does for a Secret volume: each file is replaced whole.
func mountSecret(ctx context.Context) {
	defer GinkgoRecover()
	written := map[string]string{}
	for ctx.Err() == nil {
		if s, err := secret(ctx); err == nil {
			for key, value := range s.Data {
				if written[key] == string(value) {
					continue
				}
				tmp := filepath.Join(certDir, "."+key+".tmp")
				Expect(os.WriteFile(tmp, value, 0o600)).To(Succeed())
				Expect(os.Rename(tmp, filepath.Join(certDir, key))).To(Succeed())
				written[key] = string(value)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// served is the leaf certificate the webhook server presents, verified for host against the CA.
func served(ca []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the CA does not parse")
	}
	conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func welcome(name string, port int32) *authv1alpha1.Welcome {
	return &authv1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       authv1alpha1.WelcomeSpec{Name: "Ada", Port: ptr.To(port)},
	}
}

var _ = Describe("The manager keeping its own certificate (--cert-secret)", Ordered, func() {
	// The mount runs from the second spec to the end of the last.
	mountCtx, stopMounting := context.WithCancel(context.Background())
	AfterAll(func() { stopMounting() })

	It("makes its CA and serving certificate in the Secret and injects the CA into every webhook, and is not ready while the certificate is not mounted", func(ctx SpecContext) {
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Data).To(HaveKey("ca.crt"))
			g.Expect(s.Data).To(HaveKey("tls.crt"))
			g.Expect(s.Data).To(HaveKey("tls.key"))
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveLen(8))
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
		}).WithContext(ctx).Should(Succeed())

		// Nothing has mounted the Secret: the webhook server has not started, and the manager
		// says so.
		Consistently(ready).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal(http.StatusInternalServerError))
	}, SpecTimeout(time.Minute))

	It("turns ready once the certificate is mounted, serving it for the webhook Service's name, and the API server calls the webhooks with it", func(ctx SpecContext) {
		go mountSecret(mountCtx)

		Eventually(ready).WithContext(ctx).Should(Equal(http.StatusOK))
		s, err := secret(ctx)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := served(s.Data["ca.crt"])
		Expect(err).NotTo(HaveOccurred())
		Expect(leaf.DNSNames).To(ContainElement(host))

		// Through the API server: the mutating webhook defaults, the validating one refuses.
		w := welcome("greeting", 8080)
		w.Spec.Port = nil
		Expect(k8s.Create(ctx, w, client.DryRunAll)).To(Succeed())
		Expect(w.Spec.Port).To(Equal(ptr.To(authv1alpha1.DefaultPort)))
		err = k8s.Create(ctx, welcome("greeting", 70000), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.port"))
	}, SpecTimeout(time.Minute))

	It("renews a serving certificate that is no longer valid under the same CA, without failing an admission request", func(ctx SpecContext) {
		before, err := secret(ctx)
		Expect(err).NotTo(HaveOccurred())

		// Admission load: a valid and an invalid dry-run create, over and over.
		var answered, failed atomic.Int64
		var lastFailure atomic.Value
		loadCtx, stopLoad := context.WithCancel(ctx)
		loadDone := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(loadDone)
			for i := 0; loadCtx.Err() == nil; i++ {
				err := k8s.Create(loadCtx, welcome(fmt.Sprintf("load-%d", i), 8080), client.DryRunAll)
				if err == nil {
					err = k8s.Create(loadCtx, welcome(fmt.Sprintf("load-%d", i), 0), client.DryRunAll)
					if apierrors.IsInvalid(err) {
						err = nil
					} else if err == nil {
						err = errors.New("an invalid Welcome was admitted")
					}
				}
				switch {
				case loadCtx.Err() != nil:
				case err != nil:
					failed.Add(1)
					lastFailure.Store(err.Error())
				default:
					answered.Add(1)
				}
			}
		}()
		Eventually(answered.Load).WithContext(ctx).Should(BeNumerically(">=", 20))

		// The certificate is spoiled, as if it had expired: the manager issues a new one.
		spoiled := before.DeepCopy()
		spoiled.Data["tls.crt"] = []byte("not a certificate")
		Expect(k8s.Update(ctx, spoiled)).To(Succeed())
		var after *corev1.Secret
		Eventually(func(g Gomega, ctx context.Context) {
			after, err = secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(after.Data["tls.crt"]).NotTo(Or(Equal(before.Data["tls.crt"]), Equal(spoiled.Data["tls.crt"])))
		}).WithContext(ctx).Should(Succeed())
		Expect(after.Data["ca.crt"]).To(Equal(before.Data["ca.crt"]), "a renewed serving certificate keeps the CA")

		// The server picks the new one up; the API server's trust holds throughout.
		Eventually(func(g Gomega) {
			leaf, err := served(after.Data["ca.crt"])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leaf.Raw).To(Equal(pemBlock(after.Data["tls.crt"])))
		}).WithContext(ctx).Should(Succeed())
		servedBefore := answered.Load()
		Eventually(answered.Load).WithContext(ctx).Should(BeNumerically(">=", servedBefore+20))
		stopLoad()
		<-loadDone

		AddReportEntry("renewal: admission requests answered", answered.Load())
		Expect(failed.Load()).To(BeZero(), "last failure: %v", lastFailure.Load())
		bundles, err := caBundles(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(HaveEach(Equal(after.Data["ca.crt"])))
	}, SpecTimeout(2*time.Minute))
})

// pemBlock is the DER of the first PEM block of data.
func pemBlock(data []byte) []byte {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	return block.Bytes
}

// freeAddress returns a loopback address with a port nothing listens on now.
func freeAddress() (string, error) {
	port, err := freePort()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
