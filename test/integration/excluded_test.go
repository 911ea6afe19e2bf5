package integration

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/api/conditions"
)

// excludedNamespace is a namespace config/webhook/namespace_selector.yaml keeps every webhook away from.
const excludedNamespace = metav1.NamespaceSystem

// createExcluded creates obj in the excluded namespace, and deletes it, its Deployment and its
// Service when the spec ends: envtest runs no garbage collector.
func createExcluded(ctx SpecContext, obj client.Object) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		key := client.ObjectKeyFromObject(obj)
		for _, o := range []client.Object{obj, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}} {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed())
		}
	})
}

// compliantOf is the Compliant condition of the stored obj, once the controller wrote one for its generation.
func compliantOf(g Gomega, ctx SpecContext, obj client.Object, conds func(client.Object) []metav1.Condition) *metav1.Condition {
	got := emptyOf(obj)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	c := meta.FindStatusCondition(conds(got), conditions.Compliant)
	g.Expect(c).NotTo(BeNil(), "no Compliant condition yet")
	g.Expect(c.ObservedGeneration).To(Equal(got.GetGeneration()))
	return c
}

var _ = Describe("Objects in the namespaces the webhooks never see", Serial, func() {
	deployObjectConditions := func(obj client.Object) []metav1.Condition { return obj.(*appv1.DeployObject).Status.Conditions }
	welcomeConditions := func(obj client.Object) []metav1.Condition { return obj.(*authv1alpha1.Welcome).Status.Conditions }
	// quay.io is not among fixtures.AllowedRegistries, the suite manager's --allowed-registries.
	const forbidden = "quay.io/team/app:1.0"

	BeforeEach(func(ctx SpecContext) { installNamespaceSelector(ctx, "webhook-operator-system") })

	It("are stored without the webhooks' defaults or checks, and a spec that breaks an Enforced rule is held back by the controller", func(ctx SpecContext) {
		mutate, validate := "/mutate-app-seedlabs-dev-v1-deployobject", "/validate-app-seedlabs-dev-v1-deployobject"
		By("refusing the moving tag elsewhere, as admission does")
		elsewhere := newDeployObject(newNamespace(ctx), "moving", "nginx:latest", httpPort(80))
		err := k8s.Create(ctx, elsewhere)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)

		By("storing it in " + excludedNamespace + " as sent, with no webhook called")
		d := newDeployObject(excludedNamespace, "excluded-moving", "nginx:latest", httpPort(80))
		calls := webhookCalls(mutate) + webhookCalls(validate)
		createExcluded(ctx, d)
		Expect(webhookCalls(mutate)+webhookCalls(validate)).To(Equal(calls), "a webhook was called")
		stored := &appv1.DeployObject{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), stored)).To(Succeed())
		Expect(stored.Spec.Image).To(Equal("nginx:latest"))
		Expect(stored.Spec.Ports[0].TargetPort).To(Equal(intstr.IntOrString{}), "the mutating webhook would have set targetPort to the port")

		By("holding it back as InvalidSpec, with nothing rolled out")
		Eventually(func(g Gomega) {
			stalled := stalledOf(g, ctx, safetyKinds[2], d)
			g.Expect(stalled.Reason).To(Equal(conditions.ReasonInvalidSpec))
			g.Expect(stalled.Message).To(ContainSubstring("(rule deployobject.image.pinned)"))
		}).Should(Succeed())
		expectEvent(ctx, excludedNamespace, "DeployObject", d.Name, conditions.ReasonInvalidSpec, "(rule deployobject.image.pinned)")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &corev1.Service{}))).To(BeTrue())
	})

	It("roll out an image from a registry the allow-list does not name: the controller only reports it as not Compliant", func(ctx SpecContext) {
		By("refusing the registry elsewhere, as admission does")
		err := k8s.Create(ctx, newDeployObject(newNamespace(ctx), "app", forbidden, httpPort(80)), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("(rule deployobject.image.registry)"))

		d := newDeployObject(excludedNamespace, "excluded-registry", forbidden, httpPort(80))
		w := newWelcome(excludedNamespace, "excluded-registry-welcome",
			authv1alpha1.WelcomeSpec{Name: "Ada", Image: forbidden, ServiceType: corev1.ServiceTypeClusterIP})
		createExcluded(ctx, d)
		createExcluded(ctx, w)

		for _, c := range []struct {
			obj   client.Object
			kind  string
			rule  string
			conds func(client.Object) []metav1.Condition
		}{
			{d, "DeployObject", "deployobject.image.registry", deployObjectConditions},
			{w, "Welcome", "welcome.image.registry", welcomeConditions},
		} {
			By("rolling out the " + c.kind + "'s image " + forbidden)
			Eventually(func(g Gomega) {
				dep := &appsv1.Deployment{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c.obj), dep)).To(Succeed())
				g.Expect(dep.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", forbidden)))
				got := emptyOf(c.obj)
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c.obj), got)).To(Succeed())
				g.Expect(meta.FindStatusCondition(c.conds(got), conditions.Stalled)).To(
					Or(BeNil(), HaveField("Reason", Not(Equal(conditions.ReasonInvalidSpec)))))
			}).Should(Succeed())

			By("reporting it in the " + c.kind + "'s Compliant condition and a PolicyViolation Event")
			Eventually(func(g Gomega) {
				compliant := compliantOf(g, ctx, c.obj, c.conds)
				g.Expect(compliant.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(compliant.Reason).To(Equal(conditions.ReasonRulesBroken))
				g.Expect(compliant.Message).To(And(HavePrefix("breaks "+c.rule+" (Enforce): "),
					ContainSubstring("is pulled from registry quay.io, which is not allowed")))
			}).Should(Succeed())
			expectEvent(ctx, excludedNamespace, c.kind, c.obj.GetName(), conditions.EventReasonPolicyViolation,
				"the spec breaks "+c.rule+" (Enforce)")
		}
	})
})
