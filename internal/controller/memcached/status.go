package memcached

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/controller/deploymentstatus"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// Messages of conditions whose text does not depend on the rollout.
const (
	messageNotRolledOut  = "the spec is not rolled out until it is fixed"
	messageNothingRolled = "nothing was rolled out"
)

// rollout is what the Deployment reports about bringing up the desired instances.
type rollout struct {
	desired            int32
	generation         int64
	observedGeneration int64
	replicas           int32
	updated            int32
	ready              int32
	available          int32
	// failure is set when the Deployment says its rollout cannot progress.
	failure string
}

// rolloutOf reads the state of a Deployment from the object the API server returned on apply.
func rolloutOf(dep *appsv1ac.DeploymentApplyConfiguration) rollout {
	desired, generation, st := deploymentstatus.Read(dep)
	return rollout{
		desired:            desired,
		generation:         generation,
		observedGeneration: st.ObservedGeneration,
		replicas:           st.Replicas,
		updated:            st.UpdatedReplicas,
		ready:              st.ReadyReplicas,
		available:          st.AvailableReplicas,
		failure:            deploymentstatus.Failure(generation, st),
	}
}

// complete reports whether exactly the desired instances run the current spec and are
// available, and no instance of an older spec is left.
func (r rollout) complete() bool {
	return r.observedGeneration >= r.generation &&
		r.updated == r.desired && r.replicas == r.desired && r.available == r.desired
}

// isNode reports whether a pod counts as a member of the pool: it is neither terminating nor
// finished.
func isNode(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded
}

// nodesOf returns the sorted names of the pods that are members of the pool, or nil if none is.
func nodesOf(pods []corev1.Pod) []string {
	var nodes []string
	for i := range pods {
		if isNode(&pods[i]) {
			nodes = append(nodes, pods[i].Name)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// selectorOf is the label selector of a Memcached's pods in the string form the scale
// subresource reads from status.selector.
func selectorOf(name string) string {
	return labels.SelectorFromSet(resources.MemcachedSelector(name)).String()
}

// setPoolStatus records the pods the pool has: replicas is the Deployment's status.replicas
// (0 when there is no Deployment), pods are the pods matching the selector.
func setPoolStatus(m *cachev1alpha1.Memcached, replicas int32, pods []corev1.Pod) {
	m.Status.Replicas = replicas
	m.Status.Selector = selectorOf(m.Name)
	m.Status.Nodes = nodesOf(pods)
}

// setRolloutStatus records the state of the applied Deployment and the pool's pods in m's status.
func setRolloutStatus(m *cachev1alpha1.Memcached, dep *appsv1ac.DeploymentApplyConfiguration, pods []corev1.Pod) {
	r := rolloutOf(dep)
	m.Status.ObservedGeneration = m.Generation
	setPoolStatus(m, r.replicas, pods)
	setRolloutConditions(m, r)
}

// setRolloutConditions sets Available, Progressing and Degraded from a rollout.
func setRolloutConditions(m *cachev1alpha1.Memcached, r rollout) {
	switch {
	case r.available < r.desired:
		setCondition(m, cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, cachev1alpha1.ReasonInstancesUnavailable,
			fmt.Sprintf("%d of %d instances available", r.available, r.desired))
	case r.complete():
		setCondition(m, cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonRolledOut,
			fmt.Sprintf("%d of %d instances available", r.available, r.desired))
	default:
		// Every requested instance is available, but the pool is still being brought to the
		// spec: an older spec's pods are being replaced, or the pool is scaling down.
		setCondition(m, cachev1alpha1.ConditionAvailable, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
			fmt.Sprintf("%d instances available, %d requested", r.available, r.desired))
	}

	switch {
	case r.failure != "":
		setCondition(m, cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolloutFailed, r.failure)
		setCondition(m, cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonRolloutFailed, r.failure)
		return
	case r.complete():
		setCondition(m, cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, cachev1alpha1.ReasonRolledOut,
			fmt.Sprintf("spec.size %d is rolled out: every instance runs the current spec", r.desired))
	default:
		setCondition(m, cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, cachev1alpha1.ReasonReconciling,
			fmt.Sprintf("bringing the pool to %d instances: %d running, %d updated, %d available",
				r.desired, r.replicas, r.updated, r.available))
	}
	setCondition(m, cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, cachev1alpha1.ReasonAsExpected, "")
}

// setInvalidSpec records that the stored spec breaks the admission rules and reports whether
// that is news. Available is left as it is when a rollout of an earlier spec set it.
func setInvalidSpec(m *cachev1alpha1.Memcached, message string) bool {
	return setNotApplied(m, cachev1alpha1.ReasonInvalidSpec, message, messageNotRolledOut)
}

// setNameConflict records that a Deployment or Service of the name exists that m does not
// control, so nothing is applied, and reports whether that is news.
func setNameConflict(m *cachev1alpha1.Memcached, message string) bool {
	return setNotApplied(m, cachev1alpha1.ReasonNameConflict, message, "nothing is applied until the name conflict is resolved")
}

// setNotApplied records why nothing is applied for the current generation: Degraded carries the
// reason and message, Progressing says what would unblock it, and Available, unless a rollout of
// an earlier spec set it, says that nothing was rolled out. It reports whether Degraded changed.
func setNotApplied(m *cachev1alpha1.Memcached, reason, message, progressing string) bool {
	m.Status.ObservedGeneration = m.Generation
	changed := setCondition(m, cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, message)
	setCondition(m, cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, progressing)
	if meta.FindStatusCondition(m.Status.Conditions, cachev1alpha1.ConditionAvailable) == nil {
		setCondition(m, cachev1alpha1.ConditionAvailable, metav1.ConditionFalse, reason, messageNothingRolled)
	}
	return changed
}

// setApplyFailed records that the Deployment or Service could not be applied and reports whether
// that is news.
func setApplyFailed(m *cachev1alpha1.Memcached, message string) bool {
	return setCondition(m, cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.ReasonApplyFailed, message)
}

// setCondition sets one condition for the current generation and reports whether it changed.
func setCondition(m *cachev1alpha1.Memcached, conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: m.Generation,
	})
}
