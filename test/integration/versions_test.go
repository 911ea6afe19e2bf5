package integration

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// The Manager serves the admission webhooks of the three kinds at v1 before any configuration of
// config/webhook calls them, so that the release that routes v1 requests to them rolls out over
// one whose replicas answer them. These specs route them as that release will: v1 served, and
// every webhook of config/webhook at v1alpha1 copied to one of v1 (rules [v1], matchPolicy Exact, its
// path at v1), the originals made Exact too, so that a v1 request reaches the v1 webhooks alone.
// The copies have no matchConditions: every request reaches them.
var _ = Describe("The admission webhooks at v1, routed as the release that serves v1 routes them", Ordered, Label("conversion"), func() {
	BeforeAll(func(ctx SpecContext) {
		for _, crd := range []string{welcomeCRD, "memcacheds.cache.seedlabs.dev", "admissionpolicies.policy.seedlabs.dev"} {
			setV1Served(ctx, crd, true)
			DeferCleanup(func(ctx SpecContext) { setV1Served(ctx, crd, false) })
		}
		// Run after routeV1's clean-up, before v1 is unserved: the specs that follow find the
		// configurations as config/webhook has them, as kube-apiserver calls them.
		ns := newNamespace(ctx)
		DeferCleanup(func(ctx SpecContext) {
			Eventually(func(g Gomega) {
				before := webhookCallsByPath()
				err := k8s.Create(ctx, &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-port-"},
					Spec: authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)}})
				after := webhookCallsByPath()
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
				g.Expect(after[webhooks.Welcome.ValidatePath()]-before[webhooks.Welcome.ValidatePath()]).To(BeNumerically(">=", 1), "calls by path: %v", after)
				for _, path := range []string{webhooks.WelcomeV1.MutatePath(), webhooks.WelcomeV1.ValidatePath()} {
					g.Expect(after[path]).To(Equal(before[path]), "calls by path: %v", after)
				}
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		})
		routeV1(ctx)
	})

	It("refuse a v1 Welcome as at v1alpha1, naming its password where v1 keeps it, and default it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		validateV1, validateV1alpha1 := webhooks.WelcomeV1.ValidatePath(), webhooks.Welcome.ValidatePath()
		// Until kube-apiserver calls the configurations as changed: the v1 webhook alone.
		Eventually(func(g Gomega) {
			before := webhookCallsByPath()
			err := k8s.Create(ctx, &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-port-"},
				Spec: authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](0)}})
			after := webhookCallsByPath()
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(causes(err)).To(ConsistOf("spec.port"))
			g.Expect(err.Error()).To(ContainSubstring("(rule welcome.port.range)"))
			g.Expect(after[validateV1]-before[validateV1]).To(BeNumerically(">=", 1), "calls by path: %v", after)
			g.Expect(after[validateV1alpha1]).To(Equal(before[validateV1alpha1]), "calls by path: %v", after)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		before := webhookCallsByPath()
		long := &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "long-password",
			Annotations: map[string]string{authv1.ConversionDataAnnotation: `{"spec":{"password":"` + strings.Repeat("p", 300) + `"}}`}},
			Spec: authv1.WelcomeSpec{Name: "Ada"}}
		err := k8s.Create(ctx, long)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("metadata.annotations[auth.seedlabs.dev/conversion-data].spec.password"))
		after := webhookCallsByPath()
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
		Expect(after[webhooks.WelcomeV1.MutatePath()]-before[webhooks.WelcomeV1.MutatePath()]).To(BeNumerically(">=", 1), "calls by path: %v", after)
		Expect(after[webhooks.Welcome.MutatePath()]).To(Equal(before[webhooks.Welcome.MutatePath()]), "calls by path: %v", after)
		read := &authv1alpha1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(short), read)).To(Succeed())
		Expect(read.Spec).To(Equal(authv1alpha1.WelcomeSpec{Name: "Ada", Password: "p",
			Replicas: ptr.To[int32](1), Port: ptr.To[int32](8088), ServiceType: "ClusterIP"}))
	})

	It("refuse a v1 Memcached and a v1 AdmissionPolicy as at v1alpha1", func(ctx SpecContext) {
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
		for _, path := range []string{webhooks.MemcachedV1.MutatePath(), webhooks.MemcachedV1.ValidatePath()} {
			Expect(after[path]-before[path]).To(BeNumerically(">=", 1), "%s; calls by path: %v", path, after)
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
	})
})

