//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1 "github.com/seedlabs/webhook-operator/api/auth/v1"
	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/test/gitops"
)

// gitopsNamespace holds the objects whose status the GitOps specs read; it enforces the
// restricted Pod Security Standard.
const gitopsNamespace = "e2e-gitops"

// What Flux (kstatus) and Argo CD (the health check of config/argocd) read of an object's status,
// while its pods really start on the node: never done before they are.
var _ = Describe("What kstatus and Argo CD make of the status, with pods that really start", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		deployWithNamespace(ctx, gitopsNamespace, true)
	}, NodeTimeout(4*time.Minute))

	// The objects are built when the spec runs, once the suite's settings (cfg) are read.
	for _, tc := range []struct {
		kind string
		obj  func() client.Object
		// edit is a merge patch of a spec edit that rolls new pods out; edited tells a pod of it.
		edit   func() string
		edited func(pod *corev1.Pod) bool
	}{
		{
			kind: "Welcome",
			obj: func() client.Object {
				return &authv1.Welcome{ObjectMeta: metav1.ObjectMeta{Namespace: gitopsNamespace, Name: "greeter"},
					Spec: authv1.WelcomeSpec{Name: "Ada", Replicas: ptr.To[int32](2)}}
			},
			edit:   func() string { return `{"spec":{"port":9000}}` },
			edited: func(pod *corev1.Pod) bool { return hasContainerPort(pod, 9000) },
		},
		{
			kind: "Memcached",
			obj: func() client.Object {
				return &cachev1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: gitopsNamespace, Name: "cache"},
					Spec: cachev1.MemcachedSpec{Size: ptr.To[int32](2)}}
			},
			edit:   func() string { return `{"spec":{"containerPort":11311}}` },
			edited: func(pod *corev1.Pod) bool { return hasContainerPort(pod, 11311) },
		},
		{
			kind: "DeployObject",
			obj: func() client.Object {
				return &appv1.DeployObject{ObjectMeta: metav1.ObjectMeta{Namespace: gitopsNamespace, Name: "echo"},
					Spec: appv1.DeployObjectSpec{
						Image: cfg.echo + ":v1", Replicas: ptr.To[int32](2),
						Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
						Env:   []corev1.EnvVar{{Name: "LISTEN", Value: "8080"}},
					}}
			},
			edit:   func() string { return fmt.Sprintf(`{"spec":{"image":%q}}`, cfg.echo+":v2") },
			edited: func(pod *corev1.Pod) bool { return pod.Spec.Containers[0].Image == cfg.echo+":v2" },
		},
	} {
		It("reports a "+tc.kind+" InProgress until its pods are ready, Current once they are, and InProgress after a spec edit until the new pods are", func(ctx SpecContext) {
			obj := tc.obj()
			gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
			Expect(err).NotTo(HaveOccurred())
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{Object: content}
			u.SetGroupVersionKind(gvk)

			Expect(k8s.Create(ctx, u)).To(Succeed())
			Expect(gitopsVerdict(Default, u)).To(HaveField("KStatus", status.InProgressStatus), "as stored")
			const replicas = 2
			seen := watchVerdictsUntilCurrent(ctx, u, replicas, func(*corev1.Pod) bool { return true })
			AddReportEntry(tc.kind+": verdicts from creation to Current", seen)

			Expect(k8s.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(tc.edit())))).To(Succeed())
			Expect(gitopsVerdict(Default, u)).To(HaveField("KStatus", status.InProgressStatus), "as edited")
			seen = watchVerdictsUntilCurrent(ctx, u, replicas, tc.edited)
			AddReportEntry(tc.kind+": verdicts from the spec edit to Current", seen)
		}, SpecTimeout(4*time.Minute))
	}
})

// hasContainerPort reports whether the pod's container listens on port.
func hasContainerPort(pod *corev1.Pod, port int32) bool {
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.ContainerPort == port {
			return true
		}
	}
	return false
}

// gitopsVerdict is what kstatus and the Argo CD health check make of u; they must agree.
func gitopsVerdict(g Gomega, u *unstructured.Unstructured) gitops.Verdict {
	v, err := gitops.Judge(u)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	g.ExpectWithOffset(1, v.Agree()).To(BeTrue(), "kstatus and Argo CD disagree on %s %s: %s", u.GetKind(), u.GetName(), v)
	return v
}

// watchVerdictsUntilCurrent reads u from the API server, as a GitOps tool polls it, until kstatus
// says Current, and returns the verdicts it saw, each once in a row. Until then every verdict
// must be InProgress, and some must come from the operator reporting the rollout; once it is
// Current, the rollout must really be done: the Deployment has observed its spec, and exactly
// replicas pods, each running the current spec (current) and Ready on the node, are left.
func watchVerdictsUntilCurrent(ctx context.Context, u *unstructured.Unstructured, replicas int, current func(*corev1.Pod) bool) []string {
	var seen []string
	reportedRollout := false
	key := client.ObjectKeyFromObject(u)
	EventuallyWithOffset(1, func(g Gomega) status.Status {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(u.GroupVersionKind())
		g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
		v := gitopsVerdict(Default, obj)
		if line := string(v.KStatus) + ": " + v.KStatusMessage; len(seen) == 0 || seen[len(seen)-1] != line {
			seen = append(seen, line)
		}
		switch v.KStatus {
		case status.InProgressStatus:
			reportedRollout = reportedRollout || strings.HasPrefix(v.KStatusMessage, "rolling out")
		case status.CurrentStatus:
			Expect(reportedRollout).To(BeTrue(), "%s %s was Current before the operator reported a rollout: %q", u.GetKind(), u.GetName(), seen)
			expectPodsRolledOut(ctx, key, replicas, current)
		default:
			Fail(fmt.Sprintf("%s %s is %s while its pods start: %q", u.GetKind(), u.GetName(), v, seen))
		}
		return v.KStatus
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(100*time.Millisecond).Should(Equal(status.CurrentStatus), "%q", &seen)
	return seen
}

// expectPodsRolledOut checks, with no second chance, that the Deployment of key has rolled out:
// it has observed its spec and reports replicas pods updated, ready and available, and exactly
// replicas pods it controls are left that are not terminating, each of the current spec and Ready.
func expectPodsRolledOut(ctx context.Context, key types.NamespacedName, replicas int, current func(*corev1.Pod) bool) {
	dep := &appsv1.Deployment{}
	ExpectWithOffset(2, k8s.Get(ctx, key, dep)).To(Succeed())
	want := int32(replicas)
	ExpectWithOffset(2, dep.Status).To(And(
		HaveField("ObservedGeneration", dep.Generation), HaveField("Replicas", want), HaveField("UpdatedReplicas", want),
		HaveField("ReadyReplicas", want), HaveField("AvailableReplicas", want)), "the Deployment when kstatus said Current")
	var pods []corev1.Pod
	for _, pod := range controlledPods(ctx, Default, controlledReplicaSets(ctx, Default, dep)) {
		if pod.DeletionTimestamp == nil {
			pods = append(pods, pod)
		}
	}
	ExpectWithOffset(2, pods).To(HaveLen(replicas), "pods not terminating when kstatus said Current")
	for i := range pods {
		ExpectWithOffset(2, podReady(&pods[i])).To(BeTrue(), "pod %s when kstatus said Current", pods[i].Name)
		ExpectWithOffset(2, current(&pods[i])).To(BeTrue(), "pod %s runs the current spec when kstatus said Current", pods[i].Name)
	}
}
