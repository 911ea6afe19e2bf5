package integration

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

var _ = Describe("The manager's cache", func() {
	It("keeps of a Welcome's Deployment and Service what a reconcile reads and what the operator holds of them, of a Welcome no labels or annotations, and of a Deployment that only carries the operator's label its name and controller", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// The manager's client reads from its cache: the custom resources as the cache keeps them,
		// and a Deployment or Service as a reconcile reads what the cache keeps of it.
		cached := env.Manager.GetClient()

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
			g.Expect(d.Labels).To(BeEmpty(), "the cache's label selector has read them")
			g.Expect(d.Annotations).To(BeEmpty())
			g.Expect(d.Spec).To(BeZero())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("keeping of a Welcome's Deployment and Service what a reconcile reads, and the hash of what the operator holds")
		w := newWelcome(ns, "kept", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)})
		w.Labels = map[string]string{"team": "web"}
		w.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 64<<10)}
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(w), d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(d.Spec.Template.Spec.Containers).To(BeEmpty(), "the pod template is not kept")
			g.Expect(d.Annotations).To(HaveKey(apply.AnnotationHeld))
			g.Expect(d.ManagedFields).To(BeEmpty())
			s := &corev1.Service{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(w), s)).To(Succeed())
			g.Expect(s.Spec.Ports).To(ConsistOf(HaveField("NodePort", BeNumerically(">", 0))), "the node port the API server allocated")
			g.Expect(s.Spec.Selector).To(BeEmpty(), "the selector is not kept")
			g.Expect(s.Annotations).To(HaveKey(apply.AnnotationHeld))
			kept := &authv1.Welcome{}
			g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(w), kept)).To(Succeed())
			g.Expect(kept.Labels).To(BeEmpty())
			g.Expect(kept.Annotations).To(BeEmpty())
			g.Expect(kept.Spec.Name).To(Equal("Ada"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
