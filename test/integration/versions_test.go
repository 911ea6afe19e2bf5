package integration

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	policyv1alpha1 "github.com/seedlabs/webhook-operator/api/policy/v1alpha1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// config/webhook routes each version of a Welcome to its own webhooks (matchPolicy Exact, so that
// a Welcome the matchConditions skip costs no conversion call), and both versions of a Memcached
// and an AdmissionPolicy to their webhooks at v1 (conversion None: kube-apiserver converts in
// process). These specs hold the routing as kube-apiserver calls it, by the calls each path counts.
var _ = Describe("The admission webhooks of each version", Label("conversion"), func() {
	It("route a v1alpha1 Welcome to the v1alpha1 webhooks alone, which judge it with no conversion call", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		before, conversions := webhookCallsByPath(), webhookCalls(webhooks.ConvertPath)
		err := k8s.Create(ctx, newWelcomeV1alpha1(ns, "bad-port", authv1alpha1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)}))
		after := webhookCallsByPath()
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.port"))
		Expect(after[webhooks.Welcome.ValidatePath()]-before[webhooks.Welcome.ValidatePath()]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		for _, path := range []string{webhooks.WelcomeV1.MutatePath(), webhooks.WelcomeV1.ValidatePath()} {
			Expect(after[path]).To(Equal(before[path]), "%s; calls by path: %v", path, after)
		}
		Expect(webhookCalls(webhooks.ConvertPath)).To(Equal(conversions), "a refused v1alpha1 Welcome was converted")
	})

	It("route a v1 Welcome to the v1 webhooks alone, which refuse it as at v1alpha1 and name its password where v1 keeps it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		validateV1, validateV1alpha1 := webhooks.WelcomeV1.ValidatePath(), webhooks.Welcome.ValidatePath()
		before := webhookCallsByPath()
		err := k8s.Create(ctx, &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-port"},
			Spec: authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)}})
		after := webhookCallsByPath()
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.port"))
		Expect(err.Error()).To(ContainSubstring("(rule welcome.port.range)"))
		Expect(after[validateV1]-before[validateV1]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		Expect(after[validateV1alpha1]).To(Equal(before[validateV1alpha1]), "calls by path: %v", after)

		before = webhookCallsByPath()
		long := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "long-password",
			Annotations: map[string]string{authv1.ConversionDataAnnotation: `{"spec":{"password":"` + strings.Repeat("p", 300) + `"}}`}},
			Spec: authv1.WelcomeSpec{Name: "Ada"}}
		err = k8s.Create(ctx, long)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf(passwordAtV1))
		after = webhookCallsByPath()
		Expect(after[validateV1]-before[validateV1]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		Expect(after[validateV1alpha1]).To(Equal(before[validateV1alpha1]), "a v1 request reaches the v1alpha1 webhook: %v", after)

		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		before = webhookCallsByPath()
		short := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short-password",
			Annotations: map[string]string{authv1.ConversionDataAnnotation: `{"spec":{"password":"p"}}`}},
			Spec: authv1.WelcomeSpec{Name: "Ada", ServiceType: "ClusterIP"}}
		Expect(c.Create(ctx, short)).To(Succeed())
		Expect(warnings.Take()).To(ContainElement(HavePrefix(
			"metadata.annotations[auth.seedlabs.dev/conversion-data].spec.password is stored unencrypted")))
		after = webhookCallsByPath()
		Expect(after[validateV1]-before[validateV1]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		for _, path := range []string{webhooks.Welcome.MutatePath(), validateV1alpha1} {
			Expect(after[path]).To(Equal(before[path]), "%s; calls by path: %v", path, after)
		}
		read := &authv1alpha1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(short), read)).To(Succeed())
		Expect(read.Spec).To(Equal(authv1alpha1.WelcomeSpec{Name: "Ada", Password: "p",
			Replicas: ptr.To[int32](1), Port: ptr.To[int32](8088), ServiceType: "ClusterIP"}))
	})

	It("and the controller judge a v1 Welcome's password where v1 keeps it: reported as broken, and, past its limit and stored past the webhook by an update of the annotation alone, held back", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		w := withPassword(newWelcome(ns, "secret", authv1.WelcomeSpec{Name: "Ada", ServiceType: "ClusterIP"}), "p")
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) {
			c := conditionOf(g, ctx, w, conditions.Compliant)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(HavePrefix("breaks welcome.password.plaintext (Warn): "))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		// No other event than the update of the annotation may start the reconcile that judges it:
		// the controller is idle first (the reconcile its own status write starts included), and
		// the webhooks come back when the spec ends.
		awaitControllerIdle(ctx, "welcome")
		Consistently(func() float64 {
			return gaugeSum("workqueue_depth", map[string]string{"name": "welcome"}) +
				gaugeSum("controller_runtime_active_workers", map[string]string{"controller": "welcome"})
		}).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).Should(BeZero(), "the welcome controller, idle")
		bypassValidation(ctx, ns)
		Eventually(func() error {
			got := &authv1.Welcome{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
				return err
			}
			return k8s.Update(ctx, withPassword(got, strings.Repeat("p", 257)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			stalled := stalledOf(g, ctx, w)
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(conditions.ReasonInvalidSpec))
			g.Expect(stalled.Message).To(ContainSubstring(passwordAtV1 + ": Too long"))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the controller reconciles an update of the conversion data alone")
	})

	It("route a Memcached and an AdmissionPolicy of either version to their v1 webhooks", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		before := webhookCallsByPath()
		err := k8s.Create(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
			Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](4)}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.size"))
		after := webhookCallsByPath()
		Expect(after[webhooks.MemcachedV1.ValidatePath()]-before[webhooks.MemcachedV1.ValidatePath()]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		Expect(after[webhooks.Memcached.ValidatePath()]).To(Equal(before[webhooks.Memcached.ValidatePath()]), "calls by path: %v", after)
		before = webhookCallsByPath()
		Expect(k8s.Create(ctx, &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
			Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](2)}})).To(Succeed())
		after = webhookCallsByPath()
		for _, path := range []string{webhooks.MemcachedV1.MutatePath(), webhooks.MemcachedV1.ValidatePath(),
			webhooks.Memcached.MutatePath(), webhooks.Memcached.ValidatePath()} {
			Expect(after[path]).To(Equal(before[path]), "a valid Memcached, which the matchConditions skip, reached %s: %v", path, after)
		}

		before = webhookCallsByPath()
		err = k8s.Create(ctx, &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "not-the-cluster-policy"},
			Spec: policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{{ID: "no.such.rule", Action: policyv1.Warn}}}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("metadata.name", "spec.rules[0].id"))
		after = webhookCallsByPath()
		const v1Policy, v1alpha1Policy = "/validate-policy-seedlabs-dev-v1-admissionpolicy", "/validate-policy-seedlabs-dev-v1alpha1-admissionpolicy"
		Expect(after[v1Policy]-before[v1Policy]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		Expect(after[v1alpha1Policy]).To(Equal(before[v1alpha1Policy]), "calls by path: %v", after)

		By("at v1alpha1, converted by kube-apiserver in process")
		before, conversions := webhookCallsByPath(), webhookCalls(webhooks.ConvertPath)
		err = k8s.Create(ctx, &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-pool"},
			Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](4)}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.size"))
		err = k8s.Create(ctx, &policyv1alpha1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "not-the-cluster-policy"},
			Spec: policyv1alpha1.AdmissionPolicySpec{Rules: []policyv1alpha1.RulePolicy{{ID: "no.such.rule", Action: policyv1alpha1.Warn}}}})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("metadata.name", "spec.rules[0].id"))
		after = webhookCallsByPath()
		for _, path := range []string{webhooks.MemcachedV1.ValidatePath(), v1Policy} {
			Expect(after[path]-before[path]).To(BeNumerically(">=", 1), "%s; calls by path: %v", path, after)
		}
		for _, path := range []string{webhooks.Memcached.MutatePath(), webhooks.Memcached.ValidatePath(), v1alpha1Policy} {
			Expect(after[path]).To(Equal(before[path]), "%s; calls by path: %v", path, after)
		}
		Expect(webhookCalls(webhooks.ConvertPath)).To(Equal(conversions), "a Memcached or AdmissionPolicy went through the conversion webhook")
	})
})

