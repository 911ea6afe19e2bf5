package integration

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/test/fixtures"
)

func newDeployObject(namespace, name, image string, ports ...corev1.ServicePort) *appv1.DeployObject {
	return &appv1.DeployObject{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       appv1.DeployObjectSpec{Image: image, Ports: ports},
	}
}

func httpPort(port int32) corev1.ServicePort { return corev1.ServicePort{Name: "http", Port: port} }

var _ = Describe("DeployObject admission", admission, func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("judges the image table through the API server as the unit tests do", func(ctx SpecContext) {
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		for i, tc := range fixtures.ImageReferences {
			d := newDeployObject(ns, fmt.Sprintf("image-%d", i), tc.Image, httpPort(80))
			warnings.Take()
			err := c.Create(ctx, d, client.DryRunAll)
			if tc.Refusal == "" {
				Expect(err).NotTo(HaveOccurred(), "image %q", tc.Image)
			} else {
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "image %q: want 422 Invalid, got %v", tc.Image, err)
				Expect(causes(err)).To(ConsistOf("spec.image"), "image %q", tc.Image)
				Expect(err.Error()).To(ContainSubstring(tc.Refusal), "image %q", tc.Image)
			}
			if tc.Warning != "" {
				Expect(warnings.Take()).To(ContainElement(tc.Warning+" (rule deployobject.image.latest-with-digest)"), "image %q", tc.Image)
			}
		}
	})

	It("names every bad field of one object in one reply", func(ctx SpecContext) {
		d := newDeployObject(ns, "many", "nginx",
			corev1.ServicePort{Port: 80}, corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "dns", Port: 53, Protocol: "ICMP"})
		d.Spec.Replicas = ptr.To[int32](-2)
		d.Spec.Env = []corev1.EnvVar{{Name: "", Value: "x"}}
		d.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
		d.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}, {Name: ""}, {Name: "registry"}, {Name: "Registry_1"}}
		err := k8s.Create(ctx, d)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf(
			"spec.image", "spec.replicas", "spec.ports[0].name", "spec.ports[1].name", "spec.ports[1]",
			"spec.ports[2].protocol", "spec.env[0].name", "spec.resources.requests[cpu]",
			"spec.imagePullSecrets[1].name", "spec.imagePullSecrets[2].name", "spec.imagePullSecrets[3].name",
		))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appv1.DeployObject{}))).To(BeTrue())
	})

	It("refuses one named target port for two protocols, which no single container port can serve", func(ctx SpecContext) {
		d := newDeployObject(ns, "dns", "coredns/coredns:1.12.0",
			corev1.ServicePort{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromString("dns")},
			corev1.ServicePort{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")})
		err := k8s.Create(ctx, d)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.ports[1].targetPort"))
		Expect(err.Error()).To(ContainSubstring("spec.ports[0] already targets it over TCP"))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appv1.DeployObject{}))).To(BeTrue())
	})

	It("fills replicas and each port's protocol and targetPort", func(ctx SpecContext) {
		d := newDeployObject(ns, "defaults", "nginx:1.27",
			corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("prom")})
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
		Expect(d.Spec.Ports).To(Equal([]corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
			{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("prom")},
		}))
	})

	It("warns about a repeated environment variable", func(ctx SpecContext) {
		c, warnings, err := env.NewClientWithWarnings()
		Expect(err).NotTo(HaveOccurred())
		d := newDeployObject(ns, "env", "nginx:1.27", httpPort(80))
		d.Spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "MODE", Value: "b"}}
		Expect(c.Create(ctx, d)).To(Succeed())
		Expect(warnings.Take()).To(ConsistOf("spec.env[1].name: MODE is also set by spec.env[0]; Kubernetes keeps the last value (rule deployobject.env.duplicate)"))
	})

	It("keeps admitting an image from before the allow-list while it is left untouched", func(ctx SpecContext) {
		By("storing an image from a registry the allow-list does not name, as if admitted before it")
		restore := bypassValidation(ctx, ns)
		d := newDeployObject(ns, "ratchet", "quay.io/team/app:1.0", httpPort(80))
		Eventually(func() error { return k8s.Create(ctx, d) }).Should(Succeed())
		restore()

		By("changing replicas only")
		Expect(update(ctx, d, func() { d.Spec.Replicas = ptr.To[int32](3) })).To(Succeed())

		By("changing the image to another one from the same registry")
		setImage := func(image string) error {
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, image)))
			return k8s.Patch(ctx, d.DeepCopy(), patch)
		}
		err := setImage("quay.io/team/app:1.1")
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf("spec.image"))
		Expect(err.Error()).To(ContainSubstring("is pulled from registry quay.io, which is not allowed"))

		By("moving to an allowed registry")
		Expect(setImage("ghcr.io/team/app:1.1")).To(Succeed())
	})
})

