package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
	"github.com/seedlabs/webhook-operator/webhooks"
)

// storedPolicy answers a Get of the AdmissionPolicy as the API server would: with the object at
// resourceVersion, or with err.
type storedPolicy struct {
	resourceVersion string
	err             error
}

func (s *storedPolicy) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Name != policyv1.PolicyName {
		return errors.New("asked for " + key.Name)
	}
	if s.err != nil {
		return s.err
	}
	obj.SetResourceVersion(s.resourceVersion)
	return nil
}

func (s *storedPolicy) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// TestPolicyConfirmation: the API server's answer confirms the policy in force only when it
// agrees with it; the check fails once no answer has for longer than the staleness, says why, and
// passes again at the next confirmation; 0 never fails it.
func TestPolicyConfirmation(t *testing.T) {
	ctx := context.Background()
	gone := apierrors.NewNotFound(schema.GroupResource{Group: policyv1.GroupVersion.Group, Resource: "admissionpolicies"}, policyv1.PolicyName)
	noCRD := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: policyv1.GroupVersion.Group, Kind: "AdmissionPolicy"}}
	timeout := context.DeadlineExceeded
	p, errs := webhooks.NewPolicy(&policyv1.AdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyv1.PolicyName}}, webhooks.ImagePolicy{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}

	for _, tc := range []struct {
		name     string
		inForce  string // the resourceVersion of the policy in force; "" for none stored
		answer   storedPolicy
		confirms bool
	}{
		{"the stored policy is the one in force", "7", storedPolicy{resourceVersion: "7"}, true},
		{"none stored, none in force", "", storedPolicy{err: gone}, true},
		{"no CRD, none in force", "", storedPolicy{err: noCRD}, true},
		{"a newer policy stored than the watch delivered", "7", storedPolicy{resourceVersion: "8"}, false},
		{"deleted, not yet seen by the watch", "7", storedPolicy{err: gone}, false},
		{"stored, not yet seen by the watch", "", storedPolicy{resourceVersion: "1"}, false},
		{"no answer", "7", storedPolicy{err: timeout}, false},
		{"an error answer", "7", storedPolicy{err: apierrors.NewServiceUnavailable("etcd is down")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := newLivePolicy(webhooks.DefaultPolicy(webhooks.ImagePolicy{}))
			if tc.inForce != "" {
				live.set(p, tc.inForce)
			}
			c := newPolicyConfirmation(&tc.answer, live, 20*time.Second)
			err := c.confirm(ctx)
			if confirmed := c.last.Load() != 0; confirmed != tc.confirms || (err == nil) != tc.confirms {
				t.Errorf("confirmed %v (err %v), want %v", confirmed, err, tc.confirms)
			}
		})
	}

	t.Run("the check over time", func(t *testing.T) {
		now := time.Unix(1000, 0)
		live := newLivePolicy(webhooks.DefaultPolicy(webhooks.ImagePolicy{}))
		live.set(p, "7")
		answer := &storedPolicy{resourceVersion: "7"}
		c := newPolicyConfirmation(answer, live, 20*time.Second)
		c.now = func() time.Time { return now }
		if err := c.check(nil); err != nil {
			t.Errorf("before the first confirmation (the watch's sync gates readiness then): %v", err)
		}
		if err := c.confirm(ctx); err != nil {
			t.Fatal(err)
		}
		answer.err = timeout
		for _, step := range []struct {
			after time.Duration
			fails bool
		}{{19 * time.Second, false}, {20 * time.Second, false}, {20*time.Second + time.Millisecond, true}, {5 * time.Minute, true}} {
			now = time.Unix(1000, 0).Add(step.after)
			if err := c.confirm(ctx); err == nil {
				t.Fatal("a timeout confirmed the policy")
			}
			err := c.check(nil)
			if (err != nil) != step.fails {
				t.Errorf("%s after the last confirmation: check %v, want failing %v", step.after, err, step.fails)
			}
			if err != nil && !strings.Contains(err.Error(), "context deadline exceeded") {
				t.Errorf("the check does not say why: %v", err)
			}
		}
		answer.err = nil
		if err := c.confirm(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.check(nil); err != nil {
			t.Errorf("after the API server confirmed it again: %v", err)
		}

		off := newPolicyConfirmation(answer, live, 0)
		off.now = c.now
		off.confirmed()
		now = now.Add(time.Hour)
		if err := off.check(nil); err != nil {
			t.Errorf("with a staleness of 0: %v", err)
		}
	})
}

// TestPolicyStalenessBounds: a staleness below a second but 0 is refused before anything starts,
// naming the flag; 0 and a second are taken.
func TestPolicyStalenessBounds(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, staleness := range []time.Duration{time.Millisecond, 999 * time.Millisecond, -time.Second} {
		_, err := New(cfg, Options{PolicyStaleness: staleness})
		if err == nil || !strings.Contains(err.Error(), "--policy-staleness="+staleness.String()+": must be 0") {
			t.Errorf("--policy-staleness=%s: %v, want it refused", staleness, err)
		}
	}
	for _, staleness := range []time.Duration{0, time.Second} {
		if _, err := New(cfg, Options{PolicyStaleness: staleness, SkipControllerNameValidation: true}); err != nil && strings.Contains(err.Error(), "--policy-staleness") {
			t.Errorf("--policy-staleness=%s refused: %v", staleness, err)
		}
	}
}
