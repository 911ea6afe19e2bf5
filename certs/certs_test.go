package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

const (
	testService   = "webhook-service"
	testNamespace = "system"
)

var (
	testDNSNames = append(ServiceDNSNames(testService, testNamespace), "localhost")
	testIPs      = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
)

func newTestCA(t testing.TB) *CA {
	t.Helper()
	ca, err := NewCA("webhook-operator test CA", 24*time.Hour)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func newTestPair(t testing.TB, ca *CA) *ServingPair {
	t.Helper()
	pair, err := ca.NewServingPair(testDNSNames, testIPs, time.Hour)
	if err != nil {
		t.Fatalf("NewServingPair: %v", err)
	}
	return pair
}

func parseCertificatePEM(t testing.TB, data []byte) *x509.Certificate {
	t.Helper()
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("want one CERTIFICATE PEM block, got %q", data)
	}
	if len(rest) != 0 {
		t.Fatalf("want nothing after the CERTIFICATE block, got %q", rest)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	return cert
}

func parsePrivateKeyPEM(t testing.TB, data []byte) *ecdsa.PrivateKey {
	t.Helper()
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("want one PRIVATE KEY PEM block, got a block of type %v", blockType(block))
	}
	if len(rest) != 0 {
		t.Fatalf("want nothing after the PRIVATE KEY block, got %d bytes", len(rest))
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatalf("parsing PKCS#8 key: %v", err)
	}
	ecKey, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("want *ecdsa.PrivateKey, got %T", key)
	}
	return ecKey
}

func blockType(block *pem.Block) string {
	if block == nil {
		return "<none>"
	}
	return block.Type
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool
}

// assertValidity checks NotBefore is an hour before the call and NotAfter is validity after it,
// allowing for the second precision of certificate times.
func assertValidity(t *testing.T, cert *x509.Certificate, before, after time.Time, validity time.Duration) {
	t.Helper()
	earliest := before.Add(-clockSkew).Truncate(time.Second)
	latest := after.Add(-clockSkew)
	if cert.NotBefore.Before(earliest) || cert.NotBefore.After(latest) {
		t.Errorf("NotBefore = %v, want between %v and %v", cert.NotBefore, earliest, latest)
	}
	earliest = before.Add(validity).Truncate(time.Second)
	latest = after.Add(validity)
	if cert.NotAfter.Before(earliest) || cert.NotAfter.After(latest) {
		t.Errorf("NotAfter = %v, want between %v and %v", cert.NotAfter, earliest, latest)
	}
}

func assertSerialNumber(t *testing.T, cert *x509.Certificate) {
	t.Helper()
	if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() > 128 {
		t.Errorf("SerialNumber = %v, want positive and at most 128 bits", cert.SerialNumber)
	}
}

func TestNewCA(t *testing.T) {
	const validity = 48 * time.Hour
	before := time.Now()
	ca, err := NewCA("webhook-operator CA", validity)
	after := time.Now()
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}

	cert := ca.Cert
	if got := cert.Subject.CommonName; got != "webhook-operator CA" {
		t.Errorf("Subject.CommonName = %q, want %q", got, "webhook-operator CA")
	}
	if got := cert.Issuer.CommonName; got != "webhook-operator CA" {
		t.Errorf("Issuer.CommonName = %q, want %q", got, "webhook-operator CA")
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		t.Errorf("BasicConstraintsValid, IsCA = %v, %v, want true, true", cert.BasicConstraintsValid, cert.IsCA)
	}
	if cert.MaxPathLen != 0 || !cert.MaxPathLenZero {
		t.Errorf("MaxPathLen, MaxPathLenZero = %d, %v, want 0, true", cert.MaxPathLen, cert.MaxPathLenZero)
	}
	if cert.KeyUsage != x509.KeyUsageCertSign {
		t.Errorf("KeyUsage = %v, want KeyUsageCertSign (%v)", cert.KeyUsage, x509.KeyUsageCertSign)
	}
	if len(cert.ExtKeyUsage) != 0 {
		t.Errorf("ExtKeyUsage = %v, want none", cert.ExtKeyUsage)
	}
	if len(cert.SubjectKeyId) == 0 {
		t.Error("SubjectKeyId is empty, want it filled in")
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
	assertSerialNumber(t, cert)
	assertValidity(t, cert, before, after, validity)

	key, ok := ca.Key.(*ecdsa.PrivateKey)
	if !ok {
		t.Fatalf("Key is %T, want *ecdsa.PrivateKey", ca.Key)
	}
	if key.Curve != elliptic.P256() {
		t.Errorf("Key curve = %s, want P-256", key.Curve.Params().Name)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Error("Key does not match the certificate's public key")
	}
	if fromPEM := parseCertificatePEM(t, ca.CertPEM); !fromPEM.Equal(cert) {
		t.Error("CertPEM does not hold Cert")
	}
}

