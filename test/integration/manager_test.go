package integration

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The Manager", func() {
	get := func(ctx SpecContext, path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.ProbeAddress+path, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	dial := func(config *tls.Config) (*tls.Conn, error) {
		config.InsecureSkipVerify = true //nolint:gosec // the handshake parameters are under test, not the peer
		return tls.DialWithDialer(&net.Dialer{}, "tcp", env.WebhookAddress, config)
	}

	It("is ready once its webhook server completes a TLS handshake", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			code, body := get(ctx, "/readyz?verbose")
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(body).To(ContainSubstring("[+]webhook ok"))
		}).Should(Succeed())
		code, _ := get(ctx, "/healthz")
		Expect(code).To(Equal(http.StatusOK))
	})

	It("serves webhooks over TLS 1.2 or newer only", func() {
		_, err := dial(&tls.Config{MaxVersion: tls.VersionTLS11})
		Expect(err).To(HaveOccurred())

		conn, err := dial(&tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().Version).To(BeEquivalentTo(tls.VersionTLS12))
		Expect(conn.Close()).To(Succeed())
	})

	It("does not offer HTTP/2 on the webhook server", func() {
		conn, err := dial(&tls.Config{NextProtos: []string{"h2", "http/1.1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
		Expect(conn.Close()).To(Succeed())
	})
})
