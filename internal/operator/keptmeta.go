package operator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keptMeta is the identity of a kept child, what identity keeps of its ObjectMeta: 88 bytes, where
// an ObjectMeta is 232 however little it holds. It is the metav1.Object of keptDeployment and
// keptService, for client-go's indexers and the controllers' watches, which read a child's name,
// namespace, resourceVersion and controller. Nothing writes to a kept object (a reconcile reads a
// Deployment or Service made of it, keptReader), so of what it does not keep a setter sets nothing
// and a getter gives the zero value.
type keptMeta struct {
	name, namespace, resourceVersion string
	uid                              types.UID
	generation                       int64
	deletion                         *metav1.Time
	controller                       *metav1.OwnerReference
}

// keptIdentity is the keptMeta of obj, as identity keeps it.
func keptIdentity(obj metav1.Object) keptMeta {
	m := identity(obj)
	k := keptMeta{name: m.Name, namespace: m.Namespace, resourceVersion: m.ResourceVersion, uid: m.UID,
		generation: m.Generation, deletion: m.DeletionTimestamp}
	if len(m.OwnerReferences) == 1 {
		ref := &m.OwnerReferences[0]
		// Every kept object shares one true and one false; a copy of k has its own.
		ref.Controller, ref.BlockOwnerDeletion = sharedBool(ref.Controller), sharedBool(ref.BlockOwnerDeletion)
		k.controller = ref
	}
	return k
}

var sharedTrue, sharedFalse = true, false

// sharedBool is b as sharedTrue or sharedFalse.
func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &sharedTrue
	}
	return &sharedFalse
}

// objectMeta is the ObjectMeta k keeps, a copy that shares nothing with it.
func (k *keptMeta) objectMeta() metav1.ObjectMeta {
	c := k.deepCopy()
	return metav1.ObjectMeta{Name: c.name, Namespace: c.namespace, ResourceVersion: c.resourceVersion, UID: c.uid,
		Generation: c.generation, DeletionTimestamp: c.deletion, OwnerReferences: c.GetOwnerReferences()}
}

// deepCopy is a copy of k that shares nothing with it.
func (k *keptMeta) deepCopy() keptMeta {
	c := *k
	c.deletion = k.deletion.DeepCopy()
	if k.controller != nil {
		c.controller = k.controller.DeepCopy()
	}
	return c
}

var _ metav1.Object = &keptMeta{}

func (k *keptMeta) GetNamespace() string                  { return k.namespace }
func (k *keptMeta) SetNamespace(namespace string)         { k.namespace = namespace }
func (k *keptMeta) GetName() string                       { return k.name }
func (k *keptMeta) SetName(name string)                   { k.name = name }
func (k *keptMeta) GetGenerateName() string               { return "" }
func (k *keptMeta) SetGenerateName(string)                {}
func (k *keptMeta) GetUID() types.UID                     { return k.uid }
func (k *keptMeta) SetUID(uid types.UID)                  { k.uid = uid }
func (k *keptMeta) GetResourceVersion() string            { return k.resourceVersion }
func (k *keptMeta) SetResourceVersion(version string)     { k.resourceVersion = version }
func (k *keptMeta) GetGeneration() int64                  { return k.generation }
func (k *keptMeta) SetGeneration(generation int64)        { k.generation = generation }
func (k *keptMeta) GetSelfLink() string                   { return "" }
func (k *keptMeta) SetSelfLink(string)                    {}
func (k *keptMeta) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (k *keptMeta) SetCreationTimestamp(metav1.Time)      {}
func (k *keptMeta) GetDeletionTimestamp() *metav1.Time    { return k.deletion }
func (k *keptMeta) SetDeletionTimestamp(t *metav1.Time)   { k.deletion = t }
func (k *keptMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (k *keptMeta) SetDeletionGracePeriodSeconds(*int64)  {}
func (k *keptMeta) GetLabels() map[string]string          { return nil }
func (k *keptMeta) SetLabels(map[string]string)           {}
func (k *keptMeta) GetAnnotations() map[string]string     { return nil }
func (k *keptMeta) SetAnnotations(map[string]string)      {}
func (k *keptMeta) GetFinalizers() []string               { return nil }
func (k *keptMeta) SetFinalizers([]string)                {}
func (k *keptMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}
func (k *keptMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// GetOwnerReferences gives the controller reference k keeps, the one owner a child's watch maps
// it by.
func (k *keptMeta) GetOwnerReferences() []metav1.OwnerReference {
	if k.controller == nil {
		return nil
	}
	return []metav1.OwnerReference{*k.controller}
}

// SetOwnerReferences keeps the controller among references.
func (k *keptMeta) SetOwnerReferences(references []metav1.OwnerReference) {
	k.controller = metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: references})
	if k.controller != nil {
		k.controller = k.controller.DeepCopy()
	}
}
