package operator

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seedlabs/webhook-operator/certs"
)

// TestCertificateExpiry: the gauge reports the NotAfter of the serving certificate, not its CA's
// and not a chain's, follows the file when it is renewed, and reports nothing while there is no
// certificate to read.
func TestCertificateExpiry(t *testing.T) {
	dir := t.TempDir()
	certFile := filepath.Join(dir, webhookCertName)
	// The CA outlives the serving certificate, so reading the wrong one shows.
	ca, err := certs.NewCA("test-ca", 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(validity time.Duration) *certs.ServingPair {
		t.Helper()
		pair, err := ca.NewServingPair([]string{"webhook-service.system.svc"}, nil, validity)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	notAfter := func(certPEM []byte) float64 {
		t.Helper()
		block, _ := pem.Decode(certPEM)
		if block == nil {
			t.Fatal("the serving pair holds no PEM block")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return float64(cert.NotAfter.Unix())
	}
	write := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(certFile, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first, renewed := issue(24*time.Hour), issue(48*time.Hour)
	if err := first.WriteDir(dir, ca.CertPEM); err != nil {
		t.Fatal(err)
	}
	day := float64(time.Now().Add(24 * time.Hour).Unix())
	if got := notAfter(first.CertPEM); got < day-60 || got > day+60 {
		t.Fatalf("the serving certificate's NotAfter is %v, want about a day from now (%v)", got, day)
	}

	gauge := newCertificateExpiry("test_certificate_expiry_timestamp_seconds", "test")
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(gauge)

	steps := []struct {
		name  string
		setup func()
		want  []float64
	}{
		{name: "no file watched yet", setup: func() {}},
		{name: "the serving certificate WriteDir wrote", setup: func() { gauge.watch(certFile) }, want: []float64{notAfter(first.CertPEM)}},
		{name: "renewed", setup: func() { write(renewed.CertPEM) }, want: []float64{notAfter(renewed.CertPEM)}},
		{name: "followed by its chain", setup: func() { write(append(append([]byte{}, first.CertPEM...), ca.CertPEM...)) },
			want: []float64{notAfter(first.CertPEM)}},
		{name: "after a key", setup: func() { write(append(append([]byte{}, first.KeyPEM...), first.CertPEM...)) },
			want: []float64{notAfter(first.CertPEM)}},
		{name: "not PEM", setup: func() { write([]byte("not a certificate")) }},
		{name: "a CERTIFICATE block that does not parse", setup: func() {
			write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("garbage")}))
		}},
		{name: "only a key", setup: func() { write(first.KeyPEM) }},
		{name: "missing", setup: func() {
			if err := os.Remove(certFile); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, step := range steps {
		step.setup()
		families, err := registry.Gather()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var got []float64
		for _, f := range families {
			for _, m := range f.GetMetric() {
				got = append(got, m.GetGauge().GetValue())
			}
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("%s: the gauge reports %v, want %v", step.name, got, step.want)
		}
	}
}
