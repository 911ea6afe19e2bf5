package operator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/seedlabs/webhook-operator/api/app/v1"
	authv1alpha1 "github.com/seedlabs/webhook-operator/api/auth/v1alpha1"
	cachev1alpha1 "github.com/seedlabs/webhook-operator/api/cache/v1alpha1"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// cacheOptions bound what the manager's cache holds to what the controllers read.
//
// It holds only the Deployments, Services and Pods carrying the operator's managed-by label,
// instead of every one in the cluster. Anyone who may create a Deployment can set that label, so
// the label alone bounds nothing: a child of one of the custom resources (controlled by it, under
// its name, as the controllers make them) is kept whole, for the apply to compare with; any other
// object is kept as the little ownership reads of it, its name and controller. A Pod is kept as
// the Memcached controller reads it: its name, labels and phase. Nothing reads managedFields.
func cacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: ours, Transform: keepChildren},
			&corev1.Service{}:    {Label: ours, Transform: keepChildren},
			&corev1.Pod{}:        {Label: ours, Transform: keepPoolMember},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// parentKinds are the custom resources whose children the controllers apply.
var parentKinds = map[schema.GroupKind]bool{
	{Group: authv1alpha1.GroupVersion.Group, Kind: "Welcome"}:    true,
	{Group: cachev1alpha1.GroupVersion.Group, Kind: "Memcached"}: true,
	{Group: appv1.GroupVersion.Group, Kind: "DeployObject"}:      true,
}

// isChild reports whether obj is a custom resource's Deployment or Service: controlled by one of
// parentKinds under obj's own name. Each custom resource has at most one of each, so however many
// objects carry the label, the cache keeps whole no more of them than there are custom resources.
func isChild(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Name != obj.GetName() {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && parentKinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
}

// keepChildren is the cache transform of Deployments and Services: children of the custom
// resources whole but for managedFields, anything else as its skeleton.
func keepChildren(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if isChild(o) {
			o.ManagedFields = nil
			return o, nil
		}
		return &appsv1.Deployment{ObjectMeta: skeleton(o)}, nil
	case *corev1.Service:
		if isChild(o) {
			o.ManagedFields = nil
			return o, nil
		}
		return &corev1.Service{ObjectMeta: skeleton(o)}, nil
	}
	return obj, nil
}

// keepPoolMember is the cache transform of Pods: what tells whether a pod is a member of a
// Memcached's pool (its labels, its deletion and its phase), and nothing of its spec.
func keepPoolMember(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return &corev1.Pod{ObjectMeta: skeleton(pod), Status: corev1.PodStatus{Phase: pod.Status.Phase}}, nil
	}
	return obj, nil
}

// keptLabels are the labels the controllers select and map objects by.
var keptLabels = []string{resources.LabelName, resources.LabelInstance, resources.LabelManagedBy}

// skeleton is what identifies obj, and no more: a bounded size whatever obj carries.
func skeleton(obj metav1.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:              obj.GetName(),
		Namespace:         obj.GetNamespace(),
		UID:               obj.GetUID(),
		ResourceVersion:   obj.GetResourceVersion(),
		Generation:        obj.GetGeneration(),
		DeletionTimestamp: obj.GetDeletionTimestamp(),
	}
	for _, key := range keptLabels {
		if v, ok := obj.GetLabels()[key]; ok {
			if m.Labels == nil {
				m.Labels = make(map[string]string, len(keptLabels))
			}
			m.Labels[key] = v
		}
	}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		m.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return m
}
