package webhooks

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"

	"github.com/seedlabs/webhook-operator/internal/controller/message"
)

// ReasonRefused is the reason of the Warning Event recorded on a namespace when admission refuses
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

// recordDenial records a refusal as a Warning Event regarding the object's namespace, where a
// namespace's owner looks (kubectl events -n NS), related to the object, which may not exist. A
// dry run, which has no side effects (the webhooks declare sideEffects: NoneOnDryRun), records
// nothing, nor does a cluster-scoped request or a manager without a recorder. The recorder folds
// the same refusal repeated (the same object and operation) into one Event's series, so a
// GitOps tool retrying a bad object does not flood the namespace.
func recordDenial(recorder events.EventRecorder, d denial, errs field.ErrorList) {
	if recorder == nil || d.dryRun || d.namespace == "" || len(errs) == 0 {
		return
	}
	apiVersion, kind := d.gvk.ToAPIVersionAndKind()
	related := &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: d.namespace, Name: d.name}
	regarding := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: d.namespace},
	}
	prefix := fmt.Sprintf("%s %s %q refused: ", strings.ToLower(d.operation), kind, d.name)
	recorder.Eventf(regarding, related, corev1.EventTypeWarning, ReasonRefused, actionOf(d.operation), "%s",
		prefix+message.Violations(errs, message.EventNoteLimit-len(prefix)))
}

// actionOf is an operation as an Event's action: Create, Update.
func actionOf(operation string) string {
	if operation == "" {
		return "Admit"
	}
	return operation[:1] + strings.ToLower(operation[1:])
}
