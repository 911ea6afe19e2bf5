// Package certs runs the manager as it runs where cert-manager is not installed (--cert-secret)
// against a real kube-apiserver: it makes its own CA and serving certificate in a Secret,
// injects the CA into the webhook configurations, turns ready only once the API server can
// trust what it serves, renews the certificate and replaces the CA without failing an admission
// request or a read the conversion webhook converts.
//
// No kubelet, endpoints controller or kube-proxy runs here, so the suite plays their parts: it
// writes the Secret's keys into each manager's certificate directory as they change, as a Secret
// volume does (and can hold that back, as a kubelet slow to sync does), lists each ready manager
// in an EndpointSlice of the webhook Service, and has kube-apiserver call those endpoints directly
// (--enable-aggregator-routing), as it calls a Service's cluster IP elsewhere. EndpointSlices
// refuse loopback addresses, so the managers listen on an address of this host's network.
package certs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/certs"
	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

const (
	namespace  = "webhook-operator-system"
	secretName = "webhook-operator-webhook-server-cert"
	// serviceName is the webhook Service; serviceHost the name the API server calls it by, and
	// the certificate's DNS name.
	serviceName = "webhook-service"
	serviceHost = serviceName + "." + namespace + ".svc"
	// The configurations as controller-gen generates them into config/webhook.
	mutatingConfiguration   = "mutating-webhook-configuration"
	validatingConfiguration = "validating-webhook-configuration"
)

func TestCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Certificates without cert-manager")
}

var (
	k8s    client.Client
	cfg    *rest.Config
	hostIP string
	// installerCA is the CA the webhook configurations are installed with, as cert-manager's
	// would be in an install switching to self-signed mode: nothing the managers serve chains
	// to it.
	installerCA *certs.CA
	// first is the manager the suite starts with; the last spec starts a second.
	first *replica
	// conversionCRDs are the CRDs installed with config/crd's conversion webhook, whose CA the
	// managers inject as well.
	conversionCRDs []string
)

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run the envtest suites through 'make test', which builds the control plane")
	}
	var err error
	hostIP, err = hostAddress()
	Expect(err).NotTo(HaveOccurred())
	root, err := testenv.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	environment := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	environment.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err = environment.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(environment.Stop)

	k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	// The install ships the Secret empty; the manager fills it.
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName}})).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: serviceName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("webhook-server")},
		}},
	})).To(Succeed())
	installerCA, err = certs.NewCA("installer", time.Hour)
	Expect(err).NotTo(HaveOccurred())
	Expect(installWebhooks(ctx, filepath.Join(root, "config", "webhook", "manifests.yaml"))).To(Succeed())
	conversionCRDs, err = installConversionWebhooks(ctx, filepath.Join(root, "config", "crd", "patches"))
	Expect(err).NotTo(HaveOccurred())
	Expect(conversionCRDs).NotTo(BeEmpty())

	first = startReplica("first")
})

// installWebhooks creates the webhook configurations of the manifests at path, calling the
// webhook Service, with the installer's CA.
func installWebhooks(ctx context.Context, path string) error {
	manifests, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	decoder := serializer.NewCodecFactory(scheme.New()).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	service := func(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: serviceName, Path: c.Service.Path, Port: ptr.To[int32](443)},
			CABundle: installerCA.CertPEM,
		}
	}
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return err
		}
		switch c := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for i := range c.Webhooks {
				c.Webhooks[i].ClientConfig = service(c.Webhooks[i].ClientConfig)
			}
			err = k8s.Create(ctx, c)
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for i := range c.Webhooks {
				c.Webhooks[i].ClientConfig = service(c.Webhooks[i].ClientConfig)
			}
			err = k8s.Create(ctx, c)
		default:
			err = fmt.Errorf("%s holds a %T", path, obj)
		}
		if err != nil {
			return err
		}
	}
}

// installConversionWebhooks gives each CRD a patch in dir (config/crd/patches) names the
// conversion webhook the patch gives it, on the webhook Service and trusting the installer's CA,
// as installWebhooks does the configurations; it returns their names.
func installConversionWebhooks(ctx context.Context, dir string) ([]string, error) {
	patches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, path := range patches {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		patch := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.Unmarshal(data, patch); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c := patch.Spec.Conversion
		if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil {
			continue
		}
		c.Webhook.ClientConfig.Service.Namespace, c.Webhook.ClientConfig.Service.Name = namespace, serviceName
		c.Webhook.ClientConfig.CABundle = installerCA.CertPEM
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: patch.Name}, crd); err != nil {
			return nil, err
		}
		crd.Spec.Conversion = c
		if err := k8s.Update(ctx, crd); err != nil {
			return nil, err
		}
		names = append(names, crd.Name)
	}
	return names, nil
}