func TestNewCAErrors(t *testing.T) {
	tests := []struct {
		name       string
		commonName string
		validity   time.Duration
		wantErr    string
	}{
		{
			name:       "empty common name",
			commonName: "",
			validity:   time.Hour,
			wantErr:    "certs: CA common name must not be empty",
		},
		{
			name:       "zero validity",
			commonName: "ca",
			validity:   0,
			wantErr:    "certs: CA validity must be positive, got 0s",
		},
		{
			name:       "negative validity",
			commonName: "ca",
			validity:   -time.Minute,
			wantErr:    "certs: CA validity must be positive, got -1m0s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := NewCA(tt.commonName, tt.validity)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewCA error = %v, want %q", err, tt.wantErr)
			}
			if ca != nil {
				t.Errorf("NewCA returned %v with an error, want nil", ca)
			}
		})
	}
}

func TestServingCertificateVerifies(t *testing.T) {
	ca := newTestCA(t)
	pair := newTestPair(t, ca)
	cert := parseCertificatePEM(t, pair.CertPEM)
	otherCA := newTestCA(t)

	tests := []struct {
		name  string
		host  string
		roots *x509.CertPool
		// wantErr is nil when the certificate must verify, else a pointer to the error type
		// verification must fail with.
		wantErr any
	}{
		{name: "service name", host: "webhook-service", roots: poolOf(ca.Cert)},
		{name: "service.namespace", host: "webhook-service.system", roots: poolOf(ca.Cert)},
		{name: "service.namespace.svc", host: "webhook-service.system.svc", roots: poolOf(ca.Cert)},
		{name: "cluster domain", host: "webhook-service.system.svc.cluster.local", roots: poolOf(ca.Cert)},
		{name: "localhost", host: "localhost", roots: poolOf(ca.Cert)},
		{name: "IPv4 loopback", host: "127.0.0.1", roots: poolOf(ca.Cert)},
		{name: "IPv6 loopback", host: "::1", roots: poolOf(ca.Cert)},
		{
			name: "other service", host: "other.system.svc", roots: poolOf(ca.Cert),
			wantErr: new(x509.HostnameError),
		},
		{
			name: "same service in another namespace", host: "webhook-service.other.svc", roots: poolOf(ca.Cert),
			wantErr: new(x509.HostnameError),
		},
		{
			name: "IP not given", host: "10.0.0.1", roots: poolOf(ca.Cert),
			wantErr: new(x509.HostnameError),
		},
		{
			name: "CA not trusted", host: "webhook-service.system.svc", roots: poolOf(otherCA.Cert),
			wantErr: new(x509.UnknownAuthorityError),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chains, err := cert.Verify(x509.VerifyOptions{
				DNSName: tt.host,
				Roots:   tt.roots,
			})
			if tt.wantErr != nil {
				if !errors.As(err, tt.wantErr) {
					t.Fatalf("Verify(%q) error = %v, want %T", tt.host, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify(%q): %v", tt.host, err)
			}
			if len(chains) != 1 || len(chains[0]) != 2 || !chains[0][1].Equal(ca.Cert) {
				t.Errorf("Verify(%q) chains = %v, want one chain of the serving certificate and the CA", tt.host, chains)
			}
			if err := cert.VerifyHostname(tt.host); err != nil {
				t.Errorf("VerifyHostname(%q): %v", tt.host, err)
			}
		})
	}
}

func TestServingCertificateFields(t *testing.T) {
	ca := newTestCA(t)
	const validity = 2 * time.Hour
	before := time.Now()
	pair, err := ca.NewServingPair(testDNSNames, testIPs, validity)
	after := time.Now()
	if err != nil {
		t.Fatalf("NewServingPair: %v", err)
	}
	cert := parseCertificatePEM(t, pair.CertPEM)

	if got, want := cert.Subject.CommonName, testDNSNames[0]; got != want {
		t.Errorf("Subject.CommonName = %q, want %q", got, want)
	}
	if !bytes.Equal(cert.RawIssuer, ca.Cert.RawSubject) {
		t.Errorf("Issuer = %v, want the CA's subject %v", cert.Issuer, ca.Cert.Subject)
	}
	if !slices.Equal(cert.DNSNames, testDNSNames) {
		t.Errorf("DNSNames = %q, want %q", cert.DNSNames, testDNSNames)
	}
	if !slices.EqualFunc(cert.IPAddresses, testIPs, net.IP.Equal) {
		t.Errorf("IPAddresses = %v, want %v", cert.IPAddresses, testIPs)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("ExtKeyUsage = %v, want [ExtKeyUsageServerAuth]", cert.ExtKeyUsage)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("KeyUsage = %v, want KeyUsageDigitalSignature (%v)", cert.KeyUsage, x509.KeyUsageDigitalSignature)
	}
	if !cert.BasicConstraintsValid || cert.IsCA {
		t.Errorf("BasicConstraintsValid, IsCA = %v, %v, want true, false", cert.BasicConstraintsValid, cert.IsCA)
	}
	if !bytes.Equal(cert.AuthorityKeyId, ca.Cert.SubjectKeyId) {
		t.Errorf("AuthorityKeyId = %x, want the CA's SubjectKeyId %x", cert.AuthorityKeyId, ca.Cert.SubjectKeyId)
	}
	if cert.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Errorf("SerialNumber = %v, the same as the CA's", cert.SerialNumber)
	}
	assertSerialNumber(t, cert)
	assertValidity(t, cert, before, after, validity)

	key := parsePrivateKeyPEM(t, pair.KeyPEM)
	if key.Curve != elliptic.P256() {
		t.Errorf("key curve = %s, want P-256", key.Curve.Params().Name)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Error("KeyPEM does not match the certificate's public key")
	}
	if _, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM); err != nil {
		t.Errorf("tls.X509KeyPair: %v", err)
	}
}

