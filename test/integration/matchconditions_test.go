package integration

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
)

// webhookCalls is how many requests the in-process webhook server has answered on path, by
// controller-runtime's own counter.
func webhookCalls(path string) float64 {
	families, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "webhook") == path {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// webhookLatency is the count and mean of the in-process webhook server's handling time per path,
// by controller-runtime's own histogram, in milliseconds.
func webhookLatency() map[string]string {
	families, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			out[labelValue(m, "webhook")] = fmt.Sprintf("%d requests, mean %.2f ms",
				h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

var _ = Describe("The webhook configurations' matchConditions", func() {
	const (
		mutate   = "/mutate-auth-seedlabs-dev-v1alpha1-welcome"
		validate = "/validate-auth-seedlabs-dev-v1alpha1-welcome"
	)

	It("keep updates that leave the spec alone away from the webhooks, and send the others", Serial, func(ctx SpecContext) {
		ns := newNamespace(ctx)
		w := newWelcome(ns, "quiet", authv1alpha1.WelcomeSpec{Name: "Ada"})
		before := [2]float64{webhookCalls(mutate), webhookCalls(validate)}
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Expect([2]float64{webhookCalls(mutate), webhookCalls(validate)}).To(Equal([2]float64{before[0] + 1, before[1] + 1}),
			"a create calls each webhook once")

		By("editing labels, annotations and finalizers")
		before = [2]float64{webhookCalls(mutate), webhookCalls(validate)}
		patch := client.MergeFrom(w.DeepCopy())
		w.Labels = map[string]string{"team": "web"}
		w.Annotations = map[string]string{"note": "hello"}
		w.Finalizers = []string{"example.com/hold"}
		Expect(k8s.Patch(ctx, w, patch)).To(Succeed())
		Expect([2]float64{webhookCalls(mutate), webhookCalls(validate)}).To(Equal(before), "a metadata edit called a webhook")

		By("editing the spec")
		patch = client.MergeFrom(w.DeepCopy())
		w.Spec.Name = "Grace"
		w.Finalizers = nil
		Expect(k8s.Patch(ctx, w, patch)).To(Succeed())
		// At least once, not exactly: when the controller's status write lands between the API
		// server's read and write of this patch, the API server retries the update and admits it
		// again, calling both webhooks a second time.
		Expect(webhookCalls(mutate)).To(BeNumerically(">=", before[0]+1), "a spec edit must call the mutating webhook")
		Expect(webhookCalls(validate)).To(BeNumerically(">=", before[1]+1), "a spec edit must call the validating webhook")
	})
})