// replica is one manager, a replica of the Deployment, in this process.
type replica struct {
	name         string
	address      string
	certDir      string
	probeAddress string
	// lagging holds back the mount, as a kubelet that has not synced the pod yet.
	lagging atomic.Bool
}

// startReplica starts a manager keeping its certificate in the Secret, serving on this host's
// address, until the suite ends; configure, when given, changes its options first.
func startReplica(name string, configure ...func(*operator.Options)) *replica {
	GinkgoHelper()
	port, err := freePort(hostIP)
	Expect(err).NotTo(HaveOccurred())
	probeAddress, err := freePort("127.0.0.1")
	Expect(err).NotTo(HaveOccurred())
	r := &replica{
		name:         name,
		address:      net.JoinHostPort(hostIP, strconv.Itoa(port)),
		certDir:      GinkgoT().TempDir(),
		probeAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(probeAddress)),
	}
	options := operator.Options{
		MetricsAddr:    "0",
		ProbeAddr:      r.probeAddress,
		WebhookHost:    hostIP,
		WebhookPort:    port,
		WebhookCertDir: r.certDir,
		WelcomeImage:   testenv.WelcomeImage,
		MemcachedImage: testenv.MemcachedImage,
		Certs: operator.CertOptions{
			Secret:                         namespace + "/" + secretName,
			DNSNames:                       []string{serviceHost},
			MutatingWebhookConfiguration:   mutatingConfiguration,
			ValidatingWebhookConfiguration: validatingConfiguration,
			ConversionCRDs:                 conversionCRDs,
		},
		SkipControllerNameValidation: true,
		MaxConcurrentReconciles:      operator.DefaultMaxConcurrentReconciles,
	}
	for _, c := range configure {
		c(&options)
	}
	mgr, err := operator.New(cfg, options)
	Expect(err).NotTo(HaveOccurred())
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
	})
	return r
}

// mount writes the Secret's keys into the replica's certificate directory whenever they change,
// unless it lags, until ctx ends, as the kubelet does for a Secret volume: each file is replaced
// whole.
func (r *replica) mount(ctx context.Context) {
	defer GinkgoRecover()
	written := map[string]string{}
	for ctx.Err() == nil {
		if s, err := secret(ctx); err == nil && !r.lagging.Load() {
			for key, value := range s.Data {
				if written[key] == string(value) {
					continue
				}
				tmp := filepath.Join(r.certDir, "."+key+".tmp")
				Expect(os.WriteFile(tmp, value, 0o600)).To(Succeed())
				Expect(os.Rename(tmp, filepath.Join(r.certDir, key))).To(Succeed())
				written[key] = string(value)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ready is the answer of the replica's webhook readiness check.
func (r *replica) ready(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.probeAddress+"/readyz/webhook", nil)
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

// addEndpoint lists the replica as a ready endpoint of the webhook Service, in a slice of its
// own (a slice's ports are those of all its endpoints, and the replicas listen on different
// ones), as the endpoints controller does once its pod is ready.
func (r *replica) addEndpoint(ctx context.Context) error {
	_, port, err := net.SplitHostPort(r.address)
	if err != nil {
		return err
	}
	portNumber, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	return k8s.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: serviceName + "-" + r.name,
			Labels: map[string]string{discoveryv1.LabelServiceName: serviceName},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(portNumber)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	})
}

// served is the leaf certificate the replica serves, unverified.
func (r *replica) served() (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", r.address, &tls.Config{InsecureSkipVerify: true, ServerName: serviceHost, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// verify verifies leaf for the Service's name against the CAs of bundle.
func verify(leaf *x509.Certificate, bundle []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return errors.New("the caBundle holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: serviceHost, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		// Its message, not the certificate it holds, which would fill a failure.
		return errors.New(err.Error())
	}
	return nil
}

// secret is the manager's certificate Secret as stored.
func secret(ctx context.Context) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: secretName}, s)
}

