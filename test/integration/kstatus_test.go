package integration

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/test/gitops"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// gitopsKind is what the kstatus specs need of a kind: objects of two replicas, one that breaks an
// Enforced rule and the merge patch that fixes it, and a merge patch of a spec edit that changes
// the Deployment.
type gitopsKind struct {
	gvk     schema.GroupVersionKind
	valid   func(ns, name string) client.Object
	invalid func(ns, name string) client.Object
	fix     string
	edit    string
}

var gitopsKinds = []gitopsKind{
	{
		gvk: authv1.GroupVersion.WithKind("Welcome"),
		valid: func(ns, name string) client.Object {
			return newWelcome(ns, name, authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)})
		},
		invalid: func(ns, name string) client.Object {
			return newWelcome(ns, name, authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2), Port: ptr.To[int32](70000)})
		},
		fix:  `{"spec":{"port":8080}}`,
		edit: `{"spec":{"name":"Grace"}}`,
	},
	{
		gvk: cachev1.GroupVersion.WithKind("Memcached"),
		valid: func(ns, name string) client.Object {
			return newMemcached(ns, name, ptr.To[int32](2))
		},
		invalid: func(ns, name string) client.Object { return newMemcached(ns, name, ptr.To[int32](5)) },
		fix:     `{"spec":{"size":2}}`,
		edit:    `{"spec":{"containerPort":11311}}`,
	},
	{
		gvk: appv1.GroupVersion.WithKind("DeployObject"),
		valid: func(ns, name string) client.Object {
			d := newDeployObject(ns, name, "nginx:1.27", httpPort(80))
			d.Spec.Replicas = ptr.To[int32](2)
			return d
		},
		invalid: func(ns, name string) client.Object {
			d := newDeployObject(ns, name, "nginx:latest", httpPort(80))
			d.Spec.Replicas = ptr.To[int32](2)
			return d
		},
		fix:  `{"spec":{"image":"nginx:1.27"}}`,
		edit: `{"spec":{"image":"nginx:1.28"}}`,
	},
}

// judge returns kstatus' and the Argo CD health check's verdict on u, which must agree.
func judge(g Gomega, u *unstructured.Unstructured) gitops.Verdict {
	v, err := gitops.Judge(u)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, v.Agree()).To(BeTrue(), "kstatus and Argo CD disagree on %s %s: %s", u.GetKind(), u.GetName(), v)
	return v
}

// verdictOf reads the object of gvk and key from the API server, as a GitOps tool does, and
// returns the verdict on it.
func verdictOf(g Gomega, ctx SpecContext, gvk schema.GroupVersionKind, key types.NamespacedName) gitops.Verdict {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	g.ExpectWithOffset(1, k8s.Get(ctx, key, u)).To(Succeed())
	return judge(g, u)
}

// expectVerdict waits until the verdict on the object is want, with a kstatus message that
// contains message, and counts it under state.
func expectVerdict(ctx SpecContext, gvk schema.GroupVersionKind, key types.NamespacedName, state string, want status.Status, message string) {
	EventuallyWithOffset(1, func(g Gomega) gitops.Verdict {
		return verdictOf(g, ctx, gvk, key)
	}).WithContext(ctx).WithTimeout(30*time.Second).Should(And(HaveField("KStatus", want), HaveField("KStatusMessage", ContainSubstring(message))),
		"%s %s: %s", gvk.Kind, key.Name, state)
	count(gvk.Kind, state, want)
}

// expectVerdictStays checks that the verdict on the object stays want for a while: nothing
// changes it until the spec asks for it.
func expectVerdictStays(ctx SpecContext, gvk schema.GroupVersionKind, key types.NamespacedName, state string, want status.Status) {
	ConsistentlyWithOffset(1, func(g Gomega) status.Status {
		return verdictOf(g, ctx, gvk, key).KStatus
	}).WithContext(ctx).WithTimeout(time.Second).WithPolling(100*time.Millisecond).Should(Equal(want), "%s %s: %s", gvk.Kind, key.Name, state)
}

// count records, in the spec's report, the verdict asserted in state.
func count(kind, state string, verdict status.Status) {
	AddReportEntry(fmt.Sprintf("verdict: %s, %s", kind, state), string(verdict))
}

