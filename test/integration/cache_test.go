package integration

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

var _ = Describe("The manager's cache", func() {
	It("keeps a Welcome's Deployment whole, and of a Deployment that only carries the operator's label its name and controller", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		cached := env.Manager.GetCache()

		By("keeping of a labelled Deployment no custom resource controls only what identifies it")
		labels := map[string]string{"app": "padded"}
		padded := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "padded",
				Labels:      map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelInstance: "padded", "padding": "x"},
				Annotations: map[string]string{"padding": strings.Repeat("x", 64<<10)},
			},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "padded", Image: "registry.example.test/padded:1",
						Env: []corev1.EnvVar{{Name: "PADDING", Value: strings.Repeat("x", 512<<10)}},
					}}},
				},
			},
		}
		Expect(k8s.Create(ctx, padded)).To(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(padded), d)).To(Succeed())
			g.Expect(d.UID).To(Equal(padded.UID))
			g.Expect(d.Labels).To(Equal(map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelInstance: "padded"}))
			g.Expect(d.Annotations).To(BeEmpty())
			g.Expect(d.Spec).To(BeZero())
		}).WithContext(ctx).Should(Succeed())

		By("keeping a Welcome's Deployment and Service whole, for the apply to compare with")
		w := newWelcome(ns, "kept", authv1alpha1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(w), d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
			g.Expect(d.Annotations).To(HaveKey("webhook-operator.seedlabs.dev/desired-hash"))
			g.Expect(d.ManagedFields).To(BeEmpty())
			s := &corev1.Service{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(w), s)).To(Succeed())
			g.Expect(s.Spec.Ports).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
	})
})