// caBundles are the caBundle of every webhook of both configurations, by configuration/webhook,
// and of every conversion webhook, by CRD.
func caBundles(ctx context.Context) (map[string][]byte, error) {
	bundles := map[string][]byte{}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: mutatingConfiguration}, m); err != nil {
		return nil, err
	}
	for _, w := range m.Webhooks {
		bundles[m.Name+"/"+w.Name] = w.ClientConfig.CABundle
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: validatingConfiguration}, v); err != nil {
		return nil, err
	}
	for _, w := range v.Webhooks {
		bundles[v.Name+"/"+w.Name] = w.ClientConfig.CABundle
	}
	for _, name := range conversionCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return nil, err
		}
		bundles[name] = crd.Spec.Conversion.Webhook.ClientConfig.CABundle
	}
	return bundles, nil
}

// load sends requests through the API server, over and over, and counts those answered right and
// those that failed.
type load struct {
	answered, failed atomic.Int64
	lastFailure      atomic.Value
	stop             context.CancelFunc
	done             chan struct{}
}

// startLoad calls request until the load finishes, waiting pause after each call.
func startLoad(ctx context.Context, pause time.Duration, request func(ctx context.Context, i int) error) *load {
	ctx, stop := context.WithCancel(ctx)
	l := &load{stop: stop, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(l.done)
		for i := 0; ctx.Err() == nil; i++ {
			switch err := request(ctx, i); {
			case ctx.Err() != nil:
			case err != nil:
				l.failed.Add(1)
				l.lastFailure.Store(err.Error())
			default:
				l.answered.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}()
	return l
}

// startAdmissionLoad sends a valid and an invalid dry-run create, over and over: an answer is
// right when the first is admitted and the second refused.
func startAdmissionLoad(ctx context.Context) *load {
	return startLoad(ctx, 0, func(ctx context.Context, i int) error {
		err := k8s.Create(ctx, welcome(fmt.Sprintf("load-%d", i), 8080), client.DryRunAll)
		if err != nil {
			return err
		}
		switch err := k8s.Create(ctx, welcome(fmt.Sprintf("load-%d", i), 0), client.DryRunAll); {
		case apierrors.IsInvalid(err):
			return nil
		case err == nil:
			return errors.New("an invalid Welcome was admitted")
		default:
			return err
		}
	})
}

// startConversionLoad writes a Welcome at v1alpha1, stored at v1 with its password in an
// annotation, and reads it at v1alpha1 every 50 ms: the API server reads each from etcd and has the
// manager's /convert convert it, through the webhook Service, trusting the CRD's caBundle. An
// answer is right when the password is back.
func startConversionLoad(ctx context.Context, name string) *load {
	GinkgoHelper()
	stored := welcome(name, 8080)
	stored.Spec.Password = "hunter2"
	Expect(k8s.Create(ctx, stored)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, stored))).To(Succeed()) })
	return startLoad(ctx, 50*time.Millisecond, func(ctx context.Context, _ int) error {
		read := &authv1alpha1.Welcome{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(stored), read); err != nil {
			return err
		}
		if read.Spec.Password != stored.Spec.Password {
			return fmt.Errorf("read at v1alpha1 with the password %q, not the one it was written with", read.Spec.Password)
		}
		return nil
	})
}

// finish stops the load and expects no request to have failed.
func (l *load) finish(what string) {
	GinkgoHelper()
	l.stop()
	<-l.done
	AddReportEntry(what+": requests answered", l.answered.Load())
	Expect(l.failed.Load()).To(BeZero(), "last failure: %v", l.lastFailure.Load())
}

func welcome(name string, port int32) *authv1alpha1.Welcome {
	return &authv1alpha1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       authv1alpha1.WelcomeSpec{Name: "Ada", Port: ptr.To(port)},
	}
}