// asUnstructured returns obj as the unstructured object a GitOps tool would apply.
func asUnstructured(obj client.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

// setDeploymentStatus writes the status the Deployment controller, which envtest does not run,
// would write for the Deployment of key: observed its current generation, with replicas pods of
// which updated run the current template and available are ready and available.
func setDeploymentStatus(ctx SpecContext, key types.NamespacedName, replicas, updated, available int32) {
	EventuallyWithOffset(1, func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation,
			Replicas:           replicas, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available,
			UnavailableReplicas: replicas - available,
		}
		g.Expect(k8s.Status().Update(ctx, dep)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// rollOut simulates the Deployment of key rolling out its current generation completely, after
// a look at it half done, which must not count as done.
func rollOut(ctx SpecContext, k gitopsKind, key types.NamespacedName) {
	setDeploymentStatus(ctx, key, 2, 2, 1)
	expectVerdict(ctx, k.gvk, key, "one of two replicas available", status.InProgressStatus, "rolling out 2 replicas: 2 running, 2 updated, 1 available")
	expectVerdictStays(ctx, k.gvk, key, "one of two replicas available", status.InProgressStatus)
	setDeploymentStatus(ctx, key, 2, 2, 2)
	expectVerdict(ctx, k.gvk, key, "rolled out", status.CurrentStatus, "Resource is Ready")
}

// replicaSetOf creates the ReplicaSet of the given revision that the Deployment controller, which
// envtest does not run, would make for the current template of the Deployment of key.
func replicaSetOf(ctx SpecContext, key types.NamespacedName, revision int) *appsv1.ReplicaSet {
	GinkgoHelper()
	dep := &appsv1.Deployment{}
	Eventually(func() error { return k8s.Get(ctx, key, dep) }).WithContext(ctx).Should(Succeed())
	hash := fmt.Sprintf("%dc9f7b5d%d", revision, dep.Generation)
	withHash := func(l map[string]string) map[string]string {
		l = maps.Clone(l)
		l[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		return l
	}
	template := *dep.Spec.Template.DeepCopy()
	template.Labels = withHash(template.Labels)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name + "-" + hash, Labels: template.Labels,
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": strconv.Itoa(revision)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: dep.Spec.Replicas, Selector: &metav1.LabelSelector{MatchLabels: withHash(dep.Spec.Selector.MatchLabels)}, Template: template,
		},
	}
	Expect(k8s.Create(ctx, rs)).To(Succeed())
	return rs
}

// podOf creates a pod of rs, as the ReplicaSet controller would, that no kubelet has reported on.
func podOf(ctx SpecContext, rs *appsv1.ReplicaSet, suffix string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rs.Namespace, Name: rs.Name + "-" + suffix, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	return pod
}

// setContainerState writes the status the kubelet would write of pod's container: waiting, or
// running and ready when waiting is nil.
func setContainerState(ctx SpecContext, pod *corev1.Pod, waiting *corev1.ContainerStateWaiting) {
	GinkgoHelper()
	c := pod.Spec.Containers[0]
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: waiting}}
	phase, ready := corev1.PodPending, corev1.ConditionFalse
	if waiting == nil {
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
		st.Ready, phase, ready = true, corev1.PodRunning, corev1.ConditionTrue
	}
	Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{st},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
		g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// pullBackOff is how the kubelet says it backs off pulling the image of pod's container from a
// registry that asks for credentials the pod does not have.
func pullBackOff(pod *corev1.Pod) *corev1.ContainerStateWaiting {
	image := pod.Spec.Containers[0].Image
	return &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf(
		"Back-off pulling image %q: ErrImagePull: failed to pull and unpack image %q: failed to resolve reference %q: "+
			"pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials",
		image, image, image)}
}

