// Package status is how every controller reports on its object the same way: conditions set for
// the object's generation (as cluster-api's util/conditions), the Ready, Reconciling and Stalled
// conditions a Deployment's rollout and its pods imply, those and the Events of a spec that is not
// applied, and one status patch however a reconcile ends (as the deferred patch of cluster-api's
// MachineSet controller).
package status

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/seedlabs/webhook-operator/api/conditions"
)

// Object is a custom resource whose status has conditions and an observed generation.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
	SetObservedGeneration(int64)
}

// Set sets one condition of obj for obj's generation and reports whether it changed. The
// transition time changes only when the status does.
//
// Conditions other writers set are dropped, the last first, where the operator's would not fit
// beside them in the conditions.MaxItems the CRD's schema allows, so that the status write is
// never refused.
func Set(obj Object, conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	list := obj.GetConditions()
	changed := meta.SetStatusCondition(&list, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: obj.GetGeneration(),
	})
	for i := len(list) - 1; i >= 0 && len(list) > conditions.MaxItems; i-- {
		if !slices.Contains(own, list[i].Type) {
			list = slices.Delete(list, i, i+1)
		}
	}
	obj.SetConditions(list)
	return changed
}

// own are the condition types the operator sets.
var own = []string{conditions.Ready, conditions.Reconciling, conditions.Stalled, conditions.Compliant}

// retired are the condition types earlier commits of the operator reported: Available,
// Progressing and Degraded before Ready, Reconciling and Stalled replaced them, and the
// AdmissionPolicy's Accepted, which said what its Ready says.
var retired = []string{"Available", "Progressing", "Degraded", "Accepted"}

// DropRetired removes from obj's status the conditions of retired types, so that an object
// reported on by an earlier commit holds no stale condition once it is reported on again.
func DropRetired(obj Object) {
	conditions := obj.GetConditions()
	removed := false
	for _, conditionType := range retired {
		removed = meta.RemoveStatusCondition(&conditions, conditionType) || removed
	}
	if removed {
		obj.SetConditions(conditions)
	}
}

// Patch writes the status of an object, as a reconcile left it, in one request.
type Patch struct {
	c      client.Client
	before client.Object
}

// NewPatch remembers obj as it was read, to patch its status later: call it right after the Get,
// and defer Apply.
func NewPatch(c client.Client, obj client.Object) *Patch {
	before, _ := obj.DeepCopyObject().(client.Object)
	return &Patch{c: c, before: before}
}

// Apply patches obj's status when the reconcile changed it, and returns the reconcile's error
// joined with the patch's. An object deleted meanwhile has no status to write: that is no error.
func (p *Patch) Apply(ctx context.Context, obj client.Object, reconcileErr error) error {
	if equality.Semantic.DeepEqual(p.before, obj) {
		return reconcileErr
	}
	err := p.c.Status().Patch(ctx, obj, client.MergeFrom(p.before))
	if err == nil || apierrors.IsNotFound(err) {
		return reconcileErr
	}
	kind := fmt.Sprintf("%T", obj)
	if gvk, gvkErr := apiutil.GVKForObject(obj, p.c.Scheme()); gvkErr == nil {
		kind = gvk.Kind
	}
	return errors.Join(reconcileErr, fmt.Errorf("updating the status of %s %s: %w", kind, client.ObjectKeyFromObject(obj), err))
}
