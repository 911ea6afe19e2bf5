package operator

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The durations of leader election, controller-runtime's defaults.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// ErrLeadershipLost is what Start returns when the replica lost the lease without being asked to
// stop, after it stopped as gracefully as on SIGTERM.
var ErrLeadershipLost = errors.New("leader election lost")

// leaderOnly is the manager as the controllers are set up with it: every runnable added through
// it that needs leader election (each controller) goes to the leader gate instead, which runs it
// only while this replica holds the lease. The rest of the manager, the webhook server first, is
// not leader-elected at all.
//
// controller-runtime elects the whole manager: when the lease is lost it stops every runnable at
// once, skipping the graceful shutdown, so a replica that loses the lease (say, cut off from the
// API server for the renew deadline) would drop the admission requests in flight and refuse new
// ones until the API server noticed. With the election here, the controllers stop at once, as they
// must when another replica may lead, and the webhooks stop as on SIGTERM: not ready first, then
// still answering for the shutdown delay, then draining.
type leaderOnly struct {
	ctrl.Manager
	gate *leaderGate
}

// Add implements manager.Manager.
func (m leaderOnly) Add(r manager.Runnable) error {
	if le, ok := r.(manager.LeaderElectionRunnable); ok && !le.NeedLeaderElection() {
		return m.Manager.Add(r)
	}
	m.gate.add(r)
	return nil
}

// leaderGate runs its runnables while this replica holds the lease, or from the start when there
// is no election (lock is nil). It is itself a runnable of every replica.
type leaderGate struct {
	lock resourcelock.Interface
	name string
	// durations of the election; controller-runtime's defaults when zero.
	leaseDuration, renewDeadline, retryPeriod time.Duration
	// stop stops the manager gracefully, to return cause: called when the lease is lost, or a
	// runnable fails, while the manager is not stopping.
	stop func(cause error)

	mu        sync.Mutex
	runnables []manager.Runnable
}

func (g *leaderGate) add(r manager.Runnable) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runnables = append(g.runnables, r)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the gate runs on every replica.
func (g *leaderGate) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable. It campaigns for the lease until ctx is done; while it holds
// the lease its runnables run. When ctx is done they are stopped and waited for before the lease
// is released, so the next leader never overlaps this one. When the lease is lost (another holder,
// or no renewal for the renew deadline) they stop at once, the lease is left to expire, and the
// manager is stopped gracefully with ErrLeadershipLost; a replica restarted after that campaigns
// again.
func (g *leaderGate) Start(ctx context.Context) error {
	if g.lock == nil {
		if err := g.run(ctx); err != nil && ctx.Err() == nil {
			g.stop(err)
		}
		return nil
	}
	// The election outlives ctx until the runnables have stopped. client-go would release the
	// lease as soon as a renewal fails, before the runnables heard of it, so the gate releases
	// it itself, and only on a stop it was asked for, once they have returned. client-go's elector
	// logs through the context's logger, named as controller-runtime's own election names it.
	election := logr.NewContext(context.WithoutCancel(ctx), logf.FromContext(ctx).WithName("leaderelection"))
	election, endElection := context.WithCancel(election)
	defer endElection()
	var (
		mu       sync.Mutex
		leading  bool // the runnables were started
		stopping bool // the runnables must no longer be started
		ran      = make(chan error, 1)
		stopped  = make(chan struct{}) // Run has returned: never led, or no longer leads
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          g.lock,
		LeaseDuration: cmp.Or(g.leaseDuration, leaseDuration),
		RenewDeadline: cmp.Or(g.renewDeadline, renewDeadline),
		RetryPeriod:   cmp.Or(g.retryPeriod, retryPeriod),
		Name:          g.name,
		Callbacks: leaderelection.LeaderCallbacks{
			// held ends when the lease is lost, or the election ends.
			OnStartedLeading: func(held context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				leading = true
				mu.Unlock()
				running, cancel := context.WithCancel(held)
				defer cancel()
				context.AfterFunc(ctx, cancel)
				ran <- g.run(running)
			},
			OnStoppedLeading: func() { close(stopped) },
		},
	})
	if err != nil {
		return err
	}
	go elector.Run(election)

	var (
		ranDone bool
		ranErr  error
	)
	select {
	case <-ctx.Done():
	case err := <-ran:
		ranDone, ranErr = true, err
		if ctx.Err() != nil {
			break // stopped with the manager
		}
		if err == nil {
			g.stop(ErrLeadershipLost) // the runnables stopped on their own only because held ended
			return nil
		}
		// A runnable failed and the others have stopped: the manager stops with the error, which
		// is its cause, not the gate's, and the lease can go at once.
		g.stop(err)
		ranErr = nil
	case <-stopped:
		if ctx.Err() == nil {
			g.stop(ErrLeadershipLost)
			return nil
		}
	}
	// The runnables are stopping or have stopped: let them finish, then release the lease.
	mu.Lock()
	stopping = true
	led := leading
	mu.Unlock()
	if led && !ranDone {
		ranErr = <-ran
	}
	endElection()
	<-stopped
	if led {
		g.release()
	}
	return ranErr
}

// release gives up the lease, if this replica still holds it, as client-go's elector does, so
// that another replica need not wait for it to expire.
func (g *leaderGate) release() {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(g.renewDeadline, renewDeadline))
	defer cancel()
	for {
		record, _, err := g.lock.Get(ctx)
		if err != nil || record.HolderIdentity != g.lock.Identity() {
			return
		}
		now := metav1.Now()
		err = g.lock.Update(ctx, resourcelock.LeaderElectionRecord{
			LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
		})
		if !apierrors.IsConflict(err) {
			return
		}
	}
}

// run starts every runnable with ctx and returns when all have returned, with the first error.
func (g *leaderGate) run(ctx context.Context) error {
	g.mu.Lock()
	runnables := append([]manager.Runnable(nil), g.runnables...)
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runnables))
	for _, r := range runnables {
		go func() { errs <- r.Start(ctx) }()
	}
	var first error
	for range runnables {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one failed: stop the others, as the manager would
		}
	}
	return first
}
