package integration

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/reconcile/ownership"
	"github.com/seedlabs/webhook-operator/internal/resources"
	"github.com/seedlabs/webhook-operator/test/fixtures"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// safetyKind is one of the three kinds, as the specs below need it: a valid object of a name.
type safetyKind struct {
	kind      string
	newObject func(ns, name string) conditioned
}

var safetyKinds = []safetyKind{
	{
		kind: "Welcome",
		newObject: func(ns, name string) conditioned {
			return newWelcome(ns, name, authv1.WelcomeSpec{Name: "Ada"})
		},
	},
	{
		kind:      "Memcached",
		newObject: func(ns, name string) conditioned { return newMemcached(ns, name, ptr.To[int32](1)) },
	},
	{
		kind: "DeployObject",
		newObject: func(ns, name string) conditioned {
			return newDeployObject(ns, name, "docker.io/library/nginx:1.27", httpPort(8080))
		},
	},
}

// emptyOf returns an empty object of the same type as obj, to read into.
func emptyOf(obj client.Object) client.Object {
	return obj.DeepCopyObject().(client.Object)
}

// expectEvent waits for a Warning Event of reason regarding the object whose note says note.
func expectEvent(ctx SpecContext, ns, kind, name, reason, note string) {
	GinkgoHelper()
	expectEventOfType(ctx, corev1.EventTypeWarning, ns, kind, name, reason, note)
}

// expectEventOfType waits for an Event of eventType and reason regarding the object whose note
// says note.
func expectEventOfType(ctx SpecContext, eventType, ns, kind, name, reason, note string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(MatchFields(IgnoreExtras, Fields{
			"Reason":    Equal(reason),
			"Type":      Equal(eventType),
			"Note":      ContainSubstring(note),
			"Regarding": MatchFields(IgnoreExtras, Fields{"Kind": Equal(kind), "Name": Equal(name)}),
		})))
	}).Should(Succeed())
}

var _ = Describe("What the controllers create", func() {
	for _, k := range safetyKinds {
		It("is said in one Created Event of a "+k.kind+", naming its Deployment and its Service", func(ctx SpecContext) {
			ns := newNamespace(ctx)
			Expect(k8s.Create(ctx, k.newObject(ns, "shop"))).To(Succeed())
			expectEventOfType(ctx, corev1.EventTypeNormal, ns, k.kind, "shop", conditions.EventReasonCreated, "created Deployment shop ")
			expectEventOfType(ctx, corev1.EventTypeNormal, ns, k.kind, "shop", conditions.EventReasonCreated, " and Service shop ")
		})
	}
})

var _ = Describe("Names that cannot name a Service", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	for _, k := range safetyKinds {
		It("are refused for a "+k.kind+" with a field error on metadata.name, and nothing is stored", admission, func(ctx SpecContext) {
			for _, name := range []string{"hello.world", "x" + strings.Repeat("y", 63), "1shop"} {
				obj := k.newObject(ns, name)
				err := k8s.Create(ctx, obj)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", name, err)
				Expect(causes(err)).To(ConsistOf("metadata.name"), "%s", name)
				Expect(err.Error()).To(ContainSubstring("the name is also the name of the Service"))
				Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), emptyOf(obj)))).To(BeTrue())
			}
		})

		It("are reported as InvalidSpec by the "+k.kind+" controller when stored past admission", func(ctx SpecContext) {
			bypassValidation(ctx, ns)
			obj := k.newObject(ns, "hello.world")
			Eventually(func() error { return k8s.Create(ctx, obj) }).Should(Succeed())

			Eventually(func(g Gomega) {
				stalled := stalledOf(g, ctx, obj)
				g.Expect(stalled.Reason).To(Equal("InvalidSpec"))
				g.Expect(stalled.Message).To(ContainSubstring(`metadata.name: Invalid value: "hello.world"`))
			}).Should(Succeed())
			// The condition is written in the reconcile that refuses to apply, so nothing exists now.
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), &appsv1.Deployment{}))).To(BeTrue())
			expectEvent(ctx, ns, k.kind, "hello.world", "InvalidSpec", "metadata.name")
		})
	}
})