// routeV1 copies every webhook of config/webhook at v1alpha1 (but the scale subresource's, whose
// Scale is autoscaling/v1 at either version) to one at v1 on its path at v1, and makes every
// webhook of config/webhook Exact, until the specs are done.
func routeV1(ctx context.Context) {
	GinkgoHelper()
	atV1 := func(rules []admissionregistrationv1.RuleWithOperations, cc admissionregistrationv1.WebhookClientConfig) (bool, []admissionregistrationv1.RuleWithOperations, admissionregistrationv1.WebhookClientConfig) {
		path := ptr.Deref(cc.Service, admissionregistrationv1.ServiceReference{}).Path
		if cc.URL != nil {
			path = cc.URL
		}
		if path == nil || !strings.Contains(*path, "-v1alpha1-") || strings.HasSuffix(*path, "-scale") {
			return false, nil, cc
		}
		cc = *cc.DeepCopy()
		if cc.URL != nil {
			cc.URL = ptr.To(strings.Replace(*cc.URL, "-v1alpha1-", "-v1-", 1))
		} else {
			cc.Service.Path = ptr.To(strings.Replace(*cc.Service.Path, "-v1alpha1-", "-v1-", 1))
		}
		rules = slices.Clone(rules)
		for i := range rules {
			rules[i] = *rules[i].DeepCopy()
			rules[i].APIVersions = []string{"v1"}
		}
		return true, rules, cc
	}
	exact := ptr.To(admissionregistrationv1.Exact)

	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	Expect(k8s.List(ctx, mutating)).To(Succeed())
	copies := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v1-routes"}}
	for _, c := range mutating.Items {
		if !strings.HasSuffix(c.Webhooks[0].Name, ".seedlabs.dev") {
			continue
		}
		original := c.DeepCopy()
		for i := range c.Webhooks {
			w := &c.Webhooks[i]
			w.MatchPolicy = exact
			if ok, rules, cc := atV1(w.Rules, w.ClientConfig); ok {
				v1 := *w.DeepCopy()
				v1.Name, v1.Rules, v1.ClientConfig, v1.MatchConditions = "v1."+w.Name, rules, cc, nil
				copies.Webhooks = append(copies.Webhooks, v1)
			}
		}
		Expect(k8s.Update(ctx, &c)).To(Succeed())
		DeferCleanup(restoreWebhooks, original)
	}
	Expect(k8s.Create(ctx, copies)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, copies)).To(Succeed()) })

	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	Expect(k8s.List(ctx, validating)).To(Succeed())
	vcopies := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v1-routes"}}
	for _, c := range validating.Items {
		if !strings.HasSuffix(c.Webhooks[0].Name, ".seedlabs.dev") {
			continue
		}
		original := c.DeepCopy()
		for i := range c.Webhooks {
			w := &c.Webhooks[i]
			w.MatchPolicy = exact
			if ok, rules, cc := atV1(w.Rules, w.ClientConfig); ok {
				v1 := *w.DeepCopy()
				v1.Name, v1.Rules, v1.ClientConfig, v1.MatchConditions = "v1."+w.Name, rules, cc, nil
				vcopies.Webhooks = append(vcopies.Webhooks, v1)
			}
		}
		Expect(k8s.Update(ctx, &c)).To(Succeed())
		DeferCleanup(restoreWebhooks, original)
	}
	Expect(k8s.Create(ctx, vcopies)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, vcopies)).To(Succeed()) })
	Expect(copies.Webhooks).To(HaveLen(2), "Welcome's and Memcached's mutating webhooks at v1")
	Expect(vcopies.Webhooks).To(HaveLen(3), "Welcome's, Memcached's and the AdmissionPolicy's validating webhooks at v1")
}

// restoreWebhooks puts back the webhooks of a configuration as they were.
func restoreWebhooks(ctx SpecContext, original client.Object) {
	Eventually(func(g Gomega) {
		current := original.DeepCopyObject().(client.Object)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(original), current)).To(Succeed())
		restored := original.DeepCopyObject().(client.Object)
		restored.SetResourceVersion(current.GetResourceVersion())
		g.Expect(k8s.Update(ctx, restored)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}
