package integration

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// rulePolicy sets rule id to action.
func rulePolicy(id webhooks.RuleID, action policyv1.Action, namespaces ...policyv1.NamespaceAction) policyv1.RulePolicy {
	return policyv1.RulePolicy{ID: string(id), Action: action, Namespaces: namespaces}
}

// setPolicy creates or replaces the AdmissionPolicy named cluster.
func setPolicy(ctx SpecContext, spec policyv1.AdmissionPolicySpec) {
	p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}
	err := update(ctx, p, func() { p.Spec = spec })
	if apierrors.IsNotFound(err) {
		p.Spec = spec
		err = k8s.Create(ctx, p)
	}
	ExpectWithOffset(1, err).To(Succeed())
}

// storePastTheWebhook stores the AdmissionPolicy named cluster with spec while its validating
// webhook is left out of the configuration, as a policy written before the webhook or by a version
// that allowed what this one refuses.
func storePastTheWebhook(ctx SpecContext, spec policyv1.AdmissionPolicySpec) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	ExpectWithOffset(1, k8s.Get(ctx, types.NamespacedName{Name: "validating-webhook-configuration"}, vwc)).To(Succeed())
	original := slices.Clone(vwc.Webhooks)
	vwc.Webhooks = slices.DeleteFunc(vwc.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == "vadmissionpolicy.policy.seedlabs.dev"
	})
	ExpectWithOffset(1, vwc.Webhooks).To(HaveLen(len(original) - 1))
	ExpectWithOffset(1, k8s.Update(ctx, vwc)).To(Succeed())
	defer func() {
		current := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKeyFromObject(vwc), current)).To(Succeed())
		current.Webhooks = original
		ExpectWithOffset(1, k8s.Update(context.Background(), current)).To(Succeed())
	}()
	// kube-apiserver reads webhook configurations from its own cache: until it has seen the
	// change, the webhook may still refuse.
	EventuallyWithOffset(1, func() error {
		deletePolicy(ctx)
		return k8s.Create(ctx, &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}, Spec: spec})
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

// expectApplied waits until the AdmissionPolicy's status describes its generation with a Ready
// condition of status and reason, whose message starts with message, and a Stalled condition that
// says the opposite, and returns the policy.
func expectApplied(ctx SpecContext, status metav1.ConditionStatus, reason, message string) *policyv1.AdmissionPolicy {
	p := &policyv1.AdmissionPolicy{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: policyv1.PolicyName}, p)).To(Succeed())
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		ready := meta.FindStatusCondition(p.Status.Conditions, conditions.Ready)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(ready.Status).To(Equal(status))
		g.Expect(ready.Reason).To(Equal(reason))
		g.Expect(ready.Message).To(HavePrefix(message))
		stalled := metav1.ConditionTrue
		if status == metav1.ConditionTrue {
			stalled = metav1.ConditionFalse
		}
		c := meta.FindStatusCondition(p.Status.Conditions, conditions.Stalled)
		g.Expect(c).NotTo(BeNil(), "no Stalled condition")
		g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(c.Status).To(Equal(stalled))
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, conditions.Ready).Reason).To(Equal(reason))
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return p
}

// policyGeneration is the generation of the AdmissionPolicy the suite's manager enforces, 0 for
// none, as its gauge webhook_operator_admission_policy_generation says.
func policyGeneration() float64 {
	const name = "webhook_operator_admission_policy_generation"
	families, err := metrics.Registry.Gather()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	Fail("no gauge " + name)
	return 0
}

func deletePolicy(ctx SpecContext) {
	p := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}
	ExpectWithOffset(1, client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed())
	// The manager learns of the deletion through its watch: until then, the next spec's requests
	// would still be judged by the deleted policy.
	EventuallyWithOffset(1, policyGeneration).
		WithContext(ctx).WithTimeout(30*time.Second).Should(BeZero(), "the default policy in force")
}