var _ = Describe("The manager keeping its own certificate (--cert-secret)", Ordered, func() {
	// The mounts run from the second spec to the end of the last.
	mountCtx, stopMounting := context.WithCancel(context.Background())
	AfterAll(func() { stopMounting() })

	It("makes its CA and serving certificate in the Secret and injects the CA into every webhook, beside the CA they trusted, and is not ready while the certificate is not mounted", func(ctx SpecContext) {
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Data).To(HaveKey("tls.crt"))
			g.Expect(s.Data).To(HaveKey("tls.key"))
			cas := certificates(s.Data["ca.crt"])
			g.Expect(cas).NotTo(BeEmpty())
			g.Expect(cas[0].Subject.CommonName).To(Equal("webhook-operator-ca"), "the manager's CA comes first")
			g.Expect(describe(cas[1:])).To(Equal(describe([]*x509.Certificate{installerCA.Cert})),
				"the installer's CA stays until the manager serves its own certificate")
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveLen(10+len(conversionCRDs)), "the configurations' 10 webhooks and the conversion webhooks")
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
		}).WithContext(ctx).Should(Succeed())

		// Nothing has mounted the Secret: the webhook server has not started, and the manager
		// says so.
		Consistently(first.ready).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal(http.StatusInternalServerError))
	}, SpecTimeout(time.Minute))

	It("turns ready once the certificate is mounted, serving it for the webhook Service's name, is called by the API server, and then drops the installer's CA", func(ctx SpecContext) {
		go first.mount(mountCtx)

		Eventually(first.ready).WithContext(ctx).Should(Equal(http.StatusOK))
		s, err := secret(ctx)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := first.served()
		Expect(err).NotTo(HaveOccurred())
		Expect(verify(leaf, s.Data["ca.crt"])).To(Succeed())
		Expect(leaf.DNSNames).To(ContainElement(serviceHost))
		Expect(first.addEndpoint(ctx)).To(Succeed())

		// Through the API server: the mutating webhook defaults, the validating one refuses.
		Eventually(func(ctx context.Context) error {
			w := welcome("greeting", 8080)
			w.Spec.Port = nil
			if err := k8s.Create(ctx, w, client.DryRunAll); err != nil {
				return err
			}
			if w.Spec.Port == nil || *w.Spec.Port != authv1alpha1.DefaultPort {
				return fmt.Errorf("the port was not defaulted: %v", w.Spec.Port)
			}
			return nil
		}).WithContext(ctx).Should(Succeed(), "the API server calls the webhook on the Service's endpoint")
		err = k8s.Create(ctx, welcome("greeting", 70000), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.port"))

		// Through the API server, the conversion webhook: a Welcome written at v1alpha1 is
		// converted to v1, the version stored, by /convert on the Service's endpoint, which the API
		// server trusts by the CA the manager injected.
		stored := welcome("converted", 8080)
		stored.Spec.Password = "hunter2"
		Expect(k8s.Create(ctx, stored)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, stored))).To(Succeed()) })
		Eventually(func(g Gomega, ctx context.Context) {
			read := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stored), read)).To(Succeed())
			g.Expect(read.Annotations).To(HaveKeyWithValue(authv1.ConversionDataAnnotation, `{"spec":{"password":"hunter2"}}`))
		}).WithContext(ctx).Should(Succeed(), "the API server converts a Welcome through the manager's /convert")

		// Every ready endpoint serves the manager's certificate: the installer's CA goes.
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(describe(certificates(s.Data["ca.crt"]))).To(HaveLen(1))
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
		}).WithContext(ctx).Should(Succeed())
	}, SpecTimeout(time.Minute))

	It("renews a serving certificate that is no longer valid under the same CA, without failing an admission request or a read that converts", func(ctx SpecContext) {
		before, err := secret(ctx)
		Expect(err).NotTo(HaveOccurred())
		load := startAdmissionLoad(ctx)
		reads := startConversionLoad(ctx, "read-through-renewal")
		Eventually(load.answered.Load).WithContext(ctx).Should(BeNumerically(">=", 20))
		Eventually(reads.answered.Load).WithContext(ctx).Should(BeNumerically(">=", 20))

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
			leaf, err := first.served()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(verify(leaf, after.Data["ca.crt"])).To(Succeed())
			g.Expect(leaf.Raw).To(Equal(pemBlock(after.Data["tls.crt"])))
		}).WithContext(ctx).Should(Succeed())
		servedBefore, readBefore := load.answered.Load(), reads.answered.Load()
		Eventually(load.answered.Load).WithContext(ctx).Should(BeNumerically(">=", servedBefore+20))
		Eventually(reads.answered.Load).WithContext(ctx).Should(BeNumerically(">=", readBefore+20))
		load.finish("renewal: admission")
		reads.finish("renewal: reads converted")
		bundles, err := caBundles(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(HaveEach(Equal(after.Data["ca.crt"])))
	}, SpecTimeout(2*time.Minute))

	It("replaces the CA while a replica still serves a certificate of the old one, every caBundle verifying what every replica serves throughout, and drops the old CA only once every replica serves the new one, without failing an admission request or a read that converts", func(ctx SpecContext) {
		second := startReplica("second")
		go second.mount(mountCtx)
		Eventually(second.ready).WithContext(ctx).Should(Equal(http.StatusOK))
		Expect(second.addEndpoint(ctx)).To(Succeed())
		before, err := secret(ctx)
		Expect(err).NotTo(HaveOccurred())
		oldCAs := certificates(before.Data["ca.crt"])
		Expect(describe(oldCAs)).To(HaveLen(1))
		oldCA, oldLeaf := oldCAs[0], pemBlock(before.Data["tls.crt"])

		// Throughout, as the API server would on a new connection: every webhook's caBundle
		// verifies the certificate every replica serves.
		trust := watchTrust(ctx, first, second)
		load := startAdmissionLoad(ctx)
		reads := startConversionLoad(ctx, "read-through-rollover")
		Eventually(load.answered.Load).WithContext(ctx).Should(BeNumerically(">=", 20))
		Eventually(reads.answered.Load).WithContext(ctx).Should(BeNumerically(">=", 20))

		// The second replica's kubelet lags; the Secret loses the CA's key, so the manager
		// makes a new CA.
		second.lagging.Store(true)
		spoiled := before.DeepCopy()
		delete(spoiled.Data, "ca.key")
		Expect(k8s.Update(ctx, spoiled)).To(Succeed())
		start := time.Now()

		var newCA *x509.Certificate
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			cas := certificates(s.Data["ca.crt"])
			g.Expect(cas).NotTo(BeEmpty())
			g.Expect(cas[0].Equal(oldCA)).To(BeFalse(), "a new CA")
			newCA = cas[0]
			leaf, err := first.served()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leaf.CheckSignatureFrom(newCA)).To(Succeed(), "the first replica serves a certificate of the new CA")
		}).WithContext(ctx).Should(Succeed())

		// The second replica serves the old certificate for as long as its kubelet lags, past
		// the rollover's checks, and the old CA stays in every caBundle meanwhile.
		Consistently(func(g Gomega, ctx context.Context) {
			leaf, err := second.served()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leaf.Raw).To(Equal(oldLeaf), "the second replica serves the old certificate")
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			for webhook, bundle := range bundles {
				g.Expect(verify(leaf, bundle)).To(Succeed(), "the caBundle of %s verifies what the second replica serves", webhook)
			}
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(describe(certificates(s.Data["ca.crt"]))).To(Equal(describe([]*x509.Certificate{newCA, oldCA})), "ca.crt: the new CA, then the old")
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
			g.Expect(trust.violations()).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(8 * time.Second).Should(Succeed())

		// The kubelet catches up: once the second replica serves the new certificate, the old CA
		// leaves ca.crt and every caBundle.
		second.lagging.Store(false)
		Eventually(func(g Gomega) {
			leaf, err := second.served()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(leaf.CheckSignatureFrom(newCA)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secret(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(describe(certificates(s.Data["ca.crt"]))).To(Equal(describe([]*x509.Certificate{newCA})), "ca.crt: the new CA alone")
			bundles, err := caBundles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bundles).To(HaveEach(Equal(s.Data["ca.crt"])))
		}).WithContext(ctx).Should(Succeed())
		AddReportEntry("CA rollover: new CA to old CA dropped", time.Since(start).Round(time.Millisecond).String())

		servedBefore, readBefore := load.answered.Load(), reads.answered.Load()
		Eventually(load.answered.Load).WithContext(ctx).Should(BeNumerically(">=", servedBefore+20))
		Eventually(reads.answered.Load).WithContext(ctx).Should(BeNumerically(">=", readBefore+20))
		load.finish("CA rollover: admission")
		reads.finish("CA rollover: reads converted")
		Expect(trust.stop()).To(BeEmpty())
	}, SpecTimeout(3*time.Minute))
})

