package operator

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// webhookCertName is the file in the webhook certificate directory that holds the serving
// certificate: controller-runtime's default, the key of a kubernetes.io/tls Secret.
const webhookCertName = "tls.crt"

// servingCertificateExpiry is the expiry of the webhook serving certificate, on the manager's
// metrics endpoint; New points it at the manager's certificate file. Only tests run more than one
// manager in a process, and then it reports the last one's.
var servingCertificateExpiry = newCertificateExpiry(
	"webhook_operator_serving_certificate_expiry_timestamp_seconds",
	"When the certificate the webhook server serves expires (its NotAfter), in seconds since the Unix epoch.")

func init() {
	metrics.Registry.MustRegister(servingCertificateExpiry)
}

// certificateExpiry is a gauge of the NotAfter of the first certificate in a PEM file, read at
// every scrape, so it follows the file as cert-manager or the cert rotator renews it and needs no
// goroutine. While the file is missing or holds no certificate it reports nothing rather than a
// wrong value.
type certificateExpiry struct {
	desc *prometheus.Desc
	path atomic.Pointer[string]
}

func newCertificateExpiry(name, help string) *certificateExpiry {
	return &certificateExpiry{desc: prometheus.NewDesc(name, help, nil, nil)}
}

// watch makes the gauge report the certificate in the PEM file at path.
func (c *certificateExpiry) watch(path string) {
	c.path.Store(&path)
}

// Describe implements prometheus.Collector.
func (c *certificateExpiry) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
}

// Collect implements prometheus.Collector.
func (c *certificateExpiry) Collect(ch chan<- prometheus.Metric) {
	path := c.path.Load()
	if path == nil {
		return
	}
	notAfter, err := certificateNotAfter(*path)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(notAfter.Unix()))
}

// certificateNotAfter is the NotAfter of the first certificate in the PEM file at path: the
// serving certificate, which comes before any chain.
func certificateNotAfter(path string) (time.Time, error) {
	rest, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return time.Time{}, fmt.Errorf("%s holds no PEM certificate", path)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: parsing its certificate: %w", path, err)
		}
		return cert.NotAfter, nil
	}
}