var _ = Describe("The AdmissionPolicy", admission, func() {
	It("is refused with every reason when the operator could not apply it", func(ctx SpecContext) {
		p := &policyv1.AdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "mine"},
			Spec: policyv1.AdmissionPolicySpec{
				AllowedRegistries: []string{"Not A Registry"},
				Rules: []policyv1.RulePolicy{
					rulePolicy("welcome.no.such-rule", policyv1.Warn),
					rulePolicy(webhooks.WelcomePort, policyv1.Warn),
					rulePolicy(webhooks.WelcomePassword, policyv1.Enforce),
				},
			},
		}
		err := k8s.Create(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("metadata.name", "spec.allowedRegistries[0]", "spec.rules[0].id", "spec.rules[1].action", "spec.rules[2].action"))
		Expect(err.Error()).To(ContainSubstring("welcome.port.range is a contract rule"))
	})

	It("that names no registries keeps the manager's --allowed-registries; [] allows any", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		ns := newNamespace(ctx)
		image := "quay.io/team/app:1.0" // not among fixtures.AllowedRegistries, the flag of the suite's manager
		audit := []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Audit)}

		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: audit})
		Eventually(func(g Gomega) {
			err := k8s.Create(ctx, newDeployObject(ns, "app", image, httpPort(80)), client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("allowed registries: " + strings.Join(slices.Sorted(slices.Values(fixtures.AllowedRegistries)), ", ")))
			g.Expect(k8s.Create(ctx, newWelcome(ns, "audited", authv1.WelcomeSpec{Name: "Ada", Email: "not-an-email"}), client.DryRunAll)).
				To(Succeed(), "the policy's rules are in force")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		setPolicy(ctx, policyv1.AdmissionPolicySpec{AllowedRegistries: []string{}, Rules: audit})
		Eventually(func() error {
			return k8s.Create(ctx, newDeployObject(ns, "app", image, httpPort(80)), client.DryRunAll)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		expectApplied(ctx, metav1.ConditionTrue, conditions.ReasonApplied, "every rule and registry is applied")
	})

	It("stored past its webhook is applied except what cannot be: the allow-list stays, a relaxed contract rule does not", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		ns := newNamespace(ctx)
		// The reproducer of issue 20, as an older version could have stored it: the whole policy
		// was dropped, and docker.io, allowed by the manager's flag, came back.
		storePastTheWebhook(ctx, policyv1.AdmissionPolicySpec{
			AllowedRegistries: []string{"registry.corp.example", "not a registry"},
			Rules:             []policyv1.RulePolicy{rulePolicy(webhooks.WelcomePort, policyv1.Warn), rulePolicy(webhooks.WelcomeEmail, policyv1.Audit)},
		})
		Eventually(func(g Gomega) {
			err := k8s.Create(ctx, newDeployObject(ns, "app", "docker.io/library/nginx:1.27", httpPort(80)), client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("allowed registries: registry.corp.example"))
			g.Expect(k8s.Create(ctx, newDeployObject(ns, "app", "registry.corp.example/app:1.0", httpPort(80)), client.DryRunAll)).To(Succeed())
			g.Expect(k8s.Create(ctx, newWelcome(ns, "audited", authv1.WelcomeSpec{Name: "Ada", Email: "not-an-email"}), client.DryRunAll)).
				To(Succeed(), "the valid rule is in force")
			err = k8s.Create(ctx, newWelcome(ns, "port", authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](70000)}), client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a contract rule stays Enforced: want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("(rule welcome.port.range)"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("saying in its status what is not applied, and why, and in each replica's metrics which generation it enforces")
		p := expectApplied(ctx, metav1.ConditionFalse, conditions.ReasonPartlyApplied,
			`applied, except what cannot be: [spec.allowedRegistries[1]: Invalid value: "not a registry": allowed registry "not a registry" is not a registry host`)
		Expect(meta.FindStatusCondition(p.Status.Conditions, conditions.Ready).Message).To(ContainSubstring(
			"spec.rules[0].action: Invalid value: \"Warn\": welcome.port.range is a contract rule"))
		Eventually(policyGeneration).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(BeEquivalentTo(p.Generation))
		deletePolicy(ctx)
		Eventually(policyGeneration).
			WithContext(ctx).WithTimeout(30 * time.Second).Should(BeZero())
	})

	It("changes at once what admission and the controllers do about a rule, per namespace, and deleting it restores the default", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		dev, prod := newNamespace(ctx), newNamespace(ctx)
		namespace := &corev1.Namespace{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: prod}, namespace)).To(Succeed())
		namespace.Labels = map[string]string{"env": "prod"}
		Expect(k8s.Update(ctx, namespace)).To(Succeed())

		badEmail := func(ns, name string) *authv1.Welcome {
			return newWelcome(ns, name, authv1.WelcomeSpec{Name: "Ada", Email: "ada-at-example.com"})
		}
		refusedFor := func(ns string, rule webhooks.RuleID) func(g Gomega) {
			return func(g Gomega) {
				err := c.Create(ctx, badEmail(ns, "probe"), client.DryRunAll)
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
				g.Expect(err.Error()).To(ContainSubstring("(rule " + string(rule) + ")"))
			}
		}
		By("refusing by default")
		refusedFor(dev, webhooks.WelcomeEmail)(Default)

		By("warning once the policy says Warn")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Warn)}})
		Eventually(func(g Gomega) {
			warnings.Take()
			g.Expect(c.Create(ctx, badEmail(dev, "probe"), client.DryRunAll)).To(Succeed())
			g.Expect(warnings.Take()).To(ContainElement(
				`spec.email: Invalid value: "ada-at-example.com": must be a bare email address such as user@example.com (rule welcome.email.format)`))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("reporting, on a stored object, the rules it breaks and what the policy does about them")
		stored := badEmail(dev, "stored")
		Expect(c.Create(ctx, stored)).To(Succeed())
		Eventually(func(g Gomega) {
			w := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stored), w)).To(Succeed())
			compliant := meta.FindStatusCondition(w.Status.Conditions, conditions.Compliant)
			g.Expect(compliant).NotTo(BeNil())
			g.Expect(compliant.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(compliant.Reason).To(Equal(conditions.ReasonRulesBroken))
			g.Expect(compliant.Message).To(HavePrefix("breaks welcome.email.format (Warn): "))
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, conditions.Stalled)).To(BeFalse(), "a Warned rule does not hold the spec back")
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(dev))).To(Succeed())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == conditions.EventReasonPolicyViolation && e.Regarding.Name == stored.Name {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ConsistOf("the spec breaks welcome.email.format (Warn)"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("admitting silently under Audit, except in the namespaces an override Enforces it in")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{
			rulePolicy(webhooks.WelcomeEmail, policyv1.Audit, policyv1.NamespaceAction{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, Action: policyv1.Enforce,
			}),
		}})
		audited := map[string]string{"kind": "Welcome", "rule": string(webhooks.WelcomeEmail), "action": "audited"}
		Eventually(func(g Gomega) {
			before := counterValue("webhook_operator_rule_results_total", audited)
			warnings.Take()
			g.Expect(c.Create(ctx, badEmail(dev, "probe"), client.DryRunAll)).To(Succeed())
			g.Expect(warnings.Take()).To(BeEmpty())
			g.Expect(counterValue("webhook_operator_rule_results_total", audited)).To(BeNumerically(">", before))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		refusedFor(prod, webhooks.WelcomeEmail)(Default)

		By("rolling out what a Warned rule admits: the controller holds a spec only to the rules the policy Enforces")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.MemcachedSize, policyv1.Warn)}})
		var big *cachev1.Memcached
		Eventually(func(g Gomega) {
			big = newMemcached(dev, "big", ptr.To[int32](5))
			g.Expect(c.Create(ctx, big)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(5))))
			m := &cachev1.Memcached{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), m)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, conditions.Stalled)).To(BeFalse())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("looking at every object again when the policy changes: Enforced again, the spec is held back, and what runs keeps running")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Warn)}})
		Eventually(func(g Gomega) { expectHeldBack(g, ctx, big, webhooks.MemcachedSize) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		d := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), d)).To(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(5))), "the running pool is not stopped by the policy change")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.MemcachedSize, policyv1.Audit)}})
		Eventually(func(g Gomega) {
			m := &cachev1.Memcached{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(big), m)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, conditions.Stalled)).To(BeFalse())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("replacing --allowed-registries with the policy's, and restoring it when the policy goes")
		running := newDeployObject(dev, "running", "nginx:1.27", httpPort(80))
		Expect(c.Create(ctx, running)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(running), &appsv1.Deployment{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		setPolicy(ctx, policyv1.AdmissionPolicySpec{AllowedRegistries: []string{"ghcr.io"}})
		nginx := func() client.Object { return newDeployObject(dev, "nginx", "nginx:1.27", httpPort(80)) }
		Eventually(func(g Gomega) {
			err := c.Create(ctx, nginx(), client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("(rule deployobject.image.registry)"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			d := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(running), d)).To(Succeed())
			compliant := meta.FindStatusCondition(d.Status.Conditions, conditions.Compliant)
			g.Expect(compliant).NotTo(BeNil())
			g.Expect(compliant.Message).To(HavePrefix("breaks deployobject.image.registry (Enforce): "))
			g.Expect(meta.IsStatusConditionTrue(d.Status.Conditions, conditions.Stalled)).To(BeFalse(),
				"an image admitted before the allow-list changed keeps running")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		deletePolicy(ctx)
		Eventually(func(g Gomega) {
			d := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(running), d)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(d.Status.Conditions, conditions.Compliant)).To(BeTrue())
			g.Expect(c.Create(ctx, nginx(), client.DryRunAll)).To(Succeed())
			refusedFor(dev, webhooks.WelcomeEmail)(g)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(strings.Join(warnings.Take(), "\n")).NotTo(ContainSubstring("welcome.email.format"))
	})
})