// trustWatch checks, every 100ms until stopped, that the caBundle of every webhook verifies the
// certificate each replica serves.
type trustWatch struct {
	mu     sync.Mutex
	found  []string
	cancel context.CancelFunc
	done   chan struct{}
}

func watchTrust(ctx context.Context, replicas ...*replica) *trustWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &trustWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for ctx.Err() == nil {
			if bundles, err := caBundles(ctx); err == nil {
				for _, r := range replicas {
					w.check(r, bundles)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *trustWatch) check(r *replica, bundles map[string][]byte) {
	leaf, err := r.served()
	for webhook, bundle := range bundles {
		if err == nil {
			err = verify(leaf, bundle)
		}
		if err != nil {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.found = append(w.found, fmt.Sprintf("%s: the caBundle of %s does not verify what replica %s serves: %v",
				time.Now().Format(time.StampMilli), webhook, r.name, err))
			return
		}
	}
}

// violations are what the watch found so far.
func (w *trustWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.found)
}

// stop stops the watch and returns what it found.
func (w *trustWatch) stop() []string {
	w.cancel()
	<-w.done
	return w.violations()
}

// certificates are the certificates of PEM data.
func certificates(data []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return certs
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
}

// describe names each certificate by its subject and fingerprint, for messages a reader can compare.
func describe(certs []*x509.Certificate) []string {
	names := make([]string, 0, len(certs))
	for _, c := range certs {
		names = append(names, fmt.Sprintf("%s (SHA-256 %X)", c.Subject, sha256.Sum256(c.Raw)))
	}
	return names
}

// pemBlock is the DER of the first PEM block of data.
func pemBlock(data []byte) []byte {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil
	}
	return block.Bytes
}

