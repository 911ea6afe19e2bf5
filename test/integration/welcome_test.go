package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/testenv"
)

func newWelcome(namespace, name string, spec authv1.WelcomeSpec) *authv1.Welcome {
	return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// newWelcomeV1alpha1 is newWelcome at v1alpha1, which is deprecated and still served.
func newWelcomeV1alpha1(namespace, name string, spec authv1alpha1.WelcomeSpec) *authv1alpha1.Welcome {
	return &authv1alpha1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// withPassword is w with a v1alpha1 Welcome's password where v1 keeps it: in its conversion-data
// annotation, which the webhooks name it by (passwordAtV1).
func withPassword(w *authv1.Welcome, password string) *authv1.Welcome {
	data, err := json.Marshal(map[string]any{"spec": map[string]string{"password": password}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, authv1.ConversionDataAnnotation, string(data))
	return w
}

// passwordAtV1 is the field the webhooks name a v1 Welcome's password by.
const passwordAtV1 = "metadata.annotations[auth.seedlabs.dev/conversion-data].spec.password"

// welcomeDeprecated is the warning kube-apiserver sends a client of a v1alpha1 Welcome.
const welcomeDeprecated = "auth.seedlabs.dev/v1alpha1 Welcome is deprecated; use auth.seedlabs.dev/v1 (kubectl webhook-operator convert)"

// causes returns the field of every cause of a 422 Invalid error.
func causes(err error) []string {
	var status apierrors.APIStatus
	ExpectWithOffset(1, errors.As(err, &status)).To(BeTrue(), "error %v is not an API status", err)
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

var _ = Describe("Welcome admission", admission, func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("fills replicas, port and serviceType on create", func(ctx SpecContext) {
		w := newWelcome(ns, "defaults", authv1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())

		stored := &authv1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), stored)).To(Succeed())
		Expect(stored.Spec).To(Equal(authv1.WelcomeSpec{
			Name:        "Ada",
			Replicas:    ptr.To[int32](1),
			Port:        ptr.To[int32](8088),
			ServiceType: corev1.ServiceTypeNodePort,
		}))
	})

	It("keeps the values the user set at v1alpha1, including replicas 0, and warns that the version is deprecated, and about replicas 0 and a password", func(ctx SpecContext) {
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		spec := authv1alpha1.WelcomeSpec{
			Name:        "Grace",
			Password:    "hunter2",
			Replicas:    ptr.To[int32](0),
			Port:        ptr.To[int32](9090),
			ServiceType: corev1.ServiceTypeClusterIP,
		}
		w := newWelcomeV1alpha1(ns, "kept", spec)
		Expect(c.Create(ctx, w)).To(Succeed())
		Expect(w.Spec).To(Equal(spec))
		Expect(warnings.Take()).To(ConsistOf(
			welcomeDeprecated,
			"spec.password is stored unencrypted in etcd and shown to anyone who can read this Welcome; keep secrets in a Secret instead (rule welcome.password.plaintext)",
			"spec.replicas is 0: no web server pod will run until it is raised (rule welcome.replicas.zero)",
		))
	})

	It("refuses an invalid Welcome with one 422 naming every bad field, and stores nothing", func(ctx SpecContext) {
		w := newWelcome(ns, "invalid", authv1.WelcomeSpec{
			Name:        " ",
			UserID:      ptr.To[int32](0),
			Groups:      []string{"dev", "", "dev"},
			Email:       "not-an-email",
			Replicas:    ptr.To[int32](-1),
			Port:        ptr.To[int32](70000),
			ServiceType: corev1.ServiceTypeExternalName,
		})
		err := k8s.Create(ctx, w)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		var status apierrors.APIStatus
		Expect(errors.As(err, &status)).To(BeTrue())
		Expect(status.Status().Code).To(BeEquivalentTo(http.StatusUnprocessableEntity))
		Expect(causes(err)).To(ConsistOf(
			"spec.name", "spec.userID", "spec.groups[1]", "spec.groups[2]", "spec.email",
			"spec.replicas", "spec.port", "spec.serviceType",
		))
		Expect(err.Error()).To(ContainSubstring(`spec.port: Invalid value: 70000: must be between 1 and 65535`))

		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &authv1.Welcome{}))).To(BeTrue())
	})

	It("refuses an update that breaks a rule and keeps the stored object", func(ctx SpecContext) {
		w := newWelcome(ns, "update", authv1.WelcomeSpec{Name: "Linus"})
		Expect(k8s.Create(ctx, w)).To(Succeed())

		err := update(ctx, w, func() {
			w.Spec.Port = ptr.To[int32](0)
			w.Spec.Email = "linus@"
		})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.port", "spec.email"))

		stored := &authv1.Welcome{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), stored)).To(Succeed())
		Expect(stored.Spec.Port).To(HaveValue(BeEquivalentTo(8088)))
		Expect(stored.Spec.Email).To(BeEmpty())
	})

	It("shows defaults on a server-side dry run and stores nothing", func(ctx SpecContext) {
		w := newWelcome(ns, "dry-run", authv1.WelcomeSpec{Name: "Barbara"})
		Expect(k8s.Create(ctx, w, client.DryRunAll)).To(Succeed())
		Expect(w.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		Expect(w.Spec.Port).To(HaveValue(BeEquivalentTo(8088)))
		Expect(w.Spec.ServiceType).To(Equal(corev1.ServiceTypeNodePort))

		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &authv1.Welcome{}))).To(BeTrue())
	})

	It("refuses an invalid Welcome on a server-side dry run too", func(ctx SpecContext) {
		w := newWelcome(ns, "dry-run-invalid", authv1.WelcomeSpec{Name: "Ken", Port: ptr.To[int32](-3)})
		err := k8s.Create(ctx, w, client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.port"))
	})

	It("changes nothing when an unchanged manifest is applied again", func(ctx SpecContext) {
		manifest := fmt.Sprintf(`
apiVersion: auth.seedlabs.dev/v1alpha1
kind: Welcome
metadata:
  name: applied
  namespace: %s
spec:
  name: Margaret
  groups: [apollo]
`, ns)
		apply := func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"))).To(Succeed())
			return u
		}
		first := apply()
		// The controller may write status more than once for a generation (each event of its
		// Deployment or Service is a reconcile, and what it observes may have moved), and such a
		// write may fall between the read and the second apply (CI saw one): the apply is tried
		// again until none did. An apply that itself wrote would never leave the version unchanged.
		key := types.NamespacedName{Namespace: ns, Name: "applied"}
		var second *unstructured.Unstructured
		Eventually(func(g Gomega) {
			before := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, key, before)).To(Succeed())
			second = apply()
			g.Expect(second.GetResourceVersion()).To(Equal(before.ResourceVersion), "re-applying wrote a new version")
		}).WithContext(ctx).Should(Succeed())
		Expect(second.GetGeneration()).To(Equal(first.GetGeneration()))
		Expect(second.Object["spec"]).To(HaveKeyWithValue("replicas", BeEquivalentTo(1)))
	})
})

