package operator

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memoryLock is a leader election lock held in memory, which a test can hand to another holder.
// As a Lease, it refuses an update made from an older version than the one stored.
type memoryLock struct {
	identity string

	mu sync.Mutex
	// failing makes every renewal fail, as an API server too slow to answer within the renew
	// deadline, while a release still gets through.
	failing  bool
	record   *resourcelock.LeaderElectionRecord
	version  int // of record
	seen     int // the version this replica last read or wrote
	released time.Time
}

func (l *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "lock")
	}
	r := *l.record
	l.seen = l.version
	raw, err := json.Marshal(r)
	return &r, raw, err
}

func (l *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record != nil {
		return errors.New("exists")
	}
	l.record = &r
	l.version++
	l.seen = l.version
	return nil
}

func (l *memoryLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing && r.HolderIdentity != "" {
		return apierrors.NewTimeoutError("the renewal took too long", 1)
	}
	if l.seen != l.version {
		return apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "lock", errors.New("changed since read"))
	}
	if r.HolderIdentity == "" {
		l.released = time.Now()
	}
	l.record = &r
	l.version++
	l.seen = l.version
	return nil
}

func (l *memoryLock) RecordEvent(string) {}
func (l *memoryLock) Identity() string   { return l.identity }
func (l *memoryLock) Describe() string   { return "memory lock" }
func (l *memoryLock) releasedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// fail makes every renewal fail from now on.
func (l *memoryLock) fail() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing = true
}

// handTo makes another replica the holder, as if it had taken the lease.
func (l *memoryLock) handTo(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := metav1.Now()
	l.record = &resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 60, AcquireTime: now, RenewTime: now}
	l.version++
}

// controllerStub is a runnable that needs leader election and records when it starts and stops.
type controllerStub struct {
	started, stopped chan time.Time
	stopTakes        time.Duration
}

func newControllerStub(stopTakes time.Duration) *controllerStub {
	return &controllerStub{started: make(chan time.Time, 1), stopped: make(chan time.Time, 1), stopTakes: stopTakes}
}

func (c *controllerStub) Start(ctx context.Context) error {
	c.started <- time.Now()
	<-ctx.Done()
	time.Sleep(c.stopTakes) // a reconcile finishing
	c.stopped <- time.Now()
	return nil
}

func (c *controllerStub) NeedLeaderElection() bool { return true }

// receive waits for a value of ch, failing the test after a while.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never happened", what)
		panic("not reached")
	}
}

// start starts gate, and returns what stops it and where its Start returns.
func start(gate *leaderGate) (stop context.CancelFunc, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- gate.Start(ctx) }()
	return cancel, result
}

func fastGate(lock *memoryLock, stop func(error)) *leaderGate {
	return &leaderGate{lock: lock, name: "test", stop: stop,
		leaseDuration: time.Second, renewDeadline: 500 * time.Millisecond, retryPeriod: 50 * time.Millisecond}
}

func TestLeaderGateStopsTheControllersAndTheManagerWhenTheLeaseIsLost(t *testing.T) {
	lock := &memoryLock{identity: "this-replica"}
	causes := make(chan error, 2)
	gate := fastGate(lock, func(err error) { causes <- err })
	controller := newControllerStub(0)
	if err := (leaderOnly{gate: gate}).Add(controller); err != nil {
		t.Fatal(err)
	}
	if len(gate.runnables) != 1 {
		t.Fatalf("the gate holds %d runnables, want the controller", len(gate.runnables))
	}

	cancel, done := start(gate)
	defer cancel()
	receive(t, controller.started, "the controller's start")

	lock.handTo("another-replica")
	receive(t, controller.stopped, "the controller's stop after the lease was lost")
	if err := receive(t, causes, "the manager's stop"); !errors.Is(err, ErrLeadershipLost) {
		t.Errorf("the manager was stopped with %v, want %v", err, ErrLeadershipLost)
	}
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
}

