package integration

import (
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

func newMemcached(namespace, name string, size *int32) *cachev1.Memcached {
	return &cachev1.Memcached{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       cachev1.MemcachedSpec{Size: size},
	}
}

// expectInvalidSize asserts err is one 422 naming spec.size with the value and the allowed range.
func expectInvalidSize(err error, size int32) {
	GinkgoHelper()
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
	Expect(causes(err)).To(ConsistOf("spec.size"))
	Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("spec.size: Invalid value: %d: must be between 1 and 3", size)))
}

// scaleMemcached writes the scale subresource, as `kubectl scale memcached/<name> --replicas=n` does.
func scaleMemcached(ctx SpecContext, m *cachev1.Memcached, replicas int32) error {
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
	return k8s.SubResource("scale").Update(ctx, m, client.WithSubResourceBody(scale))
}

var _ = Describe("Memcached admission", admission, func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("fills size and containerPort on create", func(ctx SpecContext) {
		m := newMemcached(ns, "defaults", nil)
		Expect(k8s.Create(ctx, m)).To(Succeed())
		stored := &cachev1.Memcached{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), stored)).To(Succeed())
		Expect(stored.Spec).To(Equal(cachev1.MemcachedSpec{Size: ptr.To[int32](1), ContainerPort: ptr.To[int32](11211)}))
	})

	DescribeTable("refuses a size outside 1-3 and stores nothing",
		func(ctx SpecContext, size int32) {
			m := newMemcached(ns, fmt.Sprintf("size-%d", size+10), ptr.To(size))
			expectInvalidSize(k8s.Create(ctx, m), size)
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &cachev1.Memcached{}))).To(BeTrue())
		},
		Entry("0", int32(0)),
		Entry("4", int32(4)),
	)

	It("refuses a negative size through the API server's own scale subresource check", func(ctx SpecContext) {
		// spec.size is the scale subresource's specReplicasPath, and kube-apiserver refuses a
		// negative replica count there before any validating webhook is called.
		m := newMemcached(ns, "negative", ptr.To[int32](-1))
		err := k8s.Create(ctx, m)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf(".spec.size"))
		Expect(err.Error()).To(ContainSubstring(".spec.size: Invalid value: -1: should be a non-negative integer"))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &cachev1.Memcached{}))).To(BeTrue())
	})

	DescribeTable("accepts a size of 1 to 3",
		func(ctx SpecContext, size int32) {
			m := newMemcached(ns, fmt.Sprintf("size-%d", size), ptr.To(size))
			Expect(k8s.Create(ctx, m)).To(Succeed())
			Expect(m.Spec.Size).To(HaveValue(Equal(size)))
		},
		Entry("1", int32(1)),
		Entry("2", int32(2)),
		Entry("3", int32(3)),
	)

	It("names every bad field in one reply", func(ctx SpecContext) {
		m := newMemcached(ns, "both", ptr.To[int32](9))
		m.Spec.ContainerPort = ptr.To[int32](0)
		err := k8s.Create(ctx, m)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.size", "spec.containerPort"))
	})

	It("refuses growing past 3 by update, merge patch, server-side apply and the scale subresource, and allows shrinking", func(ctx SpecContext) {
		m := newMemcached(ns, "grow", ptr.To[int32](3))
		Expect(k8s.Create(ctx, m)).To(Succeed())

		By("update")
		grown := m.DeepCopy()
		expectInvalidSize(update(ctx, grown, func() { grown.Spec.Size = ptr.To[int32](4) }), 4)

		By("merge patch, as kubectl patch sends it")
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"size":4}}`))
		expectInvalidSize(k8s.Patch(ctx, m.DeepCopy(), patch), 4)

		By("server-side apply, as kubectl apply --server-side sends it")
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: cache.seedlabs.dev/v1alpha1
kind: Memcached
metadata: {name: grow, namespace: %s}
spec: {size: 4}
`, ns)), &u.Object)).To(Succeed())
		expectInvalidSize(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.ForceOwnership), 4)

		By("the scale subresource, as kubectl scale writes it")
		expectInvalidSize(scaleMemcached(ctx, m, 4), 4)

		stored := &cachev1.Memcached{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), stored)).To(Succeed())
		Expect(stored.Spec.Size).To(HaveValue(BeEquivalentTo(3)))

		By("shrinking through the scale subresource")
		Expect(scaleMemcached(ctx, m, 2)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), stored)).To(Succeed())
		Expect(stored.Spec.Size).To(HaveValue(BeEquivalentTo(2)))

		By("never below 1")
		expectInvalidSize(scaleMemcached(ctx, m, 0), 0)
	})
})

