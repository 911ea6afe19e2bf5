package operator

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

func TestLivePolicy(t *testing.T) {
	fallback := webhooks.DefaultPolicy(webhooks.ImagePolicy{})
	live := newLivePolicy(fallback)
	if live.Current() != fallback {
		t.Fatal("a new livePolicy does not hold its fallback")
	}
	first, second := live.subscribe(), live.subscribe()

	p, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}, Spec: policyv1.AdmissionPolicySpec{AllowedRegistries: []string{"registry.corp.example"}}}, webhooks.ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	live.set(p, "42")
	if live.Current() != p || live.storedVersion() != "42" {
		t.Errorf("set did not take: stored version %q", live.storedVersion())
	}
	live.unstored()
	if live.Current() != p || live.storedVersion() != "" {
		t.Errorf("unstored changed the policy in force, or left stored version %q", live.storedVersion())
	}
	live.set(nil, "43")
	if live.Current() != fallback || live.storedVersion() != "" {
		t.Errorf("set(nil) did not restore the fallback, none stored: stored version %q", live.storedVersion())
	}

	// Two changes while one event is pending are folded into it, for every subscriber.
	for name, ch := range map[string]<-chan event.GenericEvent{"first": first, "second": second} {
		select {
		case e := <-ch:
			if e.Object.GetName() != policyv1.PolicyName {
				t.Errorf("%s subscriber: event for %q, want %q", name, e.Object.GetName(), policyv1.PolicyName)
			}
		default:
			t.Errorf("%s subscriber: no event after two changes", name)
		}
		select {
		case <-ch:
			t.Errorf("%s subscriber: a second event; pending changes are not folded", name)
		default:
		}
	}
}