func TestNewServingPairCommonName(t *testing.T) {
	ca := newTestCA(t)
	tests := []struct {
		name           string
		dnsNames       []string
		ips            []net.IP
		wantCommonName string
	}{
		{
			name:           "first DNS name",
			dnsNames:       []string{"webhook-service.system.svc", "localhost"},
			wantCommonName: "webhook-service.system.svc",
		},
		{
			name:           "DNS name before IP",
			dnsNames:       []string{"localhost"},
			ips:            []net.IP{net.ParseIP("127.0.0.1")},
			wantCommonName: "localhost",
		},
		{
			name:           "first IP without DNS names",
			ips:            []net.IP{net.ParseIP("::1"), net.ParseIP("127.0.0.1")},
			wantCommonName: "::1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := ca.NewServingPair(tt.dnsNames, tt.ips, time.Hour)
			if err != nil {
				t.Fatalf("NewServingPair: %v", err)
			}
			if got := parseCertificatePEM(t, pair.CertPEM).Subject.CommonName; got != tt.wantCommonName {
				t.Errorf("Subject.CommonName = %q, want %q", got, tt.wantCommonName)
			}
		})
	}
}

func TestNewServingPairErrors(t *testing.T) {
	ca := newTestCA(t)
	tests := []struct {
		name     string
		dnsNames []string
		ips      []net.IP
		validity time.Duration
		wantErr  string
	}{
		{
			name:     "nil hosts",
			validity: time.Hour,
			wantErr:  "certs: serving certificate needs at least one DNS name or IP address",
		},
		{
			name:     "empty hosts",
			dnsNames: []string{},
			ips:      []net.IP{},
			validity: time.Hour,
			wantErr:  "certs: serving certificate needs at least one DNS name or IP address",
		},
		{
			name:     "empty DNS name",
			dnsNames: []string{"localhost", ""},
			validity: time.Hour,
			wantErr:  "certs: DNS name 1 is empty",
		},
		{
			name:     "nil IP",
			ips:      []net.IP{nil},
			validity: time.Hour,
			wantErr:  "certs: IP address 0 is nil",
		},
		{
			name:     "zero validity",
			dnsNames: []string{"localhost"},
			validity: 0,
			wantErr:  "certs: serving certificate validity must be positive, got 0s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := ca.NewServingPair(tt.dnsNames, tt.ips, tt.validity)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewServingPair error = %v, want %q", err, tt.wantErr)
			}
			if pair != nil {
				t.Error("NewServingPair returned a pair with an error, want nil")
			}
		})
	}
}