var _ = Describe("Memcached controller", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	getDeployment := func(g Gomega, ctx SpecContext, name string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
		return d
	}
	getMemcached := func(g Gomega, ctx SpecContext, name string) *cachev1.Memcached {
		m := &cachev1.Memcached{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m)).To(Succeed())
		return m
	}
	// podFor creates a running, ready pod as the ReplicaSet controller and kubelet would, carrying
	// the Deployment's pod template labels.
	podFor := func(ctx SpecContext, d *appsv1.Deployment, name string) *corev1.Pod {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: d.Spec.Template.Labels},
			Spec:       *d.Spec.Template.Spec.DeepCopy(),
		}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		pod.Status = corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
		return pod
	}

	It("runs exactly size memcached pods behind a ClusterIP Service", func(ctx SpecContext) {
		m := newMemcached(ns, "pool", ptr.To[int32](2))
		Expect(k8s.Create(ctx, m)).To(Succeed())

		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "pool")
			g.Expect(d.OwnerReferences).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Kind": Equal("Memcached"), "Name": Equal("pool"), "UID": Equal(m.UID), "Controller": HaveValue(BeTrue()),
			})))
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(Equal(testenv.MemcachedImage))
			// The "-m=64" reads as "-m" with the value "=64" (0 MB) and memcached refuses to
			// start, so the memory limit is spelled out.
			g.Expect(slices.Concat(c.Command, c.Args)).To(Equal(
				[]string{"memcached", "--memory-limit=64", "-o", "modern", "-v", "--port=11211"}))
			g.Expect(c.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(11211)})))
			g.Expect(c.LivenessProbe.TCPSocket).NotTo(BeNil())
			sc := d.Spec.Template.Spec.SecurityContext
			g.Expect(sc.RunAsUser).To(HaveValue(BeEquivalentTo(1001)))
			g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			s := &corev1.Service{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), s)).To(Succeed())
			g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(s.Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"Port": BeEquivalentTo(11211)})))
			g.Expect(s.Spec.Selector).To(Equal(getDeployment(g, ctx, "pool").Spec.Selector.MatchLabels))
		}).Should(Succeed())

		By("carrying no finalizer, so nothing but the API server decides when it goes")
		Expect(getMemcached(Default, ctx, "pool").Finalizers).To(BeEmpty())
	})

	It("puts a Deployment scaled by hand back to size", func(ctx SpecContext) {
		m := newMemcached(ns, "drift", ptr.To[int32](3))
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) { getDeployment(g, ctx, "drift") }).Should(Succeed())

		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drift"}}
		Expect(k8s.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(&autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drift"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5},
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getDeployment(g, ctx, "drift").Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		}).Should(Succeed())
	})

	It("follows kubectl scale on the Memcached", func(ctx SpecContext) {
		m := newMemcached(ns, "scaled", ptr.To[int32](1))
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) { getDeployment(g, ctx, "scaled") }).Should(Succeed())
		Expect(scaleMemcached(ctx, m, 3)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getDeployment(g, ctx, "scaled").Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		}).Should(Succeed())
	})

	It("lists its pods, sorted, and reports availability", func(ctx SpecContext) {
		m := newMemcached(ns, "status", ptr.To[int32](2))
		Expect(k8s.Create(ctx, m)).To(Succeed())
		var d *appsv1.Deployment
		Eventually(func(g Gomega) { d = getDeployment(g, ctx, "status") }).Should(Succeed())

		By("creating the pods and the Deployment status the controllers envtest lacks would write")
		podFor(ctx, d, "status-b")
		podFor(ctx, d, "status-a")
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			}},
		}
		Expect(k8s.Status().Update(ctx, d)).To(Succeed())

		Eventually(func(g Gomega) {
			got := getMemcached(g, ctx, "status")
			g.Expect(got.Status.Nodes).To(Equal([]string{"status-a", "status-b"}))
			g.Expect(got.Status.Replicas).To(BeEquivalentTo(2))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Conditions).To(ContainElements(
				condition(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, got.Generation),
				condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, got.Generation),
			))
		}).Should(Succeed())

		By("following a pod that goes away")
		Expect(k8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "status-b"}},
			client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getMemcached(g, ctx, "status").Status.Nodes).To(Equal([]string{"status-a"}))
		}).Should(Succeed())
	})

	It("takes off the finalizer an earlier version put on, and lets the object go", func(ctx SpecContext) {
		m := newMemcached(ns, "finalized", ptr.To[int32](1))
		m.Finalizers = []string{cachev1.Finalizer, "example.com/backup"}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getMemcached(g, ctx, "finalized").Finalizers).To(Equal([]string{"example.com/backup"}))
			getDeployment(g, ctx, "finalized")
		}).Should(Succeed())

		By("deleting it once the other finalizer's owner lets go")
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Expect(update(ctx, m, func() { m.Finalizers = nil })).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &cachev1.Memcached{}))
		}).Should(BeTrue())
	})

	It("never rolls out a stored size above 3, and says why", func(ctx SpecContext) {
		bypassValidation(ctx, ns)
		m := newMemcached(ns, "legacy", ptr.To[int32](5))
		Eventually(func() error { return k8s.Create(ctx, m) }).Should(Succeed())

		Eventually(func(g Gomega) {
			got := getMemcached(g, ctx, "legacy")
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditions.Stalled)
			g.Expect(stalled).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Status": Equal(metav1.ConditionTrue), "Reason": Equal(conditions.ReasonInvalidSpec),
				"ObservedGeneration": Equal(got.Generation),
			})))
			g.Expect(stalled.Message).To(ContainSubstring("spec.size: Invalid value: 5: must be between 1 and 3"))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &appsv1.Deployment{}))).To(BeTrue())
	})
})
