package status

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
)

// notAppliedReasons are the reasons of a generation that is not applied: what InvalidSpec,
// NameConflict and ApplyFailed report.
var notAppliedReasons = []string{conditions.ReasonInvalidSpec, conditions.ReasonNameConflict, conditions.ReasonApplyFailed}

// InvalidSpec records that obj's stored spec breaks the admission rules errs lists, so nothing is
// applied, and a Warning Event when that is news.
func InvalidSpec(events recorder.EventRecorder, obj Object, errs field.ErrorList) {
	if notApplied(obj, conditions.ReasonInvalidSpec, message.Violations(errs, message.ConditionLimit),
		"the spec is not rolled out until it is fixed") {
		events.Eventf(obj, nil, corev1.EventTypeWarning, conditions.ReasonInvalidSpec, "Validate",
			"%s", message.Note("spec is not rolled out: ", errs))
	}
}

// NameConflict records that a Deployment or Service of obj's name exists that obj does not
// control, as conflict describes, so nothing is applied, and a Warning Event when that is news.
func NameConflict(events recorder.EventRecorder, obj Object, conflict string) {
	if notApplied(obj, conditions.ReasonNameConflict, message.Truncate(conflict, message.ConditionLimit),
		"nothing is applied until the name conflict is resolved") {
		events.Eventf(obj, nil, corev1.EventTypeWarning, conditions.ReasonNameConflict, "Apply",
			"%s", message.Truncate(conflict, message.EventNoteLimit))
	}
}

// ApplyFailed records that obj's Deployment or Service could not be applied, and a Warning Event
// when that is news, and returns err, so that the work queue retries with backoff. What was
// applied before is left as it was.
func ApplyFailed(events recorder.EventRecorder, obj Object, err error) error {
	if notApplied(obj, conditions.ReasonApplyFailed, message.Truncate(err.Error(), message.ConditionLimit),
		"the apply is retried with backoff") {
		events.Eventf(obj, nil, corev1.EventTypeWarning, conditions.ReasonApplyFailed, "Apply", "%s",
			message.Truncate(err.Error(), message.EventNoteLimit))
	}
	return err
}

// Applied reports whether obj's status says that its current generation was applied: its last
// report is of the rollout of that generation, not of a spec held back or of an apply that failed.
func Applied(obj Object) bool {
	c := meta.FindStatusCondition(obj.GetConditions(), conditions.Reconciling)
	return c != nil && c.ObservedGeneration == obj.GetGeneration() && !slices.Contains(notAppliedReasons, c.Reason)
}

// notApplied records that obj's generation is observed but not applied, and why: Stalled is
// True with the reason and message, and Ready and Reconciling are False with the same reason and
// what would unblock it. The pods an earlier spec rolled out, if any, go on running; the status's
// replica counts say how many. It reports whether Stalled changed.
func notApplied(obj Object, reason, message, unblock string) bool {
	obj.SetObservedGeneration(obj.GetGeneration())
	DropRetired(obj)
	changed := Set(obj, conditions.Stalled, metav1.ConditionTrue, reason, message)
	Set(obj, conditions.Reconciling, metav1.ConditionFalse, reason, unblock)
	Set(obj, conditions.Ready, metav1.ConditionFalse, reason, unblock)
	return changed
}
