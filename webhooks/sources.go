package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// What admission reads of the cluster, in the webhooks and the controllers alike: the policy in
// force, and the namespaces' labels its overrides select.

// PolicySource is where the webhooks and controllers read the policy in force.
type PolicySource interface {
	Current() *Policy
}

// CurrentPolicy is the policy source holds, nil (every rule at its default) without a source.
func CurrentPolicy(source PolicySource) *Policy {
	if source == nil {
		return nil
	}
	return source.Current()
}

// namespaceLabels are the labels of namespace when p's namespace overrides need them, read with
// namespaces; nil when they do not.
func namespaceLabels(ctx context.Context, p *Policy, namespaces Namespaces, namespace string) (labels.Set, error) {
	if !p.SelectsNamespaces() || namespace == "" {
		return nil, nil
	}
	if namespaces == nil {
		return nil, fmt.Errorf("the admission policy selects namespaces, and there is no way to read them")
	}
	l, err := namespaces.NamespaceLabels(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the labels of namespace %s for the admission policy: %w", namespace, err)
	}
	return l, nil
}

// StaticPolicy is a PolicySource that never changes.
type StaticPolicy struct{ Policy *Policy }

// Current implements PolicySource.
func (s StaticPolicy) Current() *Policy { return s.Policy }

// Namespaces is what the webhooks know of the cluster's namespaces: what the manager's cache holds.
// A review names the namespace of its object, and anyone who can reach the webhook can send one,
// so a namespace the cache does not know is never read from the API server, nor written an Event.
type Namespaces interface {
	// NamespaceLabels returns the labels of the namespace, for the policy's namespace overrides,
	// or an error when it is not known; it may wait a moment for one created just before the object.
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
	// HasNamespace reports whether the namespace is known; it may wait a moment for one created
	// just before the object, as NamespaceLabels does.
	HasNamespace(ctx context.Context, name string) bool
}
