package webhooks

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"

	"github.com/seedlabs/webhook-operator/internal/message"
)

// ReasonRefused is the reason of the Warning Event recorded in a namespace when admission refuses
// an object of it.
const ReasonRefused = "AdmissionRefused"

// denial is what a refused request leaves for the Event recorded about it.
type denial struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	// operation is the request's: CREATE or UPDATE.
	operation string
	dryRun    bool
}

// recordDenial records a refusal as a Warning Event in the object's namespace, regarding the
// object (which a refused create leaves absent), where the namespace's owner looks: kubectl events
// -n NS. A dry run, which has no side effects (the validating webhooks declare sideEffects:
// NoneOnDryRun), records nothing, nor does a manager without a recorder. The recorder folds the
// same refusal repeated (the same object, operation and reason) into one Event's series, so a
// GitOps tool retrying a bad object does not flood the namespace.
func recordDenial(recorder events.EventRecorder, d denial, errs field.ErrorList) {
	if recorder == nil || d.dryRun || d.namespace == "" || len(errs) == 0 {
		return
	}
	apiVersion, kind := d.gvk.ToAPIVersionAndKind()
	regarding := &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: d.namespace, Name: d.name}
	prefix := strings.ToLower(d.operation) + " refused: "
	recorder.Eventf(regarding, nil, corev1.EventTypeWarning, ReasonRefused, actionOf(d.operation), "%s",
		prefix+message.Violations(errs, message.EventNoteLimit-len(prefix)))
}

// actionOf is an operation as an Event's action: Create, Update.
func actionOf(operation string) string {
	if operation == "" {
		return "Admit"
	}
	return operation[:1] + strings.ToLower(operation[1:])
}
