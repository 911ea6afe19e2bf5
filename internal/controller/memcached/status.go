package memcached

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	cachev1 "github.com/seedlabs/webhook-operator/api/cache/v1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// isNode reports whether a pod counts as a member of the pool: it is neither terminating nor
// finished.
func isNode(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded
}

// nodesOf returns the sorted names of the pods that are members of the pool, or nil if none is:
// the first cachev1.MaxNodesItems of them, as many as the CRD's schema holds, so that the
// status write of a larger pool (a relaxed memcached.size.range allows one) is never refused.
func nodesOf(pods []corev1.Pod) []string {
	var nodes []string
	for i := range pods {
		if isNode(&pods[i]) {
			nodes = append(nodes, pods[i].Name)
		}
	}
	slices.Sort(nodes)
	return nodes[:min(len(nodes), cachev1.MaxNodesItems)]
}

// selectorOf is the label selector of a Memcached's pods in the string form the scale
// subresource reads from status.selector.
func selectorOf(name string) string {
	return labels.SelectorFromSet(resources.MemcachedSelector(name)).String()
}

// setPoolStatus records the pods the pool has: replicas is the Deployment's status.replicas
// (0 when there is no Deployment), pods are the pods matching the selector.
func setPoolStatus(m *cachev1.Memcached, replicas int32, pods []corev1.Pod) {
	m.Status.Replicas = replicas
	m.Status.Selector = selectorOf(m.Name)
	m.Status.Nodes = nodesOf(pods)
}
