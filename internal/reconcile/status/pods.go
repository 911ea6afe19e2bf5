package status

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/seedlabs/webhook-operator/internal/message"
)

// cannotStart are the reasons a kubelet gives for a container waiting that it will not start
// until someone changes the spec or the cluster, which kstatus calls Stalled (and Argo CD's pod
// health Degraded): its image cannot be pulled (ErrImagePull after an attempt, ImagePullBackOff
// until the next: the reason alternates, so both count, or Stalled would come and go), its image
// reference does not parse (InvalidImageName), it is not on the node and may not be pulled
// (ErrImageNeverPull), or its configuration cannot be made (CreateContainerConfigError: a
// ConfigMap, Secret or key it reads is missing, or runAsNonRoot meets an image that runs as
// root). The kubelet retries each, and each ends on its own once the pull secret, image or object
// is there. Not among them: what progresses (ContainerCreating, PodInitializing), and what the
// runtime reports once it made the container or tried to (CreateContainerError,
// RunContainerError, CrashLoopBackOff), which may pass without a change, as a dependency comes up;
// the Deployment's progress deadline reports those.
var cannotStart = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"}

// revisionAnnotation is where the Deployment controller numbers the ReplicaSets of a Deployment:
// the one of the template it rolls out has the highest revision.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// CannotStart returns the status of the first container of pod, init containers first, that
// waits for a reason of cannotStart, or nil when none does or the pod is being deleted, its
// containers no longer to start.
func CannotStart(pod *corev1.Pod) *corev1.ContainerStatus {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			if w := statuses[i].State.Waiting; w != nil && slices.Contains(cannotStart, w.Reason) {
				return &statuses[i]
			}
		}
	}
	return nil
}

// ObserveRollout is RolloutOf(dep), and why a pod of the Deployment's current template cannot
// start (PodFailure): the Deployment itself says nothing of it until its progress deadline has
// passed, ten minutes by default, and then not why. The pods are read from cached by selector, the
// Deployment's (which dep lacks when the apply was left out: the cache keeps no selector); only
// when one cannot start, the Deployment's ReplicaSets from live (their metadata), to tell the
// current template's pods from those of an older one, which the rollout replaces: a pod of an
// older template that cannot start holds nothing back.
//
// A rollout whose Deployment has not observed its template yet has no pod of it; one that is
// complete has every pod ready. Neither reads anything.
func ObserveRollout(ctx context.Context, cached, live client.Reader, dep *appsv1ac.DeploymentApplyConfiguration, selector map[string]string) (Rollout, error) {
	r := RolloutOf(dep)
	if !r.Current() || r.Complete() {
		return r, nil
	}
	namespace, name := ptr.Deref(dep.Namespace, ""), ptr.Deref(dep.Name, "")
	inNamespace, matching := client.InNamespace(namespace), client.MatchingLabels(selector)
	pods := &corev1.PodList{}
	if err := cached.List(ctx, pods, inNamespace, matching); err != nil {
		return r, fmt.Errorf("listing the pods of Deployment %s/%s: %w", namespace, name, err)
	}
	var stuck []*corev1.Pod
	for i := range pods.Items {
		if CannotStart(&pods.Items[i]) != nil {
			stuck = append(stuck, &pods.Items[i])
		}
	}
	if len(stuck) == 0 {
		return r, nil
	}
	current, err := currentReplicaSet(ctx, live, ptr.Deref(dep.UID, ""), inNamespace, matching)
	if err != nil {
		return r, fmt.Errorf("listing the ReplicaSets of Deployment %s/%s: %w", namespace, name, err)
	}
	if current == "" {
		return r, nil
	}
	// The first by name, so that the message stays the same while the same pods cannot start.
	slices.SortFunc(stuck, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, pod := range stuck {
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != current {
			continue
		}
		c := CannotStart(pod)
		failure := fmt.Sprintf("pod %s, container %s: %s", pod.Name, c.Name, c.State.Waiting.Reason)
		if c.State.Waiting.Message != "" {
			failure += ": " + c.State.Waiting.Message
		}
		r.PodFailure = message.Truncate(failure, message.ConditionLimit)
		break
	}
	return r, nil
}

// currentReplicaSet returns the uid of the ReplicaSet that runs the current template of the
// Deployment of uid deployment, or "" when it controls none: of those it controls, the one of the
// highest revision, as the Deployment controller numbers them once it has observed the template
// (a template rolled back to gets its old ReplicaSet back, renumbered).
func currentReplicaSet(ctx context.Context, live client.Reader, deployment types.UID, opts ...client.ListOption) (types.UID, error) {
	sets := &metav1.PartialObjectMetadataList{}
	sets.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSetList"))
	if err := live.List(ctx, sets, opts...); err != nil {
		return "", err
	}
	var current types.UID
	newest := int64(-1)
	for i := range sets.Items {
		rs := &sets.Items[i]
		ref := metav1.GetControllerOf(rs)
		revision, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
		if ref == nil || ref.UID != deployment || err != nil {
			continue
		}
		if revision > newest {
			newest, current = revision, rs.UID
		}
	}
	return current, nil
}