// TestClientCertificateFields holds a client pair to what kube-apiserver presents to kubelet:
// the subject asked for, client auth only, signed by the CA, valid no longer than the CA.
func TestClientCertificateFields(t *testing.T) {
	ca, err := NewCA("short-lived CA", time.Hour)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	subject := pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}
	pair, err := ca.NewClientPair(subject, 24*time.Hour)
	if err != nil {
		t.Fatalf("NewClientPair: %v", err)
	}
	cert := parseCertificatePEM(t, pair.CertPEM)
	if got := cert.Subject; got.CommonName != subject.CommonName || !slices.Equal(got.Organization, subject.Organization) {
		t.Errorf("Subject = %v, want %v", got, subject)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v, want [ExtKeyUsageClientAuth]", cert.ExtKeyUsage)
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if !cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("NotAfter = %v, want the CA's NotAfter %v", cert.NotAfter, ca.Cert.NotAfter)
	}
	assertSerialNumber(t, cert)
	if !parsePrivateKeyPEM(t, pair.KeyPEM).PublicKey.Equal(cert.PublicKey) {
		t.Error("KeyPEM does not match the certificate's public key")
	}
	if _, err := ca.NewClientPair(pkix.Name{}, time.Hour); err == nil || err.Error() != "certs: client certificate needs a common name" {
		t.Errorf("NewClientPair without a common name: %v, want the error that says so", err)
	}
}

func TestNewServingPairNeverOutlivesCA(t *testing.T) {
	ca, err := NewCA("short-lived CA", time.Hour)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	pair, err := ca.NewServingPair([]string{"localhost"}, nil, 24*time.Hour)
	if err != nil {
		t.Fatalf("NewServingPair: %v", err)
	}
	if got := parseCertificatePEM(t, pair.CertPEM).NotAfter; !got.Equal(ca.Cert.NotAfter) {
		t.Errorf("NotAfter = %v, want the CA's NotAfter %v", got, ca.Cert.NotAfter)
	}
}

