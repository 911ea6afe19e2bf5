package operator

import (
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// livePolicy is the admission policy in force, set as the AdmissionPolicy changes: the webhooks
// read it on every request, and the controllers subscribe to its changes to look at every object
// again.
type livePolicy struct {
	fallback *webhooks.Policy
	current  atomic.Pointer[webhooks.Policy]
	// stored is the resourceVersion of the AdmissionPolicy the policy in force was made from, ""
	// while none is stored: what the API server must answer for the policy in force to be current.
	stored atomic.Pointer[string]

	mu          sync.Mutex
	subscribers []chan event.GenericEvent
}

// newLivePolicy is a livePolicy that holds fallback until it is set.
func newLivePolicy(fallback *webhooks.Policy) *livePolicy {
	l := &livePolicy{fallback: fallback}
	l.current.Store(fallback)
	l.stored.Store(new(string))
	return l
}

// Current implements webhooks.PolicySource.
func (l *livePolicy) Current() *webhooks.Policy { return l.current.Load() }

// set makes p, made from the AdmissionPolicy stored at resourceVersion, the policy in force and
// tells every subscriber; nil restores the fallback, as when the AdmissionPolicy is deleted.
func (l *livePolicy) set(p *webhooks.Policy, resourceVersion string) {
	if p == nil {
		p, resourceVersion = l.fallback, ""
	}
	l.stored.Store(&resourceVersion)
	l.current.Store(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range l.subscribers {
		select {
		case ch <- event.GenericEvent{Object: &policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}}:
		default: // one pending event is enough
		}
	}
}

// unstored records that the AdmissionPolicy the policy in force was made from is no longer stored,
// while the policy stays in force (deleted with its CRD).
func (l *livePolicy) unstored() { l.stored.Store(new(string)) }

// storedVersion is the resourceVersion of the AdmissionPolicy the policy in force was made from, ""
// while none is stored.
func (l *livePolicy) storedVersion() string { return *l.stored.Load() }

// subscribe returns a channel that receives an event after each change of the policy in force,
// for a controller's source.Channel; changes made while one is pending are folded into it.
func (l *livePolicy) subscribe() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1)
	l.mu.Lock()
	l.subscribers = append(l.subscribers, ch)
	l.mu.Unlock()
	return ch
}
