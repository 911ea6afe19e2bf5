package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// NamespaceLabels looks up a namespace's labels, for the policy's namespace overrides.
type NamespaceLabels interface {
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// judge is what a validating webhook does with what the rules found: it applies the policy in
// force, counts the answer, and records a refusal.
type judge struct {
	policy     PolicySource
	namespaces NamespaceLabels
	events     *refusalEvents
}

func newJudge(opts Options) judge {
	source := opts.Policy
	if source == nil {
		source = StaticPolicy{Policy: DefaultPolicy(opts.ImagePolicy)}
	}
	return judge{policy: source, namespaces: opts.Namespaces, events: newRefusalEvents(opts.Recorder)}
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
	j.events.record(d, verdict.Refused)
	return verdict.Refused, verdict.Warnings, nil
}

// Enforced returns the violations of errs that the policy in force refuses in the namespace:
// what a controller must not roll out. A violation the policy Warns about or Audits was
// admitted, so it is rolled out. Without a source every violation is enforced.
func Enforced(ctx context.Context, source PolicySource, namespaces NamespaceLabels, namespace string, errs field.ErrorList) (field.ErrorList, error) {
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
