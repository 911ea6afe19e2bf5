package integration

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// replicasCapped is how the API server words the refusal of 101 replicas, and a Warned rule's warning.
const replicasCapped = "spec.replicas: Invalid value: 101: must be at most 100; lower it, or ask a cluster admin to raise the cap: " +
	"the AdmissionPolicy's maxReplicas raises it, and setting this rule to Warn lifts it (rule %s)"

// storeHeldBackWelcome stores, past the webhook, the Welcome "stored" of replicas over the cap, and
// waits until its controller holds it back.
func storeHeldBackWelcome(ctx SpecContext, ns string, replicas int32) *authv1.Welcome {
	GinkgoHelper()
	restore := bypassValidation(ctx, ns)
	stored := newWelcome(ns, "stored", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To(replicas)})
	Eventually(func() error { return k8s.Create(ctx, stored) }).WithContext(ctx).Should(Succeed())
	restore()
	Eventually(func(g Gomega) { expectHeldBack(g, ctx, stored, webhooks.WelcomeReplicasMax) }).WithContext(ctx).Should(Succeed())
	return stored
}

var _ = Describe("The size limits", admission, func() {
	const validate = "/validate-auth-seedlabs-dev-v1alpha1-welcome"

	It("admit a Welcome at every limit without calling its validating webhook, and refuse one past them in one 422 naming every field and rule", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		atLimits := newWelcome(ns, "at-limits", authv1.WelcomeSpec{
			Name:     strings.Repeat("€", 85) + "a", // 256 bytes
			Email:    strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com",
			Groups:   fixtures.GroupsOf(32, 256),
			Replicas: ptr.To[int32](100),
		})
		before := webhookCalls(validate)
		Expect(k8s.Create(ctx, atLimits)).To(Succeed())
		Expect(webhookCalls(validate)).To(Equal(before), "a Welcome at the limits, which can only be admitted, called the validating webhook")

		By("refusing a name of 257 bytes and 101 replicas, each under its rule")
		past := newWelcome(ns, "past-limits", authv1.WelcomeSpec{Name: strings.Repeat("n", 257), Replicas: ptr.To[int32](101)})
		err := k8s.Create(ctx, past)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.name", "spec.replicas"))
		Expect(err.Error()).To(ContainSubstring("spec.name: Too long: is 257 bytes, more than the 256 allowed; shorten the name to greet (rule welcome.name.length)"))
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(replicasCapped, webhooks.WelcomeReplicasMax)))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(past), &authv1.Welcome{}))).To(BeTrue())

		By("refusing what CEL's size() counts as short: a name and a group of 87 characters, 86 of 3 bytes")
		multibyte := strings.Repeat("€", 86) + "a"
		err = k8s.Create(ctx, newWelcome(ns, "multibyte", authv1.WelcomeSpec{Name: multibyte, Groups: []string{multibyte}}))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.name", "spec.groups[0]"))
		Expect(err.Error()).To(ContainSubstring("spec.groups[0]: Too long: is 259 bytes, more than the 256 allowed; shorten the group name (rule welcome.groups.size)"))

		By("refusing 33 groups, an email of 255 bytes and a password of 257 bytes")
		err = k8s.Create(ctx, withPassword(newWelcome(ns, "many", authv1.WelcomeSpec{
			Name:   "Ada",
			Groups: fixtures.GroupsOf(33, 8),
			Email:  strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com",
		}), strings.Repeat("p", 257)))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.groups", "spec.email", passwordAtV1))
		Expect(err.Error()).To(ContainSubstring("spec.groups: Too many: 33: must have at most 32 groups; keep only the ones the app needs (rule welcome.groups.size)"))
		Expect(err.Error()).To(ContainSubstring("(rule welcome.email.format)"))
		Expect(err.Error()).To(ContainSubstring("(rule welcome.password.length)"))
	})

	It("admit a DeployObject at every limit, and refuse 101 variables, a value of 33 KiB and 101 replicas", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		atLimits := newDeployObject(ns, "at-limits", "docker.io/library/nginx:1.27", httpPort(8080))
		atLimits.Spec.Replicas = ptr.To[int32](100)
		atLimits.Spec.Env = append(fixtures.EnvOf(99, 1), corev1.EnvVar{Name: "BIG", Value: strings.Repeat("v", 32<<10)})
		Expect(k8s.Create(ctx, atLimits)).To(Succeed())

		tooMany := newDeployObject(ns, "too-many", "docker.io/library/nginx:1.27", httpPort(8080))
		tooMany.Spec.Env = fixtures.EnvOf(101, 1)
		err := k8s.Create(ctx, tooMany)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.env"))
		Expect(err.Error()).To(ContainSubstring("spec.env: Too many: 101: must have at most 100 variables; drop the ones the app does not read (rule deployobject.env.size)"))

		tooLong := newDeployObject(ns, "too-long", "docker.io/library/nginx:1.27", httpPort(8080))
		tooLong.Spec.Replicas = ptr.To[int32](101)
		tooLong.Spec.Env = fixtures.EnvOf(1, 33<<10)
		err = k8s.Create(ctx, tooLong)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.replicas", "spec.env[0].value"))
		Expect(err.Error()).To(ContainSubstring("spec.env[0].value: Too long: is 33792 bytes, more than the 32768 allowed; " +
			"read a long value from a ConfigMap with valueFrom.configMapKeyRef (rule deployobject.env.size)"))
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(replicasCapped, webhooks.DeployObjectReplicasMax)))
		for _, name := range []string{"too-many", "too-long"} {
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appv1.DeployObject{}))).To(BeTrue(), "%s was stored", name)
		}
	})

	It("are raised by an AdmissionPolicy: Warned, 101 replicas are admitted with a warning and rolled out, and a spec the controller held back rolls out too", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		ns := newNamespace(ctx)
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		replicasOf := func(g Gomega, name string) *int32 {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
			return d.Spec.Replicas
		}

		By("holding back, under the default policy, a Welcome of 101 replicas stored past the webhook")
		stored := storeHeldBackWelcome(ctx, ns, 101)
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(stored), &appsv1.Deployment{}))).To(BeTrue(),
			"a spec that breaks an Enforced size limit was rolled out")

		By("admitting 101 replicas with a warning once the policy Warns about the rule")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeReplicasMax, policyv1.Warn)}})
		raised := newWelcome(ns, "raised", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](101)})
		Eventually(func(g Gomega) {
			warnings.Take()
			g.Expect(c.Create(ctx, raised.DeepCopy())).To(Succeed())
			g.Expect(warnings.Take()).To(ContainElement(fmt.Sprintf(replicasCapped, webhooks.WelcomeReplicasMax)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("rolling out 101 replicas, for the new Welcome and the one held back, each Compliant False under Warn")
		Eventually(func(g Gomega) {
			for _, name := range []string{"raised", "stored"} {
				g.Expect(replicasOf(g, name)).To(HaveValue(Equal(int32(101))), "the Deployment of %s", name)
				w := &authv1.Welcome{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, conditions.Stalled)).To(BeFalse(), "%s is Degraded", name)
				compliant := meta.FindStatusCondition(w.Status.Conditions, conditions.Compliant)
				g.Expect(compliant).NotTo(BeNil())
				g.Expect(compliant.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(compliant.Message).To(HavePrefix("breaks welcome.replicas.max (Warn): "))
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("refusing 101 replicas again once the policy is gone")
		deletePolicy(ctx)
		Eventually(func(g Gomega) {
			err := c.Create(ctx, newWelcome(ns, "probe", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](101)}), client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(causes(err)).To(ConsistOf("spec.replicas"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("are raised by the AdmissionPolicy's maxReplicas for both kinds, and the controllers roll out what the raised cap admits", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		ns := newNamespace(ctx)
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())

		By("refusing, in the CRD's schema, a maxReplicas that would lower the cap")
		lowered := &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
			Spec: policyv1.AdmissionPolicySpec{MaxReplicas: ptr.To[int32](50)}}
		err = k8s.Create(ctx, lowered, client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.maxReplicas"))

		By("holding back, under the default cap, a Welcome of 120 replicas stored past the webhook")
		stored := storeHeldBackWelcome(ctx, ns, 120)

		By("admitting 150 replicas of each kind, with no warning, under maxReplicas 150")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{MaxReplicas: ptr.To[int32](150)})
		welcome := newWelcome(ns, "raised", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](150)})
		deployObject := newDeployObject(ns, "raised-app", "docker.io/library/nginx:1.27", httpPort(8080))
		deployObject.Spec.Replicas = ptr.To[int32](150)
		Eventually(func(g Gomega) {
			warnings.Take()
			g.Expect(c.Create(ctx, welcome.DeepCopy(), client.DryRunAll)).To(Succeed())
			g.Expect(c.Create(ctx, deployObject.DeepCopy(), client.DryRunAll)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(c.Create(ctx, welcome)).To(Succeed())
		Expect(c.Create(ctx, deployObject)).To(Succeed())
		Expect(warnings.Take()).To(BeEmpty())

		By("refusing 151 replicas of each kind, naming the raised cap")
		tooMany := newWelcome(ns, "too-many", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](151)})
		tooManyApp := newDeployObject(ns, "too-many-app", "docker.io/library/nginx:1.27", httpPort(8080))
		tooManyApp.Spec.Replicas = ptr.To[int32](151)
		for _, obj := range []client.Object{tooMany, tooManyApp} {
			err := c.Create(ctx, obj, client.DryRunAll)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			Expect(causes(err)).To(ConsistOf("spec.replicas"))
			Expect(err.Error()).To(ContainSubstring("spec.replicas: Invalid value: 151: must be at most 150; "))
		}

		By("rolling out the admitted objects and the Welcome held back, each Compliant")
		Eventually(func(g Gomega) {
			for name, want := range map[string]int32{"raised": 150, "raised-app": 150, "stored": 120} {
				d := &appsv1.Deployment{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
				g.Expect(d.Spec.Replicas).To(HaveValue(Equal(want)), "the Deployment of %s", name)
			}
			for _, obj := range []conditioned{stored, welcome, deployObject} {
				g.Expect(storedConditionOf(g, ctx, obj, conditions.Stalled)).To(Or(BeNil(), HaveField("Status", metav1.ConditionFalse)))
				g.Expect(conditionOf(g, ctx, obj, conditions.Compliant).Status).To(Equal(metav1.ConditionTrue))
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
