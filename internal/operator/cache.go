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
	"github.com/seedlabs/webhook-operator/internal/reconcile/apply"
	"github.com/seedlabs/webhook-operator/internal/resources"
)

// cacheOptions bound what the manager's cache holds to what the controllers read, so that its
// memory grows with the number of custom resources by a few KiB each, whatever their objects
// carry (docs/performance.md).
//
// It holds only the Deployments, Services and Pods carrying the operator's managed-by label,
// instead of every one in the cluster. Anyone who may create a Deployment can set that label, so
// the label alone bounds nothing: of a child of one of the custom resources (controlled by it,
// under its name, as the controllers make them) it keeps what a reconcile reads, and the hash of
// what the operator's field manager holds of it (apply.AnnotationHeld), which tells whether an
// apply could change anything; of any other object, the little ownership reads of it, its name and
// controller. A Pod is kept as the Memcached controller reads it: its name, labels and phase. Of
// the custom resources and namespaces it drops what no one reads: labels and annotations (but a
// namespace's labels, which the policy's overrides select), and managedFields of everything.
func cacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: ours, Transform: keepChildren},
			&corev1.Service{}:    {Label: ours, Transform: keepChildren},
			&corev1.Pod{}:        {Label: ours, Transform: keepPoolMember},
			&corev1.Namespace{}:  {Transform: keepNamespaceLabels},
		},
		// Not ByObject for the custom resources: the cache resolves every ByObject type when it is
		// made, and a missing CRD would keep the manager from starting.
		DefaultTransform: withoutWhatIsNotRead,
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

// keepChildren is the cache transform of Deployments and Services: of a child of a custom resource,
// what a reconcile reads and what its field manager holds (keptDeployment, keptService); of
// anything else, its skeleton.
func keepChildren(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if isChild(o) {
			return keptDeployment(o), nil
		}
		return &appsv1.Deployment{ObjectMeta: identity(o)}, nil
	case *corev1.Service:
		if isChild(o) {
			return keptService(o), nil
		}
		return &corev1.Service{ObjectMeta: identity(o)}, nil
	}
	return obj, nil
}

// keptDeployment is what a reconcile reads of a child Deployment: its replicas and the rollout in
// its status, and what the operator holds of it.
func keptDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	kept := &appsv1.Deployment{ObjectMeta: heldSkeleton(d), Spec: appsv1.DeploymentSpec{Replicas: d.Spec.Replicas}, Status: d.Status}
	return kept
}

// maxKeptPorts is the most ports of a child Service kept: a custom resource's Service has no
// more (DeployObject's spec.ports maxItems), so a Service with more holds ports added by hand,
// which the next reconcile replaces (apply.ReplaceForeignServicePorts reads them past the cache).
const maxKeptPorts = 100

// keptService is what a reconcile reads of a child Service: its type, address and ports (the node
// ports the API server allocated), and what the operator holds of it.
func keptService(s *corev1.Service) *corev1.Service {
	kept := &corev1.Service{ObjectMeta: heldSkeleton(s), Spec: corev1.ServiceSpec{Type: s.Spec.Type, ClusterIP: s.Spec.ClusterIP}}
	if len(s.Spec.Ports) <= maxKeptPorts {
		kept.Spec.Ports = s.Spec.Ports
	} else {
		kept.Annotations[apply.AnnotationMorePorts] = "true"
	}
	return kept
}

// heldSkeleton is obj's skeleton with apply.AnnotationHeld. A child whose managedFields do not
// extract (none of the operator's, say) gets none, and is applied on its next reconcile.
//
// client-go may hand a transform an object it has already transformed (a new leader's informers
// do, as they fill the cache), so a transform must be idempotent: an object without managedFields
// keeps the annotations this one made, as the hash of nothing would tell every reconcile to apply
// again. Only the owner of a child's namespace could send one without managedFields and with these
// annotations, and would only keep the operator from putting back what they change by hand in it.
func heldSkeleton(obj metav1.Object) metav1.ObjectMeta {
	m := identity(obj)
	m.Annotations = make(map[string]string, 1)
	if len(obj.GetManagedFields()) == 0 {
		for _, key := range []string{apply.AnnotationHeld, apply.AnnotationMorePorts} {
			if v, ok := obj.GetAnnotations()[key]; ok {
				m.Annotations[key] = v
			}
		}
		return m
	}
	if held, err := apply.Held(obj); err == nil {
		m.Annotations[apply.AnnotationHeld] = held
	}
	return m
}

// withoutWhatIsNotRead is the cache transform of every object but those above: no managedFields,
// and of the custom resources no labels or annotations either. The controllers read neither of a
// custom resource (kubectl apply's last-applied-configuration among them, as large as the object),
// and a tenant can make both as large as the API allows.
func withoutWhatIsNotRead(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	switch obj.(type) {
	case *authv1alpha1.Welcome, *cachev1alpha1.Memcached, *appv1.DeployObject:
		o.SetLabels(nil)
		o.SetAnnotations(nil)
	}
	return obj, nil
}

// keepNamespaceLabels is the cache transform of Namespaces: their name and labels, which the
// policy's namespace overrides select, and nothing else.
func keepNamespaceLabels(obj any) (any, error) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels, DeletionTimestamp: ns.DeletionTimestamp,
		}}, nil
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

// keptLabels are the labels by which the Memcached controller maps its pool's pods.
var keptLabels = []string{resources.LabelName, resources.LabelInstance, resources.LabelManagedBy}

// skeleton is obj's identity and the labels of keptLabels it carries.
func skeleton(obj metav1.Object) metav1.ObjectMeta {
	m := identity(obj)
	for _, key := range keptLabels {
		if v, ok := obj.GetLabels()[key]; ok {
			if m.Labels == nil {
				m.Labels = make(map[string]string, len(keptLabels))
			}
			m.Labels[key] = v
		}
	}
	return m
}

// identity is what identifies obj, and no more: a bounded size whatever obj carries. The
// controllers find a child by its name and tell whose it is by its controller reference; what
// labels it carries, the cache's label selector has already read.
func identity(obj metav1.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:              obj.GetName(),
		Namespace:         obj.GetNamespace(),
		UID:               obj.GetUID(),
		ResourceVersion:   obj.GetResourceVersion(),
		Generation:        obj.GetGeneration(),
		DeletionTimestamp: obj.GetDeletionTimestamp(),
	}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		m.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return m
}