var _ = Describe("DeployObject admission of what the Pod and Service APIs refuse", admission, func() {
	It("refuses every violation of env, resources and appProtocol in one 422, and stores nothing", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		d := newDeployObject(ns, "bad", "docker.io/library/nginx:1.27", corev1.ServicePort{
			Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), AppProtocol: ptr.To("HTTP 2"),
		})
		d.Spec.Env = []corev1.EnvVar{
			{Name: "A=B", Value: "x"},
			{Name: "BOTH", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "EMPTY", ValueFrom: &corev1.EnvVarSource{}},
			{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password",
			}}},
			{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "a/b"}}},
			{Name: "FIELD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.containers"}}},
			{Name: "RES", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
				Resource: "requests.cpu", Divisor: resource.MustParse("1Mi"),
			}}},
			{Name: "FILE", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "K"}}},
		}
		d.Spec.Resources = corev1.ResourceRequirements{
			Limits: corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("-1Mi"),
				"example.com/fpga":    resource.MustParse("500m"),
			},
			Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")},
			Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
		}
		err := k8s.Create(ctx, d)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
		Expect(causes(err)).To(ConsistOf(
			"spec.ports[0].appProtocol",
			"spec.env[0].name",
			"spec.env[1].valueFrom",
			"spec.env[2].valueFrom",
			"spec.env[3].valueFrom.secretKeyRef",
			"spec.env[4].valueFrom.configMapKeyRef.name",
			"spec.env[4].valueFrom.configMapKeyRef.key",
			"spec.env[5].valueFrom.fieldRef.fieldPath",
			"spec.env[6].valueFrom.resourceFieldRef.divisor",
			"spec.env[7].valueFrom.fileKeyRef",
			"spec.resources.limits[memory]",
			"spec.resources.limits[example.com/fpga]",
			"spec.resources.limits[example.com/gpu]",
			"spec.resources.claims[0]",
		))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appv1.DeployObject{}))).To(BeTrue())
	})

	It("judges each case of the edge table as the unit tests do, and rolls out every case it admits", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		var admitted []*appv1.DeployObject
		var admittedCases []string
		for i, tc := range fixtures.DeployObjectEdges {
			d := fixtures.EdgeDeployObject(ns, fmt.Sprintf("edge-%d", i))
			tc.Edit(d)
			err := k8s.Create(ctx, d)
			if len(tc.Refused) == 0 {
				Expect(err).NotTo(HaveOccurred(), "%s", tc.Name)
				admitted, admittedCases = append(admitted, d), append(admittedCases, tc.Name)
				continue
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", tc.Name, err)
			Expect(causes(err)).To(ConsistOf(tc.Refused), "%s", tc.Name)
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &appv1.DeployObject{}))).To(BeTrue(), "%s", tc.Name)
		}
		By("finding the Deployment and Service of every case admitted, and no ApplyFailed")
		for _, d := range admitted {
			Eventually(func(g Gomega) {
				for _, child := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
					g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), child)).To(Succeed())
					g.Expect(metav1.IsControlledBy(child, d)).To(BeTrue())
				}
				stored := &appv1.DeployObject{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), stored)).To(Succeed())
				g.Expect(stored.Status.ObservedGeneration).To(Equal(stored.Generation))
				if stalled := meta.FindStatusCondition(stored.Status.Conditions, "Stalled"); stalled != nil {
					g.Expect(stalled.Status).To(Equal(metav1.ConditionFalse), "%s: %s", d.Name, stalled.Message)
				}
			}).Should(Succeed(), "%s", d.Name)
		}

		By("holding what the controller applies, as the API server stored it, so that the next reconcile of every case applies nothing")
		var notHeld []string
		for i, d := range admitted {
			stored := &appv1.DeployObject{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), stored)).To(Succeed())
			webhooks.DefaultDeployObject(stored)
			owner := resources.ControllerReference(appv1.GroupVersion.String(), "DeployObject", stored.Name, stored.UID)
			deployment, service := &appsv1.Deployment{}, &corev1.Service{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), deployment)).To(Succeed())
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), service)).To(Succeed())
			if holds, err := apply.Holds(deployment, resources.DeployObjectDeployment(stored).WithOwnerReferences(owner)); err != nil || !holds {
				notHeld = append(notHeld, fmt.Sprintf("%s (%s): its Deployment (%v)", d.Name, admittedCases[i], err))
			}
			if holds, err := apply.Holds(service, resources.DeployObjectService(stored).WithOwnerReferences(owner)); err != nil || !holds {
				notHeld = append(notHeld, fmt.Sprintf("%s (%s): its Service (%v)", d.Name, admittedCases[i], err))
			}
		}
		Expect(notHeld).To(BeEmpty(), "what the controller applies is not held: a reconcile would apply it again, every time")
	})

	It("holds a Welcome's image to the image rules and the registry allow-list", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		for _, image := range []string{"ghcr.io/seedlabs/welcome-web", "ghcr.io/seedlabs/welcome-web:latest", "quay.io/seedlabs/welcome-web:v1"} {
			w := newWelcome(ns, "img", authv1.WelcomeSpec{Name: "Ada", Image: image})
			err := k8s.Create(ctx, w)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want 422 Invalid, got %v", image, err)
			Expect(causes(err)).To(ConsistOf("spec.image"), "%s", image)
		}
		Expect(k8s.Create(ctx, newWelcome(ns, "img", authv1.WelcomeSpec{Name: "Ada", Image: "ghcr.io/seedlabs/welcome-web:v0.2.0"}))).To(Succeed())
	})
})

