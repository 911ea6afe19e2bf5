package operator

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Manager is the operator's controller-runtime Manager, stopped the way a replica behind a
// Service should stop.
type Manager struct {
	ctrl.Manager

	shutdownDelay time.Duration
	// stopping is set once the manager is told to stop; the webhook server reads it too.
	stopping *atomic.Bool

	// stopRequested is closed by stop, once, after cause is set.
	stopRequested chan struct{}
	stopOnce      sync.Once
	cause         error
}

// newManager wraps mgr, setting stopping when it is told to stop; nil stopping makes one.
func newManager(mgr ctrl.Manager, shutdownDelay time.Duration, stopping *atomic.Bool) *Manager {
	if stopping == nil {
		stopping = new(atomic.Bool)
	}
	return &Manager{Manager: mgr, shutdownDelay: shutdownDelay, stopping: stopping, stopRequested: make(chan struct{})}
}

// stop stops the manager as the end of Start's context does, and makes Start return cause.
func (m *Manager) stop(cause error) {
	m.stopOnce.Do(func() {
		m.cause = cause
		close(m.stopRequested)
	})
}

// Start runs the manager until ctx is done, then stops it gracefully. /readyz fails at once, so
// the EndpointSlice drops the replica; the webhook server goes on answering for the shutdown delay,
// while kube-apiserver still sends it the requests it routed before it saw the change, closing each
// connection after its answer (servingServer) so that kube-apiserver dials a replica that stays; then the
// manager stops, and the webhook server finishes the requests in flight before it exits.
// controller-runtime has no such delay of its own: it closes the listener as soon as it is told
// to stop. A replica that loses the leader election lease stops the same way, and Start then
// returns ErrLeadershipLost.
func (m *Manager) Start(ctx context.Context) error {
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-run.Done():
			return
		case <-ctx.Done():
			m.stopOnce.Do(func() {}) // asked to stop: a later cause, such as a lease lost meanwhile, is not the reason
		case <-m.stopRequested:
		}
		m.stopping.Store(true)
		delay := time.NewTimer(m.shutdownDelay)
		defer delay.Stop()
		select {
		case <-delay.C:
		case <-run.Done():
		}
		stop()
	}()
	err := m.Manager.Start(run)
	select {
	case <-m.stopRequested:
		return errors.Join(m.cause, err)
	default:
		return err
	}
}

// readyUntilStopping is the readiness check that fails from the moment the manager is told to stop.
func (m *Manager) readyUntilStopping(*http.Request) error {
	if m.stopping.Load() {
		return errors.New("shutting down")
	}
	return nil
}