var _ = Describe("The manager, while users write at v1alpha1", Label("conversion"), func() {
	It("receives no deprecation warning: it reads, watches and writes every kind at v1", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		env.ManagerWarnings.Take()
		welcome := newWelcomeV1alpha1(ns, "at-v1alpha1", authv1alpha1.WelcomeSpec{Name: "Ada", Password: "hunter2"})
		memcached := &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-at-v1alpha1"},
			Spec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](1)}}
		Expect(k8s.Create(ctx, welcome)).To(Succeed())
		Expect(k8s.Create(ctx, memcached)).To(Succeed())
		reconciled := func(g Gomega) {
			w, m := &authv1alpha1.Welcome{}, &cachev1alpha1.Memcached{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(welcome), w)).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(memcached), m)).To(Succeed())
			g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation), "the Welcome's status")
			g.Expect(m.Status.ObservedGeneration).To(Equal(m.Generation), "the Memcached's status")
		}
		Eventually(reconciled).WithContext(ctx).Should(Succeed())
		before := welcome.DeepCopy()
		welcome.Spec.Name = "Grace"
		Expect(k8s.Patch(ctx, welcome, client.MergeFrom(before))).To(Succeed())
		Eventually(reconciled).WithContext(ctx).Should(Succeed())
		Expect(k8s.Delete(ctx, welcome)).To(Succeed())
		Expect(k8s.Delete(ctx, memcached)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(welcome), &authv1.Welcome{}) }).WithContext(ctx).
			Should(Satisfy(apierrors.IsNotFound))
		Expect(env.ManagerWarnings.Take()).NotTo(ContainElement(ContainSubstring("deprecated")))

		// The recorder hears the manager: a read of its own at v1alpha1 is warned about.
		Expect(env.Manager.GetAPIReader().List(ctx, &authv1alpha1.WelcomeList{}, client.InNamespace(ns))).To(Succeed())
		Expect(env.ManagerWarnings.Take()).To(ContainElement(welcomeDeprecated))
	})
})
