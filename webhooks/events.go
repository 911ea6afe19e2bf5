package webhooks

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/lru"

	"github.com/seedlabs/webhook-operator/api/conditions"
	"github.com/seedlabs/webhook-operator/internal/message"
)

// denial is what a refused request leaves for the Event recorded about it.
type denial struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	// operation is the request's: CREATE or UPDATE.
	operation string
	dryRun    bool
}

// How many refusal Events are recorded. The events.k8s.io recorder keeps each Event it records
// for 6 to 12 minutes, to fold repeats of it into a series, and an Event regards one object: a
// client refused under a new name each time (generateName) would have it keep one per request.
// So each namespace records at most refusalEventBurst at once and one more every
// refusalEventEvery, and all namespaces together at most refusalEventsPerSecond; the refusals
// past that are counted in webhook_operator_refusal_events_suppressed_total. The client is told
// of every refusal either way, and webhook_operator_admission_decisions_total counts each.
const (
	refusalEventBurst      = 50
	refusalEventEvery      = 6 * time.Second
	refusalEventsPerSecond = 10
	refusalEventsBurst     = 100
	// refusalEventNamespaces is how many namespaces' limits are remembered: past it, the namespace
	// refused least recently is forgotten, and starts again from a full burst, which the limit
	// across namespaces still bounds.
	refusalEventNamespaces = 1024
)

// refusalEvents records refusals as Events, within the limits above, in the namespaces it knows.
type refusalEvents struct {
	recorder   events.EventRecorder
	namespaces Namespaces
	now        func() time.Time

	mu     sync.Mutex
	all    *rate.Limiter
	limits *lru.Cache
}

// newRefusalEvents records refusals with recorder in the namespaces namespaces knows; a nil
// recorder, or nil namespaces, records none.
func newRefusalEvents(recorder events.EventRecorder, namespaces Namespaces) *refusalEvents {
	if recorder == nil || namespaces == nil {
		return nil
	}
	return &refusalEvents{
		recorder:   recorder,
		namespaces: namespaces,
		now:        time.Now,
		all:        rate.NewLimiter(refusalEventsPerSecond, refusalEventsBurst),
		limits:     lru.New(refusalEventNamespaces),
	}
}

// allow takes one Event from namespace's limit and from the limit across namespaces.
func (r *refusalEvents) allow(namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var limiter *rate.Limiter
	if l, ok := r.limits.Get(namespace); ok {
		limiter, _ = l.(*rate.Limiter)
	}
	if limiter == nil {
		limiter = rate.NewLimiter(rate.Every(refusalEventEvery), refusalEventBurst)
		r.limits.Add(namespace, limiter)
	}
	return limiter.AllowN(now, 1) && r.all.AllowN(now, 1)
}

// record records a refusal as a Warning Event in the object's namespace, regarding the object
// (which a refused create leaves absent), where the namespace's owner looks: kubectl events -n NS.
// A dry run, which has no side effects (the validating webhooks declare sideEffects:
// NoneOnDryRun), records nothing, nor does a manager without a recorder. The recorder folds the
// same refusal repeated (the same object, operation and reason) into one Event's series, so a
// GitOps tool retrying a bad object does not flood the namespace; refusals past the limits above
// are not recorded.
//
// Whoever can reach the webhook can send it a review, naming any namespace and object: so an Event
// is recorded only in a namespace the manager's cache knows, regarding an object whose name the
// API server would have accepted, and its note, which quotes the object's values, is cut to the
// API's limit. Others are counted as suppressed.
func (r *refusalEvents) record(ctx context.Context, d denial, errs field.ErrorList) {
	if r == nil || d.dryRun || d.namespace == "" || len(errs) == 0 {
		return
	}
	if len(validation.IsDNS1123Subdomain(d.name)) > 0 || !r.namespaces.HasNamespace(ctx, d.namespace) || !r.allow(d.namespace) {
		refusalEventsSuppressed.Inc()
		return
	}
	apiVersion, kind := d.gvk.ToAPIVersionAndKind()
	regarding := &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: d.namespace, Name: d.name}
	prefix := strings.ToLower(d.operation) + " refused: "
	r.recorder.Eventf(regarding, nil, corev1.EventTypeWarning, conditions.EventReasonAdmissionRefused, actionOf(d.operation), "%s",
		prefix+message.Violations(Rendered(errs), message.EventNoteLimit-len(prefix)))
}

// actionOf is an operation as an Event's action: Create, Update.
func actionOf(operation string) string {
	if operation == "" {
		return "Admit"
	}
	return operation[:1] + strings.ToLower(operation[1:])
}
