package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Namespaces is what the webhooks know of the cluster's namespaces: what the manager's cache holds.
// A review names the namespace of its object, and anyone who can reach the webhook can send one,
// so a namespace the cache does not know is never read from the API server, nor written an Event.
type Namespaces interface {
	// NamespaceLabels returns the labels of the namespace, for the policy's namespace overrides,
	// or an error when it is not known; it may wait a moment for one created just before the object.
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
	// HasNamespace reports whether the namespace is known now.
	HasNamespace(ctx context.Context, name string) bool
}

// judge is what a validating webhook does with what the rules found: it applies the policy in
// force, counts the answer, and records a refusal.
type judge struct {
	policy     PolicySource
	namespaces Namespaces
	events     *refusalEvents
}

func newJudge(opts Options) judge {
	source := opts.Policy
	if source == nil {
		source = StaticPolicy{Policy: DefaultPolicy(opts.ImagePolicy)}
	}
	return judge{policy: source, namespaces: opts.Namespaces, events: newRefusalEvents(opts.Recorder, opts.Namespaces)}
}

// current is the policy in force, read once per request so that one answer follows one policy.
func (j judge) current() *Policy { return CurrentPolicy(j.policy) }

// judge applies p to what the rules found in the object of d, counts the answer and records a
// refusal, and returns the violations to refuse and the warnings to send. A namespace whose labels
// an override needs but that cannot be read is an error, which refuses the request: no override
// is applied that could not be checked.
func (j judge) judge(ctx context.Context, p *Policy, d denial, errs field.ErrorList, warnings admission.Warnings) (field.ErrorList, admission.Warnings, error) {
	var namespace labels.Set
	if len(errs) > 0 || len(warnings) > 0 {
		l, err := NamespaceLabelsFor(ctx, p, j.namespaces, d.namespace)
		if err != nil {
			return nil, nil, err
		}
		namespace = l
	}
	verdict := p.Judge(errs, warnings, namespace)
	observe(d.gvk.Kind, d.operation, verdict)
	j.events.record(ctx, d, verdict.Refused)
	return verdict.Refused, verdict.Warnings, nil
}

// Enforced returns the violations of errs that the policy in force refuses in the namespace:
// what a controller must not roll out. A violation the policy Warns about or Audits was
// admitted, so it is rolled out. Without a source every violation is enforced.
func Enforced(ctx context.Context, source PolicySource, namespaces Namespaces, namespace string, errs field.ErrorList) (field.ErrorList, error) {
	if source == nil || len(errs) == 0 {
		return errs, nil
	}
	p := source.Current()
	l, err := NamespaceLabelsFor(ctx, p, namespaces, namespace)
	if err != nil {
		return nil, err
	}
	return p.Judge(errs, nil, l).Refused, nil
}
