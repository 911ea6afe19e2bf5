package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/seedlabs/webhook-operator/api/policy/v1"
)

// DefaultPolicyStaleness is how long a replica goes on answering admission requests without the
// API server confirming that the policy it enforces is the stored one: long enough to ride out a
// restart of kube-apiserver or etcd (6 and 10 s in the e2e), short beside a node lost for good.
const DefaultPolicyStaleness = 20 * time.Second

// minPolicyStaleness is the shortest staleness allowed but 0: a question to the API server every
// 100 ms at the most.
const minPolicyStaleness = time.Second

// policyConfirmation asks the API server, every tenth of its staleness, which AdmissionPolicy is
// stored, and holds when it last answered with the one in force (or none, while none is). A
// replica cut off from the API server keeps serving its cached policy, which an admin may have
// changed since; its readiness check fails once no answer has confirmed the policy for staleness,
// so that the Service stops sending it requests, and passes again at the next confirmation.
type policyConfirmation struct {
	reader    client.Reader
	live      *livePolicy
	staleness time.Duration
	now       func() time.Time

	// last is when the API server last confirmed the policy in force, in Unix nanoseconds; 0
	// before the policy's watch first synced.
	last atomic.Int64
	// why is what the last attempt that did not confirm it came to.
	why atomic.Pointer[string]
}

func newPolicyConfirmation(reader client.Reader, live *livePolicy, staleness time.Duration) *policyConfirmation {
	c := &policyConfirmation{reader: reader, live: live, staleness: staleness, now: time.Now}
	none := "no answer yet"
	c.why.Store(&none)
	return c
}

// confirmed records a confirmation at now: an answer of the API server that agrees with the
// policy in force, or the list that synced the policy's watch.
func (c *policyConfirmation) confirmed() { c.last.Store(c.now().UnixNano()) }

// interval is how often the API server is asked, and how long an answer is waited for.
func (c *policyConfirmation) interval() time.Duration { return c.staleness / 10 }

// confirm asks the API server once, and records a confirmation when its answer agrees with the
// policy in force, or else why not. A resourceVersion newer than the watch has delivered yet does
// not confirm it.
func (c *policyConfirmation) confirm(ctx context.Context) error {
	err := c.ask(ctx)
	if err != nil {
		why := err.Error()
		c.why.Store(&why)
		return err
	}
	c.confirmed()
	return nil
}

// ask asks the API server which AdmissionPolicy is stored, and fails unless it is the one in force.
func (c *policyConfirmation) ask(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.interval())
	defer cancel()
	stored := &metav1.PartialObjectMetadata{}
	stored.SetGroupVersionKind(policyv1.GroupVersion.WithKind("AdmissionPolicy"))
	err := c.reader.Get(ctx, client.ObjectKey{Name: policyv1.PolicyName}, stored)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		stored.ResourceVersion = "" // none stored, or no CRD
	case err != nil:
		return err
	}
	if inForce := c.live.storedVersion(); stored.ResourceVersion != inForce {
		return fmt.Errorf("the API server stores the AdmissionPolicy at resourceVersion %q, the policy in force is of %q", stored.ResourceVersion, inForce)
	}
	return nil
}

// stale reports how long the policy in force has gone unconfirmed, past staleness.
func (c *policyConfirmation) stale() (time.Duration, bool) {
	last := c.last.Load()
	if c.staleness <= 0 || last == 0 {
		return 0, false
	}
	age := c.now().Sub(time.Unix(0, last))
	return age, age > c.staleness
}

// run asks the API server every interval until ctx is done, logging when the policy in force
// turns stale and when it is confirmed again.
func (c *policyConfirmation) run(ctx context.Context, log logr.Logger) {
	if c.staleness <= 0 {
		return
	}
	wasStale := false
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		_ = c.confirm(ctx) // what it came to is in why
		age, stale := c.stale()
		switch {
		case stale && !wasStale:
			log.Error(errors.New(*c.why.Load()), "the API server has not confirmed the policy in force: not ready until it does",
				"for", age.Round(100*time.Millisecond), "staleness", c.staleness)
		case !stale && wasStale:
			log.Info("the API server confirmed the policy in force again: ready")
		}
		wasStale = stale
	}, c.interval())
}

// check fails while the policy in force has gone unconfirmed for longer than staleness.
func (c *policyConfirmation) check(*http.Request) error {
	if age, stale := c.stale(); stale {
		return fmt.Errorf("the API server has not confirmed the policy in force for %s, over the %s allowed: %s",
			age.Round(100*time.Millisecond), c.staleness, *c.why.Load())
	}
	return nil
}
