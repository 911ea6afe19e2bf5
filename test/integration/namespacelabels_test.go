package integration

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

var _ = Describe("A namespace's labels", func() {
	It("changed under a policy with namespace overrides, have the controllers judge the objects in it again at once", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{
			rulePolicy(webhooks.MemcachedSize, policyv1.Enforce, policyv1.NamespaceAction{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "lab"}}, Action: policyv1.Warn,
			}),
		}})
		ns := newNamespace(ctx)
		label := func(labels map[string]string) {
			namespace := &corev1.Namespace{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
			namespace.Labels = labels
			Expect(k8s.Update(ctx, namespace)).To(Succeed())
		}
		// stalled is the Memcached's Stalled condition and its Compliant message.
		stalled := func(g Gomega, m *cachev1.Memcached) (*metav1.Condition, string) {
			return storedConditionOf(g, ctx, m, conditions.Stalled), conditionOf(g, ctx, m, conditions.Compliant).Message
		}

		By("admitting and rolling out 5 memcached instances where the override Warns")
		label(map[string]string{"env": "lab"})
		big := newMemcached(ns, "big", ptr.To[int32](5))
		Eventually(func() error { return k8s.Create(ctx, big) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(5))))
			c, compliant := stalled(g, big)
			g.Expect(c == nil || c.Status == metav1.ConditionFalse).To(BeTrue(), "Stalled: %v", c)
			g.Expect(compliant).To(HavePrefix("breaks memcached.size.range (Warn): "))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("holding the spec back as soon as the label goes, with no edit of the Memcached")
		label(nil)
		Eventually(func(g Gomega) {
			c, compliant := stalled(g, big)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(conditions.ReasonInvalidSpec))
			g.Expect(compliant).To(HavePrefix("breaks memcached.size.range (Enforce): "))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("rolling it out again as soon as the label is back")
		label(map[string]string{"env": "lab"})
		Eventually(func(g Gomega) {
			c, compliant := stalled(g, big)
			g.Expect(c == nil || c.Status == metav1.ConditionFalse).To(BeTrue(), "Stalled: %v", c)
			g.Expect(compliant).To(HavePrefix("breaks memcached.size.range (Warn): "))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
