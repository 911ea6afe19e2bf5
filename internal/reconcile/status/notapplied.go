package status

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
)

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
// when that is news, and returns err, so that the work queue retries with backoff. The other
// conditions stay: what was rolled out before still runs.
func ApplyFailed(events recorder.EventRecorder, obj Object, err error) error {
	if Set(obj, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonApplyFailed, message.Truncate(err.Error(), message.ConditionLimit)) {
		events.Eventf(obj, nil, corev1.EventTypeWarning, conditions.ReasonApplyFailed, "Apply", "%s",
			message.Truncate(err.Error(), message.EventNoteLimit))
	}
	return err
}

// notApplied records why nothing is applied for obj's generation: Degraded carries the reason and
// message, Progressing says what would unblock it, and Available, unless a rollout of an earlier
// spec set it (those pods still run), says that nothing was rolled out. It reports whether
// Degraded changed.
func notApplied(obj Object, reason, message, unblock string) bool {
	obj.SetObservedGeneration(obj.GetGeneration())
	changed := Set(obj, conditions.Degraded, metav1.ConditionTrue, reason, message)
	Set(obj, conditions.Progressing, metav1.ConditionFalse, reason, unblock)
	if !Has(obj, conditions.Available) {
		Set(obj, conditions.Available, metav1.ConditionFalse, reason, "nothing was rolled out")
	}
	return changed
}
