package integration

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// forgedReview posts, past the API server, a review of a Welcome create in namespace to the
// Welcome's validating webhook, as anyone who can reach the webhook's port can, and returns the
// answer.
func forgedReview(ctx SpecContext, namespace string, welcome *authv1.Welcome) *admissionv1.AdmissionResponse {
	object, err := json.Marshal(welcome)
	Expect(err).NotTo(HaveOccurred())
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(rand.String(8)),
			Kind:      metav1.GroupVersionKind{Group: "auth.seedlabs.dev", Version: "v1alpha1", Kind: "Welcome"},
			Resource:  metav1.GroupVersionResource{Group: "auth.seedlabs.dev", Version: "v1alpha1", Resource: "welcomes"},
			Name:      welcome.Name,
			Namespace: namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: object},
		},
	})
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"https://"+env.WebhookAddress+"/validate-auth-seedlabs-dev-v1alpha1-welcome?timeout=5s", bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a forger trusts anything
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	review := &admissionv1.AdmissionReview{}
	Expect(json.NewDecoder(resp.Body).Decode(review)).To(Succeed())
	Expect(review.Response).NotTo(BeNil())
	return review.Response
}

var _ = Describe("Callers of the webhooks", admission, func() {
	It("get, for an object in a namespace created a moment before, the action the policy sets there, read from the cache", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Enforce,
			policyv1.NamespaceAction{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"lab": "yes"}}, Action: policyv1.Warn})}})
		Eventually(policyGeneration).
			WithContext(ctx).WithTimeout(30 * time.Second).ShouldNot(BeZero())

		for range 5 {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lab-", Labels: map[string]string{"lab": "yes"}}}
			Expect(k8s.Create(ctx, ns)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
			warnings.Take()
			Expect(c.Create(ctx, newWelcome(ns.Name, "probe", authv1.WelcomeSpec{Name: "Ada", Email: "ada-at-example.com"}), client.DryRunAll)).
				To(Succeed(), "created right after its namespace, the override of namespace %s applies", ns.Name)
			Expect(warnings.Take()).To(ContainElement(ContainSubstring("(rule welcome.email.format)")))
		}
	})

	It("that forge a review naming a namespace the manager does not know are refused, and write no Event there", func(ctx SpecContext) {
		suppressed := func() float64 { return counterValue("webhook_operator_refusal_events_suppressed_total", nil) }
		before := suppressed()
		invented := "invented-" + rand.String(8)
		answer := forgedReview(ctx, invented, newWelcome(invented, "forged", authv1.WelcomeSpec{Name: "Ada", Email: "ada-at-example.com"}))
		Expect(answer.Allowed).To(BeFalse())
		Expect(answer.Result.Message).To(ContainSubstring("(rule welcome.email.format)"))
		Expect(suppressed()-before).To(BeEquivalentTo(1), "the refusal's Event is not recorded, and counted as suppressed")

		By("while a review of an object the API server could have sent, in a namespace it knows, records its Event")
		// The namespace is created just before, as kubectl apply of a file holding both does: the
		// manager waits a moment for its cache to see it.
		ns := newNamespace(ctx)
		answer = forgedReview(ctx, ns, newWelcome(ns, "forged", authv1.WelcomeSpec{Name: "Ada", Email: "ada-at-example.com"}))
		Expect(answer.Allowed).To(BeFalse())
		Eventually(func(g Gomega) {
			list := &corev1.EventList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(list.Items).To(ContainElement(HaveField("Reason", conditions.EventReasonAdmissionRefused)), fmt.Sprintf("Events in %s", ns))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("never call a defaulting webhook for an object past its schema's bounds: the schema refuses it next, naming the bound", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ports := func(n int) []corev1.ServicePort {
			var p []corev1.ServicePort
			for i := range n {
				p = append(p, corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(1000 + i)})
			}
			return p
		}
		mutate := "/mutate-app-seedlabs-dev-v1-deployobject"
		before := webhookCalls(mutate)
		err := k8s.Create(ctx, newDeployObject(ns, "past", "registry.local:5000/app:1.0", ports(appv1.MaxPortsItems+1)...), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want the schema's 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.ports: Too many: 101: must have at most 100 items"))
		Expect(webhookCalls(mutate)).To(Equal(before), "the defaulting webhook was called")

		Expect(k8s.Create(ctx, newDeployObject(ns, "at", "registry.local:5000/app:1.0", ports(appv1.MaxPortsItems)...), client.DryRunAll)).To(Succeed())
		Expect(webhookCalls(mutate)).To(Equal(before+1), "at the bound, the ports' targetPorts are defaulted")
	})
})
