package integration

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// appliesOf is how many applies of kind (Deployment, Service) the suite's manager made, with
// result applied or skipped (webhook_operator_applies_total).
func appliesOf(kind, result string) float64 {
	return counterValue("webhook_operator_applies_total", map[string]string{"kind": kind, "result": result})
}

var _ = Describe("What the cache keeps of a custom resource's children", func() {
	It("tells a resync it can change nothing, a hand-added annotation too, and a hand edit of a field the operator sets that it can", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		ns := newNamespace(ctx)
		d := newDeployObject(ns, "held", "registry.local:5000/app:1.0", httpPort(80), corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})
		d.Spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "test"}, {Name: "EMPTY"}}
		d.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
		for _, obj := range []client.Object{
			d,
			newWelcome(ns, "held-web", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)}),
			newMemcached(ns, "held-pool", ptr.To[int32](2)),
		} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns))).To(Succeed())
			for _, name := range []string{"held", "held-web", "held-pool"} {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{})).To(Succeed())
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{})).To(Succeed())
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("waiting until the manager applies nothing more")
		quiet := func() {
			// The first poll has nothing to compare with: it takes 2 s without an apply.
			applied := -1.0
			Eventually(func() float64 {
				before := applied
				applied = appliesOf("Deployment", "applied") + appliesOf("Service", "applied")
				return applied - before
			}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(2 * time.Second).Should(BeZero())
		}
		quiet()

		By("looking at every object again, as a new leader or a change of the policy does: every apply is left out")
		applied := appliesOf("Deployment", "applied") + appliesOf("Service", "applied")
		skipped := appliesOf("Deployment", "skipped")
		setPolicy(ctx, policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Warn)}})
		Eventually(func() float64 { return appliesOf("Deployment", "skipped") - skipped }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically(">=", 3), "the three objects reconciled again")
		Consistently(func() float64 { return appliesOf("Deployment", "applied") + appliesOf("Service", "applied") - applied }).
			WithContext(ctx).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(BeZero(), "a resync applies nothing")

		By("starting a new manager, as a new leader does: its cache tells it every apply is left out")
		skipped = appliesOf("Deployment", "skipped")
		Expect(env.RestartManager()).To(Succeed())
		Eventually(func() float64 { return appliesOf("Deployment", "skipped") - skipped }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically(">=", 3), "the three objects reconciled by the new manager")
		Consistently(func() float64 { return appliesOf("Deployment", "applied") + appliesOf("Service", "applied") - applied }).
			WithContext(ctx).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(BeZero(), "a new leader applies nothing")

		By("annotating the Deployment by hand, as another field manager: still nothing to apply")
		skipped = appliesOf("Deployment", "skipped")
		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, dep)).To(Succeed())
		note := client.MergeFrom(dep.DeepCopy())
		dep.Annotations["team.example.com/note"] = "hand-added"
		Expect(k8s.Patch(ctx, dep, note, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(func() float64 { return appliesOf("Deployment", "skipped") - skipped }).
			WithContext(ctx).WithTimeout(30*time.Second).Should(BeNumerically(">=", 1), "the change reconciled the DeployObject")
		Expect(appliesOf("Deployment", "applied") + appliesOf("Service", "applied") - applied).To(BeZero())

		By("changing by hand a field the operator sets: it is applied again, and put back")
		edit := client.MergeFrom(dep.DeepCopy())
		dep.Spec.Template.Spec.Containers[0].Image = "registry.local:5000/app:0.9"
		Expect(k8s.Patch(ctx, dep, edit, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.local:5000/app:1.0"))
			// Inside the Eventually: an apply is counted once the API server has answered it, so the
			// Deployment can show it before the counter does.
			g.Expect(appliesOf("Deployment", "applied") + appliesOf("Service", "applied") - applied).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(dep.Annotations).To(HaveKeyWithValue("team.example.com/note", "hand-added"), "what the operator does not set stays")
		Expect(dep.Annotations).NotTo(HaveKey("webhook-operator.seedlabs.dev/held"), "the hash is the cache's, never the object's")
	})
})