func TestServiceDNSNames(t *testing.T) {
	tests := []struct {
		service   string
		namespace string
		want      []string
	}{
		{
			service:   "webhook-service",
			namespace: "system",
			want: []string{
				"webhook-service",
				"webhook-service.system",
				"webhook-service.system.svc",
				"webhook-service.system.svc.cluster.local",
			},
		},
		{
			service:   "webhook-operator-webhook-service",
			namespace: "webhook-operator-system",
			want: []string{
				"webhook-operator-webhook-service",
				"webhook-operator-webhook-service.webhook-operator-system",
				"webhook-operator-webhook-service.webhook-operator-system.svc",
				"webhook-operator-webhook-service.webhook-operator-system.svc.cluster.local",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.service+"."+tt.namespace, func(t *testing.T) {
			if got := ServiceDNSNames(tt.service, tt.namespace); !slices.Equal(got, tt.want) {
				t.Errorf("ServiceDNSNames(%q, %q) = %q, want %q", tt.service, tt.namespace, got, tt.want)
			}
		})
	}
}

func TestWriteDir(t *testing.T) {
	ca := newTestCA(t)
	tests := []struct {
		name string
		// prepare returns the directory to write into, possibly after putting stale files there.
		prepare func(t *testing.T) string
	}{
		{
			name: "missing directory",
			prepare: func(t *testing.T) string {
				return filepath.Join(t.TempDir(), "serving", "certs")
			},
		},
		{
			name: "stale files with loose modes",
			prepare: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "certs")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{certFileName, keyFileName, caFileName} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte("stale"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return dir
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.prepare(t)
			pair := newTestPair(t, ca)
			if err := pair.WriteDir(dir, ca.CertPEM); err != nil {
				t.Fatalf("WriteDir: %v", err)
			}

			info, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != 0o700 {
				t.Errorf("directory mode = %v, want %v", got, os.FileMode(0o700))
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, entry := range entries {
				names = append(names, entry.Name())
			}
			if want := []string{caFileName, certFileName, keyFileName}; !slices.Equal(names, want) {
				t.Errorf("directory holds %q, want exactly %q", names, want)
			}

			files := []struct {
				name     string
				want     []byte
				wantMode os.FileMode
			}{
				{name: certFileName, want: pair.CertPEM, wantMode: 0o644},
				{name: keyFileName, want: pair.KeyPEM, wantMode: 0o600},
				{name: caFileName, want: ca.CertPEM, wantMode: 0o644},
			}
			for _, f := range files {
				path := filepath.Join(dir, f.name)
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := info.Mode(); got != f.wantMode {
					t.Errorf("%s mode = %v, want %v", f.name, got, f.wantMode)
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(data, f.want) {
					t.Errorf("%s does not hold what was written", f.name)
				}
			}

			if caCert := parseCertificatePEM(t, mustReadFile(t, filepath.Join(dir, caFileName))); !caCert.Equal(ca.Cert) {
				t.Errorf("%s is not the CA certificate", caFileName)
			}
			servingCert := parseCertificatePEM(t, mustReadFile(t, filepath.Join(dir, certFileName)))
			if err := servingCert.CheckSignatureFrom(ca.Cert); err != nil {
				t.Errorf("%s is not signed by the CA: %v", certFileName, err)
			}
			parsePrivateKeyPEM(t, mustReadFile(t, filepath.Join(dir, keyFileName)))
			if _, err := tls.LoadX509KeyPair(filepath.Join(dir, certFileName), filepath.Join(dir, keyFileName)); err != nil {
				t.Errorf("tls.LoadX509KeyPair: %v", err)
			}
		})
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestServeWithWrittenFiles serves HTTPS from the files WriteDir wrote, as the webhook server does
// from its cert dir, and calls it as the kube-apiserver does: trusting only ca.crt and verifying
// the Service name.
func TestServeWithWrittenFiles(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	if err := newTestPair(t, ca).WriteDir(dir, ca.CertPEM); err != nil {
		t.Fatalf("WriteDir: %v", err)
	}
	serving, err := tls.LoadX509KeyPair(filepath.Join(dir, certFileName), filepath.Join(dir, keyFileName))
	if err != nil {
		t.Fatalf("tls.LoadX509KeyPair: %v", err)
	}
	trusted := x509.NewCertPool()
	if !trusted.AppendCertsFromPEM(mustReadFile(t, filepath.Join(dir, caFileName))) {
		t.Fatalf("%s holds no certificate", caFileName)
	}
	untrusted := poolOf(newTestCA(t).Cert)

	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "admitted")
	}))
	// Refused handshakes are the point of some cases; keep their server-side log out of the output.
	server.Config.ErrorLog = log.New(io.Discard, "", 0)
	server.TLS = &tls.Config{Certificates: []tls.Certificate{serving}}
	server.StartTLS()
	t.Cleanup(server.Close)

	tests := []struct {
		name       string
		serverName string
		roots      *x509.CertPool
		// wantErr is nil when the request must succeed, else a pointer to the error type the
		// request must fail with.
		wantErr any
	}{
		{name: "service DNS name", serverName: "webhook-service.system.svc", roots: trusted},
		{name: "cluster domain", serverName: "webhook-service.system.svc.cluster.local", roots: trusted},
		{name: "IP from the URL", serverName: "", roots: trusted},
		{
			name: "name not in the certificate", serverName: "other-service.system.svc", roots: trusted,
			wantErr: new(x509.HostnameError),
		},
		{
			name: "CA not trusted", serverName: "webhook-service.system.svc", roots: untrusted,
			wantErr: new(x509.UnknownAuthorityError),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transport := &http.Transport{
				TLSClientConfig:   &tls.Config{RootCAs: tt.roots, ServerName: tt.serverName},
				DisableKeepAlives: true,
			}
			t.Cleanup(transport.CloseIdleConnections)
			client := &http.Client{Transport: transport}

			resp, err := client.Get(server.URL)
			if tt.wantErr != nil {
				if err == nil {
					_ = resp.Body.Close()
				}
				var verifyErr *tls.CertificateVerificationError
				if !errors.As(err, &verifyErr) || !errors.As(err, tt.wantErr) {
					t.Fatalf("GET error = %v, want a certificate verification error of type %T", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading body: %v", err)
			}
			if resp.StatusCode != http.StatusOK || string(body) != "admitted" {
				t.Errorf("GET = %d %q, want 200 %q", resp.StatusCode, body, "admitted")
			}
		})
	}
}

// BenchmarkTLSHandshake measures a full TLS handshake over loopback against a serving certificate
// with an ECDSA P-256 key, as this package issues, and one with an RSA-2048 key. Both are signed
// by the same CA, so only the serving key differs. Sessions are never resumed, as the
// kube-apiserver does not resume them when calling webhooks.
func BenchmarkTLSHandshake(b *testing.B) {
	ca := newTestCA(b)
	roots := poolOf(ca.Cert)
	const serverName = "webhook-service.system.svc"

	ecdsaPair, err := ca.NewServingPair([]string{serverName}, nil, time.Hour)
	if err != nil {
		b.Fatalf("NewServingPair: %v", err)
	}
	ecdsaCert, err := tls.X509KeyPair(ecdsaPair.CertPEM, ecdsaPair.KeyPEM)
	if err != nil {
		b.Fatalf("tls.X509KeyPair: %v", err)
	}
	rsaCert := newRSAServingCertificate(b, ca, serverName)

	b.Run("ecdsa-p256", func(b *testing.B) {
		benchmarkHandshake(b, ecdsaCert, roots, serverName)
	})
	b.Run("rsa-2048", func(b *testing.B) {
		benchmarkHandshake(b, rsaCert, roots, serverName)
	})
}

func benchmarkHandshake(b *testing.B, serving tls.Certificate, roots *x509.CertPool, serverName string) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listening: %v", err)
	}
	serverConfig := &tls.Config{
		Certificates:           []tls.Certificate{serving},
		SessionTicketsDisabled: true,
	}
	var handlers sync.WaitGroup
	handlers.Go(func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			handlers.Go(func() {
				tlsConn := tls.Server(conn, serverConfig)
				_ = tlsConn.Handshake()
				_ = tlsConn.Close()
			})
		}
	})
	defer func() {
		_ = listener.Close()
		handlers.Wait()
	}()

	// No ClientSessionCache: every handshake is a full one.
	clientConfig := &tls.Config{RootCAs: roots, ServerName: serverName}
	address := listener.Addr().String()
	for b.Loop() {
		// tls.Dial completes the handshake, verifying the chain and the server name, before it returns.
		conn, err := tls.Dial("tcp", address, clientConfig)
		if err != nil {
			b.Fatalf("handshake: %v", err)
		}
		if conn.ConnectionState().DidResume {
			b.Fatal("session was resumed, want a full handshake")
		}
		_ = conn.Close()
	}
}

// newRSAServingCertificate issues an RSA-2048 serving certificate from ca, the same as
// NewServingPair but for the key; it exists only to compare handshake costs.
func newRSAServingCertificate(b *testing.B, ca *CA, dnsName string) tls.Certificate {
	b.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatalf("generating RSA key: %v", err)
	}
	serial, err := randomSerialNumber()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dnsName},
		DNSNames:              []string{dnsName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		b.Fatalf("creating RSA serving certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
