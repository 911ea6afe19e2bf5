//go:build e2e

package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/test/fixtures"
)

// selfSignedSecret is the Secret config/self-signed has the manager keep its certificate in.
var selfSignedSecret = types.NamespacedName{Namespace: fixtures.Namespace, Name: fixtures.NamePrefix + "webhook-server-cert"}

var _ = Describe("The operator installed without cert-manager (make deploy DEPLOY_CONFIG=self-signed)", Ordered, func() {
	const namespace = "e2e-self-signed"
	var (
		managers []corev1.Pod
		rec      *podRecorder
	)

	AfterEach(func() {
		if rec != nil {
			Expect(rec.exits()).To(BeEmpty(), "manager containers exited on their own")
		}
	})

	BeforeAll(func(ctx SpecContext) {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
		})
		rec = recordManagers("managers-self-signed")
		start := time.Now()
		out, err := makeTarget(ctx, "deploy", "DEPLOY_CONFIG=self-signed")
		Expect(err).NotTo(HaveOccurred(), "make deploy DEPLOY_CONFIG=self-signed:\n%s", out)
		AddReportEntry("make deploy DEPLOY_CONFIG=self-signed", time.Since(start).Round(time.Millisecond).String())
		DeferCleanup(func(ctx SpecContext) {
			out, err := makeTarget(ctx, "undeploy", "DEPLOY_CONFIG=self-signed", "ignore-not-found=true")
			Expect(err).NotTo(HaveOccurred(), "make undeploy DEPLOY_CONFIG=self-signed:\n%s", out)
		}, NodeTimeout(5*time.Minute))
	}, NodeTimeout(3*time.Minute))

	secret := func(ctx context.Context, g Gomega) *corev1.Secret {
		s := &corev1.Secret{}
		g.ExpectWithOffset(1, k8s.Get(ctx, selfSignedSecret, s)).To(Succeed())
		return s
	}

	It("makes its own certificate, injects its CA, and turns every replica ready serving it for the Service's name", func(ctx SpecContext) {
		start := time.Now()
		Eventually(func(g Gomega) {
			s := secret(ctx, g)
			g.Expect(s.Data).To(HaveKey("ca.crt"))
			g.Expect(s.Data).To(HaveKey("tls.crt"))
			g.Expect(caBundles(ctx)).To(HaveEach(Equal(s.Data["ca.crt"])))

			// Every replica Ready and a ready endpoint of the webhook Service, which the load
			// below reaches through kube-apiserver.
			managers = expectManagerReady(ctx, g)
			for i := range managers {
				served, err := servedCertificate(managers[i].Status.PodIP, s.Data["ca.crt"])
				g.Expect(err).NotTo(HaveOccurred(), "pod %s", managers[i].Name)
				g.Expect(served.Raw).To(Equal(parseCertificate(s.Data["tls.crt"]).Raw), "pod %s", managers[i].Name)
			}
			expectAdmissionServed(ctx, g, namespace)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		AddReportEntry("self-signed: deploy to every replica ready", time.Since(start).Round(time.Millisecond).String())
	}, SpecTimeout(4*time.Minute))

	It("renews a serving certificate that is no longer valid, under admission load, without failing one request", func(ctx SpecContext) {
		before := secret(ctx, Default)
		var ips []string
		for _, manager := range managers {
			ips = append(ips, manager.Status.PodIP)
		}
		load := startAdmissionLoad(ctx, namespace, ips)

		// As if the certificate had expired: the manager issues a new one under the same CA.
		start := time.Now()
		spoiled := before.DeepCopy()
		spoiled.Data["tls.crt"] = []byte("not a certificate")
		Expect(k8s.Update(ctx, spoiled)).To(Succeed())
		var after *corev1.Secret
		Eventually(func(g Gomega) {
			after = secret(ctx, g)
			g.Expect(after.Data["tls.crt"]).NotTo(Or(Equal(before.Data["tls.crt"]), Equal(spoiled.Data["tls.crt"])))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(after.Data["ca.crt"]).To(Equal(before.Data["ca.crt"]), "the CA stays, so the caBundle stays valid")

		// The kubelet updates each replica's mounted Secret in its own time.
		newLeaf := parseCertificate(after.Data["tls.crt"])
		for _, manager := range managers {
			Eventually(func() ([]byte, error) {
				served, err := servedCertificate(manager.Status.PodIP, after.Data["ca.crt"])
				if err != nil {
					return nil, err
				}
				return served.Raw, nil
			}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Equal(newLeaf.Raw), "pod %s", manager.Name)
		}
		AddReportEntry("self-signed: renewal to new certificate served", time.Since(start).Round(time.Millisecond).String())

		load.finish(ctx, "the self-signed renewal")
		Expect(caBundles(ctx)).To(HaveEach(Equal(after.Data["ca.crt"])))
	}, SpecTimeout(5*time.Minute))

	It("has never been refused by RBAC: the Role and ClusterRole of config/self-signed hold what keeping the certificate takes", func() {
		var refused []string
		for _, line := range strings.Split(rec.logs(), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				refused = append(refused, line)
			}
		}
		Expect(refused).To(BeEmpty(), "a manager was refused by RBAC")
	})
})