// A leader that cannot renew its lease must not release it either, even should the API server
// take writes again in between: the controllers may still be finishing, and another replica may
// take the lease only once it has expired.
func TestLeaderGateLeavesALeaseItCouldNotRenewToExpire(t *testing.T) {
	lock := &memoryLock{identity: "this-replica"}
	causes := make(chan error, 2)
	gate := fastGate(lock, func(err error) { causes <- err })
	controller := newControllerStub(200 * time.Millisecond)
	gate.add(controller)
	cancel, done := start(gate)
	defer cancel()
	receive(t, controller.started, "the controller's start")

	lock.fail()
	if err := receive(t, causes, "the manager's stop"); !errors.Is(err, ErrLeadershipLost) {
		t.Errorf("the manager was stopped with %v, want %v", err, ErrLeadershipLost)
	}
	receive(t, controller.stopped, "the controller's stop")
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
	if released := lock.releasedAt(); !released.IsZero() {
		t.Errorf("the lease was released at %v, though renewing it had failed", released)
	}
}

func TestLeaderGateReleasesTheLeaseOnlyAfterTheControllersStopped(t *testing.T) {
	lock := &memoryLock{identity: "this-replica"}
	gate := fastGate(lock, func(err error) { t.Errorf("the manager was stopped with %v, though it was stopping", err) })
	controller := newControllerStub(200 * time.Millisecond)
	gate.add(controller)

	cancel, done := start(gate)
	receive(t, controller.started, "the controller's start")
	cancel()
	stoppedAt := receive(t, controller.stopped, "the controller's stop")
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
	released := lock.releasedAt()
	if released.IsZero() {
		t.Fatal("the lease was not released")
	}
	if released.Before(stoppedAt) {
		t.Errorf("the lease was released %v before the controller stopped", stoppedAt.Sub(released))
	}
}

func TestLeaderGateWaitsForTheLeaseHeldByAnother(t *testing.T) {
	lock := &memoryLock{identity: "this-replica"}
	lock.handTo("another-replica")
	gate := fastGate(lock, func(err error) { t.Errorf("the manager was stopped with %v", err) })
	controller := newControllerStub(0)
	gate.add(controller)

	cancel, done := start(gate)
	select {
	case <-controller.started:
		t.Fatal("the controller started while another replica held the lease")
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
	select {
	case <-controller.started:
		t.Error("the controller started after the manager stopped")
	default:
	}
}

func TestLeaderGateWithoutElectionRunsAtOnce(t *testing.T) {
	gate := &leaderGate{stop: func(err error) { t.Errorf("the manager was stopped with %v", err) }}
	controller := newControllerStub(0)
	gate.add(controller)
	cancel, done := start(gate)
	receive(t, controller.started, "the controller's start")
	cancel()
	receive(t, controller.stopped, "the controller's stop")
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
}

// The election logs through the logger controller-runtime gives the gate, named as its own
// election's: client-go's lines come out in the manager's stream, not klog's.
func TestLeaderGateLogsTheElectionThroughTheManagersLogger(t *testing.T) {
	lines := make(chan string, 100)
	logger := funcr.New(func(prefix, args string) {
		select {
		case lines <- prefix + " " + args:
		default:
		}
	}, funcr.Options{})
	lock := &memoryLock{identity: "this-replica"}
	gate := fastGate(lock, func(error) {})
	controller := newControllerStub(0)
	gate.add(controller)

	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- gate.Start(ctx) }()
	receive(t, controller.started, "the controller's start")
	cancel()
	if err := receive(t, done, "the gate's return"); err != nil {
		t.Errorf("Start() = %v", err)
	}
	close(lines)
	var logged []string
	for line := range lines {
		if strings.HasPrefix(line, "leaderelection ") && strings.Contains(line, "Successfully acquired lease") {
			return
		}
		logged = append(logged, line)
	}
	t.Errorf("no line of the election says it acquired the lease through the logger, named leaderelection: %q", logged)
}