var _ = Describe("Objects the operator did not create", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	// usersService is a Service of the user's own, under the name a custom resource will take.
	usersService := func(ns string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", Labels: map[string]string{"owner": "user"}},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeClusterIP,
				Selector: map[string]string{"app": "users-shop"},
				Ports:    []corev1.ServicePort{{Name: "web", Port: 9999, TargetPort: intstr.FromInt32(9999)}},
			},
		}
	}
	usersDeployment := func(ns string) *appsv1.Deployment {
		labels := map[string]string{"app": "users-shop"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "registry.example.test/shop:1"}}},
				},
			},
		}
	}

	// withOurLabel gives obj the label the operator's own objects carry, which the manager's cache selects.
	withOurLabel := func(obj client.Object) client.Object {
		obj.SetLabels(map[string]string{resources.LabelManagedBy: resources.ManagedBy})
		return obj
	}

	for _, k := range safetyKinds {
		for _, taken := range []struct {
			kind, what string
			make       func(ns string) client.Object
			// labelled objects are in the manager's cache, whose events reconcile the resource again.
			labelled bool
		}{
			{"Service", "Service", func(ns string) client.Object { return usersService(ns) }, false},
			{"Deployment", "Deployment", func(ns string) client.Object { return usersDeployment(ns) }, false},
			{"Service", "Service labelled as the operator's", func(ns string) client.Object { return withOurLabel(usersService(ns)) }, true},
			{"Deployment", "Deployment labelled as the operator's", func(ns string) client.Object { return withOurLabel(usersDeployment(ns)) }, true},
		} {
			It("are left untouched when a "+k.kind+" takes the name of the user's "+taken.what+", even after it is deleted", func(ctx SpecContext) {
				users := taken.make(ns)
				Expect(k8s.Create(ctx, users)).To(Succeed())
				stored := emptyOf(users)
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(users), stored)).To(Succeed())

				obj := k.newObject(ns, "shop")
				Expect(k8s.Create(ctx, obj)).To(Succeed())
				Eventually(func(g Gomega) {
					stalled := stalledOf(g, ctx, obj)
					g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
					g.Expect(stalled.Reason).To(Equal("NameConflict"))
					g.Expect(stalled.Message).To(ContainSubstring(taken.kind + " shop already exists and is not this " + k.kind + "'s: it has no controller"))
				}).Should(Succeed())
				expectEvent(ctx, ns, k.kind, "shop", "NameConflict", taken.kind+" shop already exists")

				By("applying nothing: neither the user's object nor a Deployment or Service of ours")
				untouched := func() {
					now := emptyOf(users)
					Expect(k8s.Get(ctx, client.ObjectKeyFromObject(users), now)).To(Succeed())
					Expect(now.GetResourceVersion()).To(Equal(stored.GetResourceVersion()), "the user's %s was written to", taken.kind)
					Expect(now.GetOwnerReferences()).To(BeEmpty())
				}
				untouched()
				other := map[string]client.Object{"Service": &appsv1.Deployment{}, "Deployment": &corev1.Service{}}[taken.kind]
				Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), other))).To(BeTrue())
				if taken.labelled {
					By("looking again, past the recheck, and still applying nothing")
					recheck := stalledOf(Default, ctx, obj).LastTransitionTime
					Consistently(func(g Gomega) {
						now := emptyOf(users)
						g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(users), now)).To(Succeed())
						g.Expect(now.GetResourceVersion()).To(Equal(stored.GetResourceVersion()), "the user's %s was written to", taken.kind)
						g.Expect(stalledOf(g, ctx, obj).LastTransitionTime).To(Equal(recheck))
					}, ownership.RecheckAfter+2*time.Second, time.Second).Should(Succeed())
				}

				By("deleting the " + k.kind)
				Expect(k8s.Delete(ctx, obj)).To(Succeed())
				Eventually(func() bool {
					return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), emptyOf(obj)))
				}).Should(BeTrue())
				untouched()
			})
		}

		It("converges a "+k.kind+" once the user's object under its name is gone", func(ctx SpecContext) {
			users := usersService(ns)
			Expect(k8s.Create(ctx, users)).To(Succeed())
			obj := k.newObject(ns, "shop")
			Expect(k8s.Create(ctx, obj)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(stalledOf(g, ctx, obj).Reason).To(Equal("NameConflict"))
			}).Should(Succeed())

			Expect(k8s.Delete(ctx, users)).To(Succeed())
			Eventually(func(g Gomega) {
				for _, child := range []client.Object{&corev1.Service{}, &appsv1.Deployment{}} {
					g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), child)).To(Succeed())
					g.Expect(metav1.GetControllerOf(child)).To(PointTo(MatchFields(IgnoreExtras, Fields{
						"Kind": Equal(k.kind), "UID": Equal(obj.GetUID()),
					})))
				}
				g.Expect(stalledOf(g, ctx, obj).Reason).NotTo(Equal("NameConflict"))
			}, "30s").Should(Succeed())
		})
	}
})

