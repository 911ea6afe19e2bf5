package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestKeptMetaKeepsTheIdentity: a keptMeta gives back, as a metav1.Object and as an ObjectMeta,
// the identity of the object it was made of (its controller among its owners, no labels,
// annotations or finalizers), and what it gives shares nothing with it.
func TestKeptMetaKeepsTheIdentity(t *testing.T) {
	deleted := metav1.Now()
	controller := metav1.OwnerReference{APIVersion: "app.seedlabs.dev/v1", Kind: "DeployObject", Name: "shop", UID: "o1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	obj := &metav1.ObjectMeta{
		Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3, DeletionTimestamp: &deleted,
		Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}, Finalizers: []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "o2"}, controller},
	}
	k := keptIdentity(obj)
	want := metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "d1", ResourceVersion: "7", Generation: 3,
		DeletionTimestamp: &deleted, OwnerReferences: []metav1.OwnerReference{controller}}
	got := k.objectMeta()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objectMeta() (-want +got):\n%s", diff)
	}
	var o metav1.Object = &k
	if o.GetName() != "shop" || o.GetNamespace() != "ns" || o.GetUID() != "d1" || o.GetResourceVersion() != "7" ||
		o.GetGeneration() != 3 || !o.GetDeletionTimestamp().Equal(&deleted) || o.GetLabels() != nil || o.GetAnnotations() != nil {
		t.Errorf("as a metav1.Object: %+v", k)
	}
	if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != "o1" {
		t.Errorf("the controller is %+v, want the DeployObject o1", ref)
	}

	*got.OwnerReferences[0].Controller = false
	got.DeletionTimestamp.Time = got.DeletionTimestamp.AddDate(1, 0, 0)
	if again := k.objectMeta(); !*again.OwnerReferences[0].Controller || !again.DeletionTimestamp.Equal(&deleted) {
		t.Errorf("a change to what objectMeta() gave changed the kept identity: %+v", again)
	}
	if !sharedTrue || sharedFalse {
		t.Error("a change to what objectMeta() gave changed the shared booleans")
	}
}
