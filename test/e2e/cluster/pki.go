//go:build linux

package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/seedlabs/webhook-operator/certs"
)

// pki is the cluster's certificate authority, kube-apiserver's serving pair and kubelet client
// pair, the service account signing key, and the CA of the client certificate kube-apiserver
// presents to admission webhooks with the AdmissionConfiguration that gives it, written under a
// directory.
type pki struct {
	caCert, servingCert, servingKey      string
	kubeletClientCert, kubeletClientKey  string
	serviceAccountKey, serviceAccountPub string
	caPEM                                []byte
	// webhookClientCA signs the client certificate of admissionConfiguration's kubeconfig.
	webhookClientCA        *certs.CA
	admissionConfiguration string
}

// kubernetesServiceIP is the first address of ServiceCIDR, which the kubernetes Service takes.
const kubernetesServiceIP = "10.96.0.1"

// pkiValidity outlives any run of the suite.
const pkiValidity = 24 * time.Hour

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := certs.NewCA("e2e-cluster-ca", pkiValidity)
	if err != nil {
		return nil, err
	}
	serving, err := ca.NewServingPair(
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		[]net.IP{net.ParseIP(APIServerIP), net.ParseIP(kubernetesServiceIP), net.IPv4(127, 0, 0, 1)},
		pkiValidity)
	if err != nil {
		return nil, err
	}
	// kube-apiserver calls kubelet (logs, exec, port-forward) as a member of system:masters,
	// which kubelet's webhook authorization lets through.
	kubeletClient, err := ca.NewClientPair(pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, pkiValidity)
	if err != nil {
		return nil, err
	}
	// kube-apiserver presents a certificate of a CA of its own to every webhook, which a webhook
	// server given that CA verifies.
	webhookClientCA, err := certs.NewCA("e2e-webhook-client-ca", pkiValidity)
	if err != nil {
		return nil, err
	}
	webhookClient, err := webhookClientCA.NewClientPair(pkix.Name{CommonName: "kube-apiserver-webhook-client"}, pkiValidity)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the service account key: %w", err)
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}

	p := &pki{
		caCert:                 filepath.Join(dir, "ca.crt"),
		servingCert:            filepath.Join(dir, "apiserver.crt"),
		servingKey:             filepath.Join(dir, "apiserver.key"),
		kubeletClientCert:      filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey:       filepath.Join(dir, "apiserver-kubelet-client.key"),
		serviceAccountKey:      filepath.Join(dir, "sa.key"),
		serviceAccountPub:      filepath.Join(dir, "sa.pub"),
		caPEM:                  ca.CertPEM,
		webhookClientCA:        webhookClientCA,
		admissionConfiguration: filepath.Join(dir, "admission-configuration.yaml"),
	}
	webhookClientCert, webhookClientKey := filepath.Join(dir, "webhook-client.crt"), filepath.Join(dir, "webhook-client.key")
	kubeconfig := filepath.Join(dir, "webhook-client.kubeconfig")
	admissionConfiguration, webhookKubeconfig := certs.WebhookClientConfig(kubeconfig, webhookClientCert, webhookClientKey)
	files := map[string][]byte{
		p.caCert:                 ca.CertPEM,
		p.servingCert:            serving.CertPEM,
		p.servingKey:             serving.KeyPEM,
		p.kubeletClientCert:      kubeletClient.CertPEM,
		p.kubeletClientKey:       kubeletClient.KeyPEM,
		p.serviceAccountKey:      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER}),
		p.serviceAccountPub:      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		webhookClientCert:        webhookClient.CertPEM,
		webhookClientKey:         webhookClient.KeyPEM,
		kubeconfig:               webhookKubeconfig,
		p.admissionConfiguration: admissionConfiguration,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}
