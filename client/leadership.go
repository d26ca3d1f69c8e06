package client

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// leaderCtx is the context OnStartedLeading gets. Run cancels it when the
// leadership may be lost; besides, Err looks at the clock itself, so that
// a process that was paused (SIGSTOP, a long GC pause, a suspended VM) and
// resumes past the step-down deadline sees the leadership over at its
// first check, before Run's loop has had a chance to run.
type leaderCtx struct {
	context.Context
	cancel context.CancelCauseFunc
	now    func() time.Time

	mu       sync.Mutex
	deadline time.Time
}

func newLeaderCtx(parent context.Context, now func() time.Time, deadline time.Time) *leaderCtx {
	ctx, cancel := context.WithCancelCause(parent)
	return &leaderCtx{Context: ctx, cancel: cancel, now: now, deadline: deadline}
}

// Deadline returns the step-down deadline. Unlike most contexts', it moves
// later with each successful heartbeat; a context derived from this one
// keeps the deadline of when it was made, which ends it early, never late.
func (l *leaderCtx) Deadline() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline, true
}

// Err is the parent's error, and cancels the context first when the
// step-down deadline has passed.
func (l *leaderCtx) Err() error {
	if err := l.Context.Err(); err != nil {
		return err
	}
	if d, _ := l.Deadline(); !l.now().Before(d) {
		l.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, ReasonHeartbeatTimeout))
	}
	return l.Context.Err()
}

// extend moves the step-down deadline to d.
func (l *leaderCtx) extend(d time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deadline = d
}

// dispatcher calls the leadership callbacks one after the other, in the
// order Run queued them, without ever blocking Run: OnStoppedLeading of a
// term runs after its OnStartedLeading has returned, and before the next
// OnStartedLeading.
type dispatcher struct {
	mu     sync.Mutex
	queue  []func()
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newDispatcher() *dispatcher {
	return &dispatcher{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues f.
func (d *dispatcher) push(f func()) {
	d.mu.Lock()
	d.queue = append(d.queue, f)
	d.mu.Unlock()
	d.signal()
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run calls the queued callbacks until close.
func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			closed := d.closed
			d.mu.Unlock()
			if closed {
				return
			}
			<-d.wake
			continue
		}
		f := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		f()
	}
}

// drained waits until every callback queued so far has returned; it
// reports false if ctx ends first.
func (d *dispatcher) drained(ctx context.Context) bool {
	done := make(chan struct{})
	d.push(func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// close waits for the queued callbacks to return and stops run.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.signal()
	<-d.done
}