var _ = Describe("Welcome controller", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	getDeployment := func(g Gomega, ctx SpecContext, name string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)).To(Succeed())
		return d
	}
	getService := func(g Gomega, ctx SpecContext, name string) *corev1.Service {
		s := &corev1.Service{}
		g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)).To(Succeed())
		return s
	}
	container := func(d *appsv1.Deployment) corev1.Container { return d.Spec.Template.Spec.Containers[0] }

	It("creates an owned Deployment and Service and reports the service URL", func(ctx SpecContext) {
		w := newWelcome(ns, "hello", authv1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		owner := MatchFields(IgnoreExtras, Fields{
			"Kind": Equal("Welcome"), "Name": Equal("hello"), "UID": Equal(w.UID),
			"Controller": HaveValue(BeTrue()), "BlockOwnerDeletion": HaveValue(BeTrue()),
		})

		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "hello")
			g.Expect(d.OwnerReferences).To(ConsistOf(owner))
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
			c := container(d)
			g.Expect(c.Image).To(Equal(testenv.WelcomeImage))
			g.Expect(c.Env).To(Equal([]corev1.EnvVar{{Name: "NAME", Value: "Ada"}, {Name: "PORT", Value: "8088"}}))
			g.Expect(c.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(8088)})))
			g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz"))
			g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
			g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
			g.Expect(d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(d.Spec.Template.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		}).Should(Succeed())

		var nodePort int32
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "hello")
			g.Expect(s.OwnerReferences).To(ConsistOf(owner))
			g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
			g.Expect(s.Spec.Ports).To(HaveLen(1))
			g.Expect(s.Spec.Ports[0].Port).To(BeEquivalentTo(8088))
			g.Expect(s.Spec.Ports[0].TargetPort.IntValue()).To(Equal(8088))
			nodePort = s.Spec.Ports[0].NodePort
			g.Expect(nodePort).NotTo(BeZero())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.ServiceURL).To(Equal(fmt.Sprintf("http://hello.%s.svc:8088/hello/ (node port %d)", ns, nodePort)))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, conditions.Ready)).To(
				PointTo(MatchFields(IgnoreExtras, Fields{"Status": Equal(metav1.ConditionFalse), "Reason": Equal(conditions.ReasonReplicasUnavailable)})))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, conditions.Reconciling)).To(
				PointTo(MatchFields(IgnoreExtras, Fields{"Status": Equal(metav1.ConditionTrue), "Reason": Equal(conditions.ReasonReconciling)})))
		}).Should(Succeed())
	})

	It("puts drift back and never fights over the allocated clusterIP and nodePort", func(ctx SpecContext) {
		w := newWelcome(ns, "drift", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		var clusterIP string
		var nodePort int32
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			clusterIP, nodePort = s.Spec.ClusterIP, s.Spec.Ports[0].NodePort
			g.Expect(clusterIP).NotTo(BeEmpty())
			g.Expect(getDeployment(g, ctx, "drift").Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}).Should(Succeed())

		By("scaling the Deployment by hand")
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drift"}}
		Expect(k8s.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(&autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "drift"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5},
		}))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getDeployment(g, ctx, "drift").Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		}).Should(Succeed())

		By("editing the container's environment by hand")
		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "drift")
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NAME", Value: "Mallory"}}
			g.Expect(k8s.Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(container(getDeployment(g, ctx, "drift")).Env).To(Equal(
				[]corev1.EnvVar{{Name: "NAME", Value: "Ada"}, {Name: "PORT", Value: "8088"}}))
		}).Should(Succeed())

		By("changing the Service's selector by hand")
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			s.Spec.Selector = map[string]string{"app": "elsewhere"}
			g.Expect(k8s.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			g.Expect(s.Spec.Selector).To(Equal(map[string]string{
				"app.kubernetes.io/name": "welcome", "app.kubernetes.io/instance": "drift"}))
			g.Expect(s.Spec.ClusterIP).To(Equal(clusterIP))
			g.Expect(s.Spec.Ports[0].NodePort).To(Equal(nodePort))
		}).Should(Succeed())

		By("changing the Service's port number by hand, which adds a port under another field manager")
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			s.Spec.Ports[0].Port = 8089
			g.Expect(k8s.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			g.Expect(s.Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Name": Equal("http"), "Port": BeEquivalentTo(8088), "TargetPort": Equal(intstr.FromInt32(8088)),
			})))
			g.Expect(s.Spec.ClusterIP).To(Equal(clusterIP))
		}).Should(Succeed())
	})

	It("rolls spec updates out", func(ctx SpecContext) {
		w := newWelcome(ns, "rollout", authv1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) { getService(g, ctx, "rollout") }).Should(Succeed())

		// The controller writes the status meanwhile: an update from a stale read is a conflict.
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			w.Spec.Name = "Grace"
			w.Spec.Replicas = ptr.To[int32](3)
			w.Spec.Port = ptr.To[int32](9000)
			w.Spec.Image = "ghcr.io/seedlabs/welcome-web:v2"
			w.Spec.ServiceType = corev1.ServiceTypeClusterIP
			g.Expect(k8s.Update(ctx, w)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())

		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "rollout")
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
			c := container(d)
			g.Expect(c.Image).To(Equal("ghcr.io/seedlabs/welcome-web:v2"))
			g.Expect(c.Env).To(Equal([]corev1.EnvVar{{Name: "NAME", Value: "Grace"}, {Name: "PORT", Value: "9000"}}))
			g.Expect(c.Ports[0].ContainerPort).To(BeEquivalentTo(9000))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "rollout")
			g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(s.Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Port": BeEquivalentTo(9000), "NodePort": BeZero(),
			})))
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.ServiceURL).To(Equal(fmt.Sprintf("http://rollout.%s.svc:9000/hello/", ns)))
		}).Should(Succeed())
	})

	It("reports readiness from the Deployment's status", func(ctx SpecContext) {
		w := newWelcome(ns, "ready", authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)})
		Expect(k8s.Create(ctx, w)).To(Succeed())

		By("simulating the Deployment controller, which envtest does not run")
		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "ready")
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation,
				Replicas:           2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				}},
			}
			g.Expect(k8s.Status().Update(ctx, d)).To(Succeed())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(2))
			g.Expect(got.Status.Conditions).To(ConsistOf(
				condition(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, got.Generation),
				condition(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolledOut, got.Generation),
				condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, got.Generation),
				condition(conditions.Compliant, metav1.ConditionTrue, conditions.ReasonAsExpected, got.Generation),
			))
		}).Should(Succeed())

		By("a rollout that exceeds its progress deadline")
		Eventually(func(g Gomega) {
			d := getDeployment(g, ctx, "ready")
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "ready-1" has timed out progressing.`,
			})
			g.Expect(k8s.Status().Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(1))
			g.Expect(got.Status.Conditions).To(ContainElements(
				condition(conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutFailed, got.Generation),
				condition(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonRolloutFailed, got.Generation),
				condition(conditions.Stalled, metav1.ConditionTrue, conditions.ReasonRolloutFailed, got.Generation),
			))
		}).Should(Succeed())
	})

	It("reports a Deployment it cannot apply as Stalled, with an event", func(ctx SpecContext) {
		By("allowing no Deployment in the namespace through a ResourceQuota")
		refuseDeployments(ctx, ns)

		w := newWelcome(ns, "clash", authv1.WelcomeSpec{Name: "Ada"})
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditions.Stalled)
			g.Expect(stalled).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Status": Equal(metav1.ConditionTrue), "Reason": Equal(conditions.ReasonApplyFailed),
			})))
			g.Expect(stalled.Message).To(And(ContainSubstring("applying the Deployment"), ContainSubstring("exceeded quota")))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(MatchFields(IgnoreExtras, Fields{
				"Reason": Equal(conditions.ReasonApplyFailed), "Type": Equal(corev1.EventTypeWarning),
			})))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &corev1.Service{}))).To(BeTrue(),
			"the Service is applied only after the Deployment")
	})

	It("does not roll out a stored spec that breaks the rules, and says why", func(ctx SpecContext) {
		By("letting the namespace bypass the validating webhooks, as if the object predated them")
		bypassValidation(ctx, ns)

		w := newWelcome(ns, "legacy", authv1.WelcomeSpec{Name: "Ada", Port: ptr.To[int32](70000)})
		Eventually(func() error { return k8s.Create(ctx, w) }).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.Conditions).To(ContainElements(
				condition(conditions.Stalled, metav1.ConditionTrue, conditions.ReasonInvalidSpec, got.Generation),
				condition(conditions.Reconciling, metav1.ConditionFalse, conditions.ReasonInvalidSpec, got.Generation),
			))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, conditions.Stalled).Message).To(
				ContainSubstring("spec.port: Invalid value: 70000: must be between 1 and 65535"))
		}).Should(Succeed())
		// The condition is written in the reconcile that refuses to apply, so nothing exists now.
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &appsv1.Deployment{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(w), &corev1.Service{}))).To(BeTrue())

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(MatchFields(IgnoreExtras, Fields{
				"Reason":    Equal(conditions.ReasonInvalidSpec),
				"Type":      Equal(corev1.EventTypeWarning),
				"Note":      ContainSubstring("spec.port"),
				"Regarding": MatchFields(IgnoreExtras, Fields{"Kind": Equal("Welcome"), "Name": Equal("legacy")}),
			})))
		}).Should(Succeed())

		By("fixing the spec, which rolls it out")
		Expect(update(ctx, w, func() { w.Spec.Port = ptr.To[int32](8080) })).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(container(getDeployment(g, ctx, "legacy")).Ports[0].ContainerPort).To(BeEquivalentTo(8080))
			got := &authv1.Welcome{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.Conditions).To(ContainElement(
				condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, got.Generation)))
		}).Should(Succeed())
	})
})

func condition(conditionType string, status metav1.ConditionStatus, reason string, generation int64) OmegaMatcher {
	return MatchFields(IgnoreExtras, Fields{
		"Type": Equal(conditionType), "Status": Equal(status), "Reason": Equal(reason),
		"ObservedGeneration": Equal(generation),
	})
}
