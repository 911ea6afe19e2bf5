package integration

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
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

var _ = Describe("Objects in the namespaces the webhooks never see", func() {
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
		Eventually(func(g Gomega) { expectHeldBack(g, ctx, d, "deployobject.image.pinned") }).Should(Succeed())
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
			authv1.WelcomeSpec{Name: "Ada", Image: forbidden, ServiceType: corev1.ServiceTypeClusterIP})
		createExcluded(ctx, d)
		createExcluded(ctx, w)

		for _, c := range []struct {
			obj  conditioned
			kind string
			rule string
		}{
			{d, "DeployObject", "deployobject.image.registry"},
			{w, "Welcome", "welcome.image.registry"},
		} {
			By("rolling out the " + c.kind + "'s image " + forbidden)
			Eventually(func(g Gomega) {
				dep := &appsv1.Deployment{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c.obj), dep)).To(Succeed())
				g.Expect(dep.Spec.Template.Spec.Containers).To(ConsistOf(HaveField("Image", forbidden)))
				g.Expect(storedConditionOf(g, ctx, c.obj, conditions.Stalled)).To(
					Or(BeNil(), HaveField("Reason", Not(Equal(conditions.ReasonInvalidSpec)))))
			}).Should(Succeed())

			By("reporting it in the " + c.kind + "'s Compliant condition and a PolicyViolation Event")
			Eventually(func(g Gomega) {
				compliant := conditionOf(g, ctx, c.obj, conditions.Compliant)
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