var _ = Describe("DeployObject controller", func() {
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

	It("creates an owned Deployment and Service and rolls out every kind of spec edit", func(ctx SpecContext) {
		d := newDeployObject(ns, "app", "nginx:1.27", httpPort(8080))
		d.Spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "blue"}}
		Expect(k8s.Create(ctx, d)).To(Succeed())

		var clusterIP string
		Eventually(func(g Gomega) {
			dep := getDeployment(g, ctx, "app")
			g.Expect(dep.OwnerReferences).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Kind": Equal("DeployObject"), "Name": Equal("app"), "UID": Equal(d.UID), "Controller": HaveValue(BeTrue()),
			})))
			c := dep.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(Equal("nginx:1.27"))
			g.Expect(c.Env).To(Equal([]corev1.EnvVar{{Name: "MODE", Value: "blue"}}))
			g.Expect(c.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(8080)})))
			g.Expect(dep.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
			g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
			s := getService(g, ctx, "app")
			g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(s.Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Name": Equal("http"), "Port": BeEquivalentTo(8080), "TargetPort": Equal(intstr.FromInt32(8080)),
			})))
			clusterIP = s.Spec.ClusterIP
			g.Expect(clusterIP).NotTo(BeEmpty())
		}).Should(Succeed())

		By("changing the image, replicas, env and resources")
		Expect(update(ctx, d, func() {
			d.Spec.Image = "nginx:1.28"
			d.Spec.Replicas = ptr.To[int32](4)
			d.Spec.Env = []corev1.EnvVar{{Name: "MODE", Value: "green"}, {Name: "LOG", Value: "debug"}}
			d.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			}
		})).To(Succeed())
		Eventually(func(g Gomega) {
			dep := getDeployment(g, ctx, "app")
			g.Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(4)))
			c := dep.Spec.Template.Spec.Containers[0]
			g.Expect(c.Image).To(Equal("nginx:1.28"))
			g.Expect(c.Env).To(Equal([]corev1.EnvVar{{Name: "MODE", Value: "green"}, {Name: "LOG", Value: "debug"}}))
			g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("100m"))
			g.Expect(c.Resources.Limits.Memory().String()).To(Equal("128Mi"))
		}).Should(Succeed())

		By("setting a command, args, pull secrets and probes, then removing them")
		Expect(update(ctx, d, func() {
			d.Spec.Command, d.Spec.Args = []string{"/app"}, []string{"--mode", "$(MODE)"}
			d.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-b"}, {Name: "registry-a"}}
			d.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}
			d.Spec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, FailureThreshold: 6}
		})).To(Succeed())
		Eventually(func(g Gomega) {
			pod := getDeployment(g, ctx, "app").Spec.Template.Spec
			c := pod.Containers[0]
			g.Expect(c.Command).To(Equal([]string{"/app"}))
			g.Expect(c.Args).To(Equal([]string{"--mode", "$(MODE)"}))
			g.Expect(pod.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "registry-b"}, {Name: "registry-a"}}))
			// As kube-apiserver defaults a pod's probe: scheme HTTP, every 10 s, 1 s to answer.
			g.Expect(c.ReadinessProbe).To(Equal(&corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			}))
			g.Expect(c.LivenessProbe).To(HaveField("FailureThreshold", BeEquivalentTo(6)))
			g.Expect(c.StartupProbe).To(BeNil())
		}).Should(Succeed())
		Expect(update(ctx, d, func() {
			d.Spec.Command, d.Spec.Args, d.Spec.ImagePullSecrets = nil, nil, nil
			d.Spec.ReadinessProbe, d.Spec.LivenessProbe = nil, nil
		})).To(Succeed())
		Eventually(func(g Gomega) {
			pod := getDeployment(g, ctx, "app").Spec.Template.Spec
			g.Expect(pod.Containers[0].Command).To(BeEmpty())
			g.Expect(pod.Containers[0].Args).To(BeEmpty())
			g.Expect(pod.ImagePullSecrets).To(BeEmpty())
			g.Expect(pod.Containers[0].ReadinessProbe).To(BeNil())
			g.Expect(pod.Containers[0].LivenessProbe).To(BeNil())
		}).Should(Succeed())

		By("adding a port")
		Expect(update(ctx, d, func() {
			d.Spec.Ports = append(d.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP})
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getService(g, ctx, "app").Spec.Ports).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Name": Equal("http"), "Port": BeEquivalentTo(8080)}),
				MatchFields(IgnoreExtras, Fields{"Name": Equal("metrics"), "Port": BeEquivalentTo(9090)}),
			))
			g.Expect(getDeployment(g, ctx, "app").Spec.Template.Spec.Containers[0].Ports).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(8080)}),
				MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(9090)}),
			))
		}).Should(Succeed())

		By("changing one port and removing the other")
		Expect(update(ctx, d, func() {
			d.Spec.Ports = []corev1.ServicePort{{Name: "metrics", Port: 9191, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9191)}}
		})).To(Succeed())
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "app")
			g.Expect(s.Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"Name": Equal("metrics"), "Port": BeEquivalentTo(9191)})))
			g.Expect(s.Spec.ClusterIP).To(Equal(clusterIP), "the Service keeps its clusterIP")
			g.Expect(getDeployment(g, ctx, "app").Spec.Template.Spec.Containers[0].Ports).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"ContainerPort": BeEquivalentTo(9191)})))
		}).Should(Succeed())

		By("moving that port's number twice more, the container port staying its targetPort")
		for _, port := range []int32{9192, 9193} {
			Expect(update(ctx, d, func() {
				d.Spec.Ports = []corev1.ServicePort{{Name: "metrics", Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9191)}}
			})).To(Succeed())
			Eventually(func(g Gomega) {
				var got appv1.DeployObject
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), &got)).To(Succeed())
				g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(meta.FindStatusCondition(got.Status.Conditions, conditions.Reconciling)).To(HaveField("Reason", Not(Equal("ApplyFailed"))),
					"%+v", got.Status.Conditions)
				g.Expect(getService(g, ctx, "app").Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
					"Name": Equal("metrics"), "Port": BeEquivalentTo(port), "TargetPort": Equal(intstr.FromInt32(9191)),
				})))
			}).Should(Succeed())
		}
	})

	It("puts drift in the Deployment and the Service back", func(ctx SpecContext) {
		d := newDeployObject(ns, "drift", "nginx:1.27", httpPort(80))
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) { getService(g, ctx, "drift") }).Should(Succeed())

		Eventually(func(g Gomega) {
			dep := getDeployment(g, ctx, "drift")
			dep.Spec.Template.Spec.Containers[0].Image = "nginx:1.0"
			dep.Spec.Replicas = ptr.To[int32](7)
			g.Expect(k8s.Update(ctx, dep)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			s := getService(g, ctx, "drift")
			s.Spec.Ports[0].Port = 81
			g.Expect(k8s.Update(ctx, s)).To(Succeed())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			dep := getDeployment(g, ctx, "drift")
			g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
			g.Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(getService(g, ctx, "drift").Spec.Ports).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"Port": BeEquivalentTo(80)})))
		}).Should(Succeed())
	})

	It("mirrors the Deployment's status and reports availability", func(ctx SpecContext) {
		d := newDeployObject(ns, "status", "nginx:1.27", httpPort(80))
		d.Spec.Replicas = ptr.To[int32](3)
		Expect(k8s.Create(ctx, d)).To(Succeed())

		available := appsv1.DeploymentCondition{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			Message: "Deployment has minimum availability.",
		}
		Eventually(func(g Gomega) {
			dep := getDeployment(g, ctx, "status")
			dep.Status = appsv1.DeploymentStatus{
				ObservedGeneration: dep.Generation,
				Replicas:           3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				Conditions: []appsv1.DeploymentCondition{available},
			}
			g.Expect(k8s.Status().Update(ctx, dep)).To(Succeed())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Replicas).To(BeEquivalentTo(3))
			g.Expect(got.Status.UpdatedReplicas).To(BeEquivalentTo(3))
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(3))
			g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(3))
			g.Expect(got.Status.DeploymentConditions).To(ConsistOf(MatchFields(IgnoreExtras, Fields{
				"Type": Equal(appsv1.DeploymentAvailable), "Status": Equal(corev1.ConditionTrue),
				"Reason": Equal("MinimumReplicasAvailable"), "Message": Equal(available.Message),
			})))
			g.Expect(got.Status.Conditions).To(ContainElements(
				condition(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, got.Generation),
				condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, got.Generation),
			))
		}).Should(Succeed())
	})

	It("is Stalled with the pull error while its pod cannot pull a private image, and rolls out once imagePullSecrets are added", func(ctx SpecContext) {
		d := newDeployObject(ns, "private", "ghcr.io/team/shop:2.4.1", httpPort(8080))
		d.Spec.Replicas = ptr.To[int32](1)
		Expect(k8s.Create(ctx, d)).To(Succeed())
		key := client.ObjectKeyFromObject(d)
		conditionsOf := func(g Gomega) []metav1.Condition {
			got := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			return got.Status.Conditions
		}

		By("being Stalled, and neither Ready nor Reconciling, while the kubelet cannot pull the image, with its message")
		first := podOf(ctx, replicaSetOf(ctx, key, 1), "x2x7q")
		setDeploymentStatus(ctx, key, 1, 1, 0)
		backOff := pullBackOff(first)
		setContainerState(ctx, first, backOff)
		want := fmt.Sprintf("pod %s, container %s: ImagePullBackOff: %s", first.Name, first.Spec.Containers[0].Name, backOff.Message)
		stalled := func(conditionType string, status metav1.ConditionStatus) OmegaMatcher {
			return MatchFields(IgnoreExtras, Fields{"Type": Equal(conditionType), "Status": Equal(status),
				"Reason": Equal(conditions.ReasonContainerCannotStart), "Message": Equal(want)})
		}
		Eventually(conditionsOf).WithContext(ctx).Should(ContainElements(
			stalled(conditions.Stalled, metav1.ConditionTrue),
			stalled(conditions.Ready, metav1.ConditionFalse),
			stalled(conditions.Reconciling, metav1.ConditionFalse),
		))

		By("adding imagePullSecrets: the pod of the old template, which still cannot pull, holds nothing back")
		Expect(update(ctx, d, func() {
			d.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getDeployment(g, ctx, "private").Spec.Template.Spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: "registry-credentials"}))
		}).Should(Succeed())
		second := podOf(ctx, replicaSetOf(ctx, key, 2), "k8v2m")
		setDeploymentStatus(ctx, key, 2, 1, 0)
		// The old pod backs off again, which the controller looks at, with the new ReplicaSet there.
		setContainerState(ctx, first, &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no basic auth credentials"})
		notStalled := ContainElements(
			condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, d.Generation),
			condition(conditions.Reconciling, metav1.ConditionTrue, conditions.ReasonReconciling, d.Generation),
		)
		Eventually(conditionsOf).WithContext(ctx).Should(notStalled)
		Consistently(conditionsOf).WithContext(ctx).WithTimeout(time.Second).WithPolling(100 * time.Millisecond).Should(notStalled)

		By("being Ready once the new pod runs and the old one is gone")
		setContainerState(ctx, second, nil)
		setDeploymentStatus(ctx, key, 1, 1, 1)
		Eventually(conditionsOf).WithContext(ctx).Should(ContainElements(
			condition(conditions.Ready, metav1.ConditionTrue, conditions.ReasonRolledOut, d.Generation),
			condition(conditions.Stalled, metav1.ConditionFalse, conditions.ReasonAsExpected, d.Generation),
		))
	})

	It("does not roll out a stored spec that breaks the rules, and says why", func(ctx SpecContext) {
		bypassValidation(ctx, ns)
		d := newDeployObject(ns, "legacy", "nginx:latest", httpPort(80))
		Eventually(func() error { return k8s.Create(ctx, d) }).Should(Succeed())

		Eventually(func(g Gomega) {
			got := &appv1.DeployObject{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
			stalled := meta.FindStatusCondition(got.Status.Conditions, conditions.Stalled)
			g.Expect(stalled).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Status": Equal(metav1.ConditionTrue), "Reason": Equal(conditions.ReasonInvalidSpec),
			})))
			g.Expect(stalled.Message).To(ContainSubstring("spec.image"))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}))).To(BeTrue())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(MatchFields(IgnoreExtras, Fields{
				"Reason": Equal(conditions.ReasonInvalidSpec), "Type": Equal(corev1.EventTypeWarning),
			})))
		}).Should(Succeed())
	})
})