var _ = Describe("What kstatus and Argo CD make of the status", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	for _, k := range gitopsKinds {
		Context("of a "+k.gvk.Kind, func() {
			It("is InProgress from its creation until the Deployment has rolled out, then Current; and after a spec edit, InProgress until the new generation has rolled out", func(ctx SpecContext) {
				u := asUnstructured(k.valid(ns, "app"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				By("being InProgress as stored, before the operator has reported: the CRD's default status holds observedGeneration 0")
				observed, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), "the stored object has no status.observedGeneration: %v", u.Object["status"])
				Expect(observed).To(BeZero())
				Expect(judge(Default, u)).To(HaveField("KStatus", status.InProgressStatus))
				count(k.gvk.Kind, "as stored", status.InProgressStatus)

				By("being InProgress while nothing rolls out")
				expectVerdict(ctx, k.gvk, key, "applied, no pod yet", status.InProgressStatus, "rolling out 2 replicas: 0 running, 0 updated, 0 available")
				expectVerdictStays(ctx, k.gvk, key, "applied, no pod yet", status.InProgressStatus)
				rollOut(ctx, k, key)

				By("being InProgress at once after a spec edit, and until its generation has rolled out")
				Expect(k8s.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(k.edit)))).To(Succeed())
				Expect(judge(Default, u)).To(And(HaveField("KStatus", status.InProgressStatus),
					HaveField("KStatusMessage", ContainSubstring(fmt.Sprintf("generation is %d, but latest observed generation is %d", u.GetGeneration(), u.GetGeneration()-1)))))
				count(k.gvk.Kind, "spec edited, as stored", status.InProgressStatus)
				expectVerdict(ctx, k.gvk, key, "spec edited, the Deployment's new generation not yet observed", status.InProgressStatus, "rolling out 2 replicas")
				expectVerdictStays(ctx, k.gvk, key, "spec edited, the Deployment's new generation not yet observed", status.InProgressStatus)
				rollOut(ctx, k, key)
			})

			It("is Current again when a status written elsewhere says otherwise: a replica that has since lost the Lease, or a write of its own that the cache had not yet shown", func(ctx SpecContext) {
				u := asUnstructured(k.valid(ns, "overwritten"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "applied, no pod yet", status.InProgressStatus, "rolling out 2 replicas")
				rollOut(ctx, k, key)

				// What a reconcile of the rollout half done wrote: the CI run of an upgrade saw a
				// Memcached keep it, its Deployment complete, until nothing changed any more.
				Expect(k8s.Get(ctx, key, u)).To(Succeed())
				stale := fmt.Sprintf(`{"status":{"conditions":[`+
					`{"type":"Ready","status":"False","reason":"Reconciling","message":"2 replicas available, 2 requested","observedGeneration":%[1]d,"lastTransitionTime":"2026-01-01T00:00:00Z"},`+
					`{"type":"Reconciling","status":"True","reason":"Reconciling","message":"rolling out 2 replicas: 2 running, 2 updated, 2 available","observedGeneration":%[1]d,"lastTransitionTime":"2026-01-01T00:00:00Z"},`+
					`{"type":"Stalled","status":"False","reason":"AsExpected","message":"","observedGeneration":%[1]d,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, u.GetGeneration())
				Expect(k8s.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(stale)))).To(Succeed())
				Expect(judge(Default, u)).To(HaveField("KStatus", status.InProgressStatus), "as written")
				expectVerdict(ctx, k.gvk, key, "a status written elsewhere, put right", status.CurrentStatus, "Resource is Ready")
			})

			It("is Failed for a stored spec that breaks the rules, and Current once it is fixed and rolled out", func(ctx SpecContext) {
				bypassValidation(ctx, ns)
				u := asUnstructured(k.invalid(ns, "legacy"), k.gvk)
				Eventually(func() error { return k8s.Create(ctx, u) }).WithContext(ctx).Should(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "InvalidSpec", status.FailedStatus, "spec.")
				expectVerdictStays(ctx, k.gvk, key, "InvalidSpec", status.FailedStatus)

				Expect(k8s.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(k.fix)))).To(Succeed())
				expectVerdict(ctx, k.gvk, key, "InvalidSpec fixed", status.InProgressStatus, "rolling out 2 replicas")
				rollOut(ctx, k, key)
			})

			It("is Failed while a Service it does not control holds its name, and Current once the name is free", func(ctx SpecContext) {
				theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
				Expect(k8s.Create(ctx, theirs)).To(Succeed())
				u := asUnstructured(k.valid(ns, "taken"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "NameConflict", status.FailedStatus, "Service taken already exists and is not this "+k.gvk.Kind+"'s")
				expectVerdictStays(ctx, k.gvk, key, "NameConflict", status.FailedStatus)

				Expect(k8s.Delete(ctx, theirs)).To(Succeed())
				expectVerdict(ctx, k.gvk, key, "NameConflict resolved", status.InProgressStatus, "rolling out 2 replicas")
				rollOut(ctx, k, key)
			})

			It("is Failed once its Deployment's rollout exceeds its progress deadline, and Current once the rollout completes", func(ctx SpecContext) {
				u := asUnstructured(k.valid(ns, "late"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "applied, no pod yet", status.InProgressStatus, "rolling out 2 replicas")
				Eventually(func(g Gomega) {
					dep := &appsv1.Deployment{}
					g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
					dep.Status = appsv1.DeploymentStatus{
						ObservedGeneration: dep.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 1,
						Conditions: []appsv1.DeploymentCondition{{
							Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
							Message: fmt.Sprintf("ReplicaSet %q has timed out progressing.", key.Name+"-5d4f8b9c7"),
						}},
					}
					g.Expect(k8s.Status().Update(ctx, dep)).To(Succeed())
				}).WithContext(ctx).Should(Succeed())
				expectVerdict(ctx, k.gvk, key, "RolloutFailed", status.FailedStatus, "ProgressDeadlineExceeded: ReplicaSet")
				expectVerdictStays(ctx, k.gvk, key, "RolloutFailed", status.FailedStatus)

				// Then the pods turn ready after all, and the status no longer reports the deadline.
				rollOut(ctx, k, key)
			})

			It("is Failed while a pod of its current template cannot pull its image, with the kubelet's message, and Current once the pod pulls it", func(ctx SpecContext) {
				u := asUnstructured(k.valid(ns, "pull"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "applied, no pod yet", status.InProgressStatus, "rolling out 2 replicas")
				rs := replicaSetOf(ctx, key, 1)
				running, pulling := podOf(ctx, rs, "aaaaa"), podOf(ctx, rs, "bbbbb")
				setContainerState(ctx, running, nil)
				setDeploymentStatus(ctx, key, 2, 2, 1)
				expectVerdict(ctx, k.gvk, key, "one of two replicas available", status.InProgressStatus, "rolling out 2 replicas: 2 running, 2 updated, 1 available")

				By("being Failed as soon as the kubelet cannot pull the image, long before the Deployment's progress deadline")
				backOff := pullBackOff(pulling)
				setContainerState(ctx, pulling, backOff)
				want := fmt.Sprintf("pod %s, container %s: ImagePullBackOff: %s", pulling.Name, pulling.Spec.Containers[0].Name, backOff.Message)
				expectVerdict(ctx, k.gvk, key, "ContainerCannotStart", status.FailedStatus, want)
				Expect(verdictOf(Default, ctx, k.gvk, key)).To(HaveField("ArgoCDMessage", Equal("ContainerCannotStart: "+want)))
				expectVerdictStays(ctx, k.gvk, key, "ContainerCannotStart", status.FailedStatus)

				By("being InProgress once the pod has pulled its image, and Current once the rollout completes")
				setContainerState(ctx, pulling, nil)
				expectVerdict(ctx, k.gvk, key, "ContainerCannotStart resolved", status.InProgressStatus, "rolling out 2 replicas: 2 running, 2 updated, 1 available")
				rollOut(ctx, k, key)
			})

			It("is Failed while the API server refuses its Deployment, and Current once it accepts it", func(ctx SpecContext) {
				quota := refuseDeployments(ctx, ns)

				u := asUnstructured(k.valid(ns, "refused"), k.gvk)
				Expect(k8s.Create(ctx, u)).To(Succeed())
				key := client.ObjectKeyFromObject(u)
				expectVerdict(ctx, k.gvk, key, "ApplyFailed", status.FailedStatus, "exceeded quota")
				expectVerdictStays(ctx, k.gvk, key, "ApplyFailed", status.FailedStatus)

				Expect(k8s.Delete(ctx, quota)).To(Succeed())
				expectVerdict(ctx, k.gvk, key, "ApplyFailed resolved", status.InProgressStatus, "rolling out 2 replicas")
				rollOut(ctx, k, key)
			})
		})
	}
})

var _ = Describe("What kstatus and Argo CD make of the AdmissionPolicy", func() {
	gvk := policyv1.GroupVersion.WithKind("AdmissionPolicy")
	key := types.NamespacedName{Name: policyv1.PolicyName}

	It("is InProgress as stored, Current once applied, Failed when stored past its webhook with what cannot be applied, and Current again once fixed", func(ctx SpecContext) {
		DeferCleanup(deletePolicy)
		deletePolicy(ctx)
		u := asUnstructured(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName},
			Spec: policyv1.AdmissionPolicySpec{Rules: []policyv1.RulePolicy{rulePolicy(webhooks.WelcomeEmail, policyv1.Audit)}}}, gvk)
		Expect(k8s.Create(ctx, u)).To(Succeed())
		Expect(judge(Default, u)).To(HaveField("KStatus", status.InProgressStatus), "as stored, before the operator has reported")
		count(gvk.Kind, "as stored", status.InProgressStatus)
		expectVerdict(ctx, gvk, key, "Applied", status.CurrentStatus, "Resource is Ready")

		By("being Current again when a status written elsewhere says otherwise")
		Expect(k8s.Get(ctx, key, u)).To(Succeed())
		stale := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"PartlyApplied","message":"written elsewhere",`+
			`"observedGeneration":%d,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, u.GetGeneration())
		Expect(k8s.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(stale)))).To(Succeed())
		Expect(judge(Default, u)).To(HaveField("KStatus", status.InProgressStatus), "as written")
		expectVerdict(ctx, gvk, key, "a status written elsewhere, put right", status.CurrentStatus, "Resource is Ready")

		storePastTheWebhook(ctx, policyv1.AdmissionPolicySpec{AllowedRegistries: []string{"not a registry"}})
		expectVerdict(ctx, gvk, key, "PartlyApplied", status.FailedStatus, `allowed registry "not a registry" is not a registry host`)

		setPolicy(ctx, policyv1.AdmissionPolicySpec{AllowedRegistries: []string{"registry.corp.example"}})
		expectVerdict(ctx, gvk, key, "PartlyApplied fixed", status.CurrentStatus, "Resource is Ready")
		Expect(verdictOf(Default, ctx, gvk, key)).To(MatchFields(IgnoreExtras, Fields{
			"ArgoCD": Equal(gitops.Healthy), "ArgoCDMessage": Equal("Applied: every rule and registry is applied"),
		}))
	})
})