// hostAddress is an IPv4 address of this host other than loopback and link-local, which an
// EndpointSlice may list.
func hostAddress() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if ipNet, ok := a.(*net.IPNet); ok {
			if ip := ipNet.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.String(), nil
			}
		}
	}
	return "", errors.New("this host has no IPv4 address but loopback and link-local ones, which EndpointSlices refuse")
}

// freePort returns a port of host nothing listens on now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var _ = Describe("The manager whose certificate cert-manager keeps", func() {
	It("is not ready while a webhook configuration it names does not trust the certificate mounted, and turns ready once both do", func(ctx SpecContext) {
		// cert-manager's CA and the serving certificate its Secret volume mounts before the
		// manager starts.
		ca, err := certs.NewCA("cert-manager", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		pair, err := ca.NewServingPair([]string{serviceHost}, nil, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		certDir := GinkgoT().TempDir()
		Expect(pair.WriteDir(certDir, ca.CertPEM)).To(Succeed())

		// Configurations of this spec's own, whose one webhook matches no object, so that the
		// other replicas' caBundles stay as they are; they trust the installer's CA until
		// cert-manager's CA injector writes them.
		never := &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-operator.test/never": "true"}}
		clientConfig := admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: serviceName, Path: ptr.To("/never")},
			CABundle: installerCA.CertPEM,
		}
		rules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"auth.seedlabs.dev"}, APIVersions: []string{"*"}, Resources: []string{"welcomes"}},
		}}
		mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-mode-mutating"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "never.seedlabs.dev", ClientConfig: clientConfig, Rules: rules, ObjectSelector: never,
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			}},
		}
		validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-mode-validating"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "never.seedlabs.dev", ClientConfig: clientConfig, Rules: rules, ObjectSelector: never,
				SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			}},
		}
		for _, c := range []client.Object{mutating, validating} {
			Expect(k8s.Create(ctx, c)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, c)).To(Succeed()) })
		}

		r := startReplica("cert-manager-mode", func(o *operator.Options) {
			o.WebhookCertDir = certDir
			o.Certs = operator.CertOptions{
				MutatingWebhookConfiguration:   mutating.Name,
				ValidatingWebhookConfiguration: validating.Name,
			}
		})
		Consistently(r.ready).WithContext(ctx).WithTimeout(2*time.Second).Should(Equal(http.StatusInternalServerError),
			"neither configuration trusts cert-manager's CA")

		// The CA injector writes one configuration, then the other.
		mutating.Webhooks[0].ClientConfig.CABundle = ca.CertPEM
		Expect(k8s.Update(ctx, mutating)).To(Succeed())
		Consistently(r.ready).WithContext(ctx).WithTimeout(2*time.Second).Should(Equal(http.StatusInternalServerError),
			"the validating configuration does not trust cert-manager's CA yet")
		validating.Webhooks[0].ClientConfig.CABundle = append(slices.Clone(installerCA.CertPEM), ca.CertPEM...)
		Expect(k8s.Update(ctx, validating)).To(Succeed())
		Eventually(r.ready).WithContext(ctx).Should(Equal(http.StatusOK))
		served, err := r.served()
		Expect(err).NotTo(HaveOccurred())
		Expect(certificates(pair.CertPEM)).To(ContainElement(Satisfy(served.Equal)), "the webhook server serves the certificate mounted")
	}, SpecTimeout(time.Minute))
})
