// Package certs issues a self-signed CA and a serving pair signed by it, in memory or into a
// directory: the webhook serving certificate of `make run-local`, and the certificates of make
// bench's and the end-to-end suite's clusters. A deployed manager without cert-manager keeps its
// own with open-policy-agent/cert-controller instead (internal/operator/certs.go).
//
// Keys are ECDSA P-256 and are only ever held in memory or written to the directory the caller
// names; this package never logs them.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names WriteDir uses: the keys of a kubernetes.io/tls Secret, which are also what
// controller-runtime's webhook server reads from its cert dir by default.
const (
	certFileName = "tls.crt"
	keyFileName  = "tls.key"
	caFileName   = "ca.crt"
)

// clockSkew is how far NotBefore is set in the past so that a peer whose clock is slightly
// behind ours still accepts a certificate issued a moment ago.
const clockSkew = time.Hour

// CA is a self-signed certificate authority.
type CA struct {
	// Cert is the parsed CA certificate.
	Cert *x509.Certificate
	// Key signs the certificates the CA issues.
	Key crypto.Signer
	// CertPEM is Cert in PEM, for a trust bundle or a webhook caBundle.
	CertPEM []byte
}

// NewCA creates a self-signed CA (ECDSA P-256) with the given common name, valid from an hour ago
// (clock skew) until validity from now.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	if commonName == "" {
		return nil, errors.New("certs: CA common name must not be empty")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: CA validity must be positive, got %s", validity)
	}
	der, key, err := sign("CA", &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs serving certificates only, never another CA.
		MaxPathLenZero: true,
	}, validity, nil)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parsing CA certificate: %w", err)
	}
	return &CA{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// ServingPair is a certificate and its key in PEM: a serving certificate, or a client one
// (NewClientPair).
type ServingPair struct {
	// CertPEM is the serving certificate.
	CertPEM []byte
	// KeyPEM is the private key, PKCS#8 ("PRIVATE KEY").
	KeyPEM []byte
}

// NewServingPair issues a serving certificate (ECDSA P-256, server auth) signed by the CA for the
// given DNS names and IP addresses, with the first DNS name (or, without one, the first IP) as
// common name; it fails when there are no hosts, and never outlives the CA.
func (ca *CA) NewServingPair(dnsNames []string, ips []net.IP, validity time.Duration) (*ServingPair, error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return nil, errors.New("certs: serving certificate needs at least one DNS name or IP address")
	}
	for i, name := range dnsNames {
		if name == "" {
			return nil, fmt.Errorf("certs: DNS name %d is empty", i)
		}
	}
	for i, ip := range ips {
		if ip == nil {
			return nil, fmt.Errorf("certs: IP address %d is nil", i)
		}
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: serving certificate validity must be positive, got %s", validity)
	}
	var commonName string
	if len(dnsNames) > 0 {
		commonName = dnsNames[0]
	} else {
		commonName = ips[0].String()
	}
	return ca.issue("serving", &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}, validity)
}

// NewClientPair issues a client certificate (ECDSA P-256, client auth) for subject, signed by the
// CA, such as kube-apiserver presents to kubelet or to a webhook; it never outlives the CA.
func (ca *CA) NewClientPair(subject pkix.Name, validity time.Duration) (*ServingPair, error) {
	if subject.CommonName == "" {
		return nil, errors.New("certs: client certificate needs a common name")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certs: client certificate validity must be positive, got %s", validity)
	}
	return ca.issue("client", &x509.Certificate{
		Subject:               subject,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}, validity)
}

// issue signs with the CA the leaf certificate template describes (its subject, names and
// usages), for a new key, and returns both in PEM. what names the certificate in errors.
func (ca *CA) issue(what string, template *x509.Certificate, validity time.Duration) (*ServingPair, error) {
	der, key, err := sign(what, template, validity, ca)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: marshalling %s key: %w", what, err)
	}
	return &ServingPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// sign creates the certificate template describes for a new key (ECDSA P-256), with a random
// serial number, valid from clockSkew ago until validity from now: signed by issuer, and never
// valid past issuer's own NotAfter (a certificate that outlives its issuer stops verifying when
// the issuer expires anyway), or self-signed when issuer is nil. what names it in errors.
func sign(what string, template *x509.Certificate, validity time.Duration, issuer *CA) (der []byte, key *ecdsa.PrivateKey, err error) {
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generating %s key: %w", what, err)
	}
	if template.SerialNumber, err = randomSerialNumber(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template.NotBefore, template.NotAfter = now.Add(-clockSkew), now.Add(validity)
	parent, signer := template, crypto.Signer(key)
	if issuer != nil {
		parent, signer = issuer.Cert, issuer.Key
		if template.NotAfter.After(parent.NotAfter) {
			template.NotAfter = parent.NotAfter
		}
	}
	if der, err = x509.CreateCertificate(rand.Reader, template, parent, key.Public(), signer); err != nil {
		return nil, nil, fmt.Errorf("certs: creating %s certificate: %w", what, err)
	}
	return der, key, nil
}

// WriteDir writes tls.crt, tls.key (mode 0600) and ca.crt into dir, creating it with mode 0700 if
// missing, each file replaced atomically so a watcher never reads half a file.
//
// This is the layout of a kubernetes.io/tls Secret mounted by kubelet and what controller-runtime's
// webhook server reads from its cert dir. Each file is atomic on its own, not the set: ca.crt is
// written first so the trust bundle is in place before the new certificate is served, and a
// watcher that reloads between tls.key and tls.crt sees a mismatched pair once, fails that reload
// (controller-runtime's certwatcher keeps serving the previous pair) and succeeds on the next.
func (p *ServingPair) WriteDir(dir string, caPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: creating %s: %w", dir, err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{name: caFileName, data: caPEM, mode: 0o644},
		{name: keyFileName, data: p.KeyPEM, mode: 0o600},
		{name: certFileName, data: p.CertPEM, mode: 0o644},
	}
	for _, f := range files {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// ServiceDNSNames returns the names the kube-apiserver may verify when it calls a webhook through
// a Service: <svc>, <svc>.<ns>, <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local.
func ServiceDNSNames(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// writeFileAtomic writes data to a temporary file in the directory of path and renames it over
// path. The temporary file is created with mode 0600, so a key is never readable by others, and
// gets its final mode before the rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("certs: creating temporary file for %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("certs: setting mode of %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("certs: syncing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("certs: closing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("certs: replacing %s: %w", path, err)
	}
	return nil
}

// randomSerialNumber returns a random serial number in [1, 2^128), so that two certificates from
// the same CA never share one; zero is not a valid serial number (RFC 5280, section 4.1.2.2).
func randomSerialNumber() (*big.Int, error) {
	one := big.NewInt(1)
	limit := new(big.Int).Lsh(one, 128)
	serial, err := rand.Int(rand.Reader, limit.Sub(limit, one))
	if err != nil {
		return nil, fmt.Errorf("certs: generating serial number: %w", err)
	}
	return serial.Add(serial, one), nil
}

// WebhookClientConfig is what kube-apiserver reads to present a client certificate to every
// admission webhook, as docs/operations.md says to give it one: the AdmissionConfiguration for
// --admission-control-config-file, naming kubeconfigPath for both webhook plugins, and that
// kubeconfig, whose user "*" (every webhook) holds certFile and keyFile.
func WebhookClientConfig(kubeconfigPath, certFile, keyFile string) (admissionConfiguration, kubeconfig []byte) {
	admissionConfiguration = fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, kubeconfigPath)
	kubeconfig = fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, certFile, keyFile)
	return admissionConfiguration, kubeconfig
}