var _ = Describe("A DeployObject whose new Service the API server refuses", func() {
	It("keeps its Deployment on the old spec, so the Service never points at ports the pods no longer declare", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// A ValidatingAdmissionPolicy of the cluster's that the rules cannot know about.
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "reserved-port-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "!has(object.spec.ports) || !object.spec.ports.exists(p, p.port == 7777)", Message: "port 7777 is reserved",
				}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
				}},
			},
		}
		for _, obj := range []client.Object{policy, binding} {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed()) })
		}
		reserved := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 7777}}}}
		Eventually(func() error { return k8s.Create(ctx, reserved.DeepCopy(), client.DryRunAll) }).
			Should(MatchError(ContainSubstring("port 7777 is reserved")), "the ValidatingAdmissionPolicy never took effect")

		d := fixtures.EdgeDeployObject(ns, "app")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		deployment := &appsv1.Deployment{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), deployment)).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), &corev1.Service{})).To(Succeed())
		}).Should(Succeed())
		rolledOut := deployment.Spec.Template.Spec.Containers[0].Ports

		By("moving the app to the reserved port, which admission admits")
		// A patch, not an update: the controller writes the status meanwhile.
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 7777, TargetPort: intstr.FromInt32(7777)}}
		Expect(k8s.Patch(ctx, d, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			stalled := stalledOf(g, ctx, d)
			g.Expect(stalled.Reason).To(Equal("ApplyFailed"))
			g.Expect(stalled.Message).To(And(ContainSubstring("applying the Service"), ContainSubstring("port 7777 is reserved")))
		}).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), deployment)).To(Succeed())
		Expect(deployment.Spec.Template.Spec.Containers[0].Ports).To(Equal(rolledOut), "the Deployment rolled out before the Service was refused")
		service := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), service)).To(Succeed())
		Expect(service.Spec.Ports).To(ConsistOf(HaveField("Port", int32(80))))
	})
})

