package integration

import (
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/testenv"
)

var _ = Describe("The metrics endpoint", func() {
	scrape := func(ctx SpecContext, token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+env.MetricsAddress+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The manager serves metrics with a self-signed certificate of its own.
		transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec
		resp, err := (&http.Client{Transport: transport}).Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}

	It("serves only callers that authenticate and may get /metrics", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// The manager caches authorization decisions, so the refused caller and the served one are
		// different ServiceAccounts.
		tokenFor := func(name string) (*corev1.ServiceAccount, string) {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			Expect(k8s.Create(ctx, sa)).To(Succeed())
			tr := &authenticationv1.TokenRequest{}
			Expect(k8s.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
			return sa, tr.Status.Token
		}

		By("refusing a caller without a token")
		code, body := scrape(ctx, "")
		Expect(code).To(Equal(http.StatusUnauthorized), body)

		By("refusing a caller whose token is not allowed to get /metrics")
		_, strangerToken := tokenFor("stranger")
		code, body = scrape(ctx, strangerToken)
		Expect(code).To(Equal(http.StatusForbidden), body)

		By("serving a caller bound to the metrics-reader role shipped in config/rbac")
		sa, token := tokenFor("scraper")
		root, err := testenv.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "metrics_reader_role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		Expect(yaml.Unmarshal(data, role)).To(Succeed())
		role.Name = "metrics-reader-" + ns
		Expect(k8s.Create(ctx, role)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, role))).To(Succeed()) })
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
		}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, binding))).To(Succeed()) })

		Eventually(func(g Gomega) {
			code, body := scrape(ctx, token)
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(body).To(ContainSubstring(`controller_runtime_reconcile_total{controller="welcome"`))
		}).Should(Succeed())
	})
})