var _ = Describe("An apply of the controllers", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	service := func(ns string) *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service("race", ns).
			WithLabels(map[string]string{resources.LabelManagedBy: resources.ManagedBy}).
			WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80)))
	}
	opts := []client.ApplyOption{client.FieldOwner(apply.FieldManager), client.ForceOwnership}
	usersRace := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "race"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9999}}}}
	}
	expectUntouched := func(ctx SpecContext, users *corev1.Service) {
		now := &corev1.Service{}
		ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(users), now)).To(Succeed())
		ExpectWithOffset(1, now.ResourceVersion).To(Equal(users.ResourceVersion))
	}

	It("creates an object read as absent, and is refused when someone created it since", func(ctx SpecContext) {
		Expect(apply.Apply(ctx, k8s, nil, service(ns), opts...)).To(Succeed())
		Expect(k8s.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "race"}})).To(Succeed())

		users := usersRace(ns)
		Expect(k8s.Create(ctx, users)).To(Succeed())
		err := apply.Apply(ctx, k8s, nil, service(ns), opts...)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "want 409 Conflict, got %v", err)
		expectUntouched(ctx, users)
	})

	It("updates only the object it read, and is refused when another took its place", func(ctx SpecContext) {
		Expect(apply.Apply(ctx, k8s, nil, service(ns), opts...)).To(Succeed())
		ours := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "race"}, ours)).To(Succeed())
		Expect(apply.Apply(ctx, k8s, ours, service(ns).WithSpec(corev1ac.ServiceSpec().WithPorts(
			corev1ac.ServicePort().WithName("http").WithPort(8080))), opts...)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ours), ours)).To(Succeed())
		Expect(ours.Spec.Ports).To(ConsistOf(HaveField("Port", int32(8080))))

		Expect(k8s.Delete(ctx, ours.DeepCopy())).To(Succeed())
		users := usersRace(ns)
		Expect(k8s.Create(ctx, users)).To(Succeed())
		err := apply.Apply(ctx, k8s, ours, service(ns), opts...)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid on metadata.uid, got %v", err)
		Expect(causes(err)).To(ContainElement("metadata.uid"))
		expectUntouched(ctx, users)
	})
})

var _ = Describe("Long lists of violations", func() {
	It("are cut to the API's limits, so the status and the Event are still written", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		bypassValidation(ctx, ns)
		d := newDeployObject(ns, "noisy", "docker.io/library/nginx:1.27", httpPort(8080))
		for i := range appv1.MaxEnvItems { // as many as the schema allows, each a violation
			d.Spec.Env = append(d.Spec.Env, corev1.EnvVar{Name: fmt.Sprintf("V%d=", i), Value: "x"})
		}
		Eventually(func() error { return k8s.Create(ctx, d) }).Should(Succeed())

		Eventually(func(g Gomega) {
			stalled := stalledOf(g, ctx, d)
			g.Expect(stalled.Reason).To(Equal("InvalidSpec"))
			g.Expect(len(stalled.Message)).To(BeNumerically("<=", 32768))
			g.Expect(stalled.Message).To(HavePrefix(`[spec.env[0].name: Invalid value: "V0="`))
			g.Expect(stalled.Message).To(MatchRegexp(`, and \d+ more\]$`))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(MatchFields(IgnoreExtras, Fields{
				"Reason": Equal("InvalidSpec"),
				"Note":   And(HavePrefix("spec is not rolled out: [spec.env[0]"), MatchRegexp(`, and \d+ more\]$`), WithTransform(func(s string) int { return len(s) }, BeNumerically("<=", 1024))),
			})))
		}).Should(Succeed())
	})
})
