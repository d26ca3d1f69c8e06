package nats

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Writes of one election combined: while a write of an election is in
// flight on this replica, the transitions of that election asked for
// meanwhile wait, and the next write takes all of them, in the order they
// came, as one record (write). A burst of campaigns or resignations at one
// election then costs a few records, each a round trip, rather than a
// record each that loses its compare-and-set to every other one and
// retries after pauses (gateway.Conflicts): without it, 300 candidates of
// one election resigning at once waited up to a second for their turn.
//
// Why storing transitions together is as safe as storing each on its own.
// write applies them to the record one after another, each to the record
// the one before it left, all at one now: the record it stores is the
// record that storing each in turn, with nothing in between, would have
// stored last, and its events are theirs, in order. Every step is a
// transition of gateway.Record, so every invariant that holds of each
// record stored holds of the steps nobody stored (gateway.Record never
// lets a step make more holders act than the limit), and the stored one
// is computed from the record stored just before it, under the same
// compare-and-set. What the combined record skips is only records that
// nobody read: no answer, event or watch ever named them, so no client
// acted on one. Each caller is answered from the record as stored, which
// is a state after its own transition, as an answer from a later read
// would be.
//
// A caller waits at most for the write in flight and then its own: the
// caller whose write ends hands the next one to the first caller that
// waits, which writes for everyone waiting by then. A caller whose context
// ends while it waits leaves the queue, written nowhere; once its write
// has begun it waits for the answer, which comes as soon as the write is
// done, or as soon as every caller of that write gave up (write's context
// then ends).

// writeQueues are the calls of each election waiting to write.
type writeQueues struct {
	mu     sync.Mutex
	queues map[string]*writeQueue
}

// writeQueue is one election's: calls wait behind the write in flight.
type writeQueue struct {
	calls []*applyCall
}

// applyCall is one transition asked of an election, and its outcome.
type applyCall struct {
	ctx    context.Context
	op     string
	create *gateway.Settings
	mode   applyMode
	t      transition

	lead     chan struct{} // closed when this call is to write for the queue
	done     chan struct{} // closed when s and err are set
	promoted bool          // lead was closed; under writeQueues.mu
	taken    bool          // a write took it; under writeQueues.mu

	s   stored
	err error
	// panicked is set when t panicked: the write goes on without it, and
	// apply panics with it on its caller's own stack.
	panicked error
}

// run runs c's transition on rec, recovering a panic into c.panicked.
func (c *applyCall) run(rec *gateway.Record, now time.Time) (ev []gateway.Event, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.panicked = fmt.Errorf("nats: %s: the transition panicked: %v\n%s", c.op, v, debug.Stack())
			ev, err = nil, nil
		}
	}()
	return c.t(c.ctx, rec, now)
}

// enter queues c for election. It reports whether c writes at once: no
// write of the election is in flight here.
func (w *writeQueues) enter(election string, c *applyCall) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q, ok := w.queues[election]; ok {
		q.calls = append(q.calls, c)
		return false
	}
	if w.queues == nil {
		w.queues = make(map[string]*writeQueue)
	}
	c.promoted = true
	w.queues[election] = &writeQueue{calls: []*applyCall{c}}
	return true
}

// take returns every call waiting for election, c (the writer) among
// them, in the order they came, and marks them taken.
func (w *writeQueues) take(election string) []*applyCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[election]
	calls := q.calls
	q.calls = nil
	for _, c := range calls {
		c.taken = true
	}
	return calls
}

// next ends a write of election: the first call that waits writes next,
// or, with none waiting, the election leaves the queues.
func (w *writeQueues) next(election string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[election]
	if len(q.calls) == 0 {
		delete(w.queues, election)
		return
	}
	c := q.calls[0]
	c.promoted = true
	close(c.lead)
}

// leave takes c out of election's queue when its caller gives up. It
// reports false when c can no longer leave: a write took it, or it is to
// write next (its caller must then write, or the queue would stall).
func (w *writeQueues) leave(election string, c *applyCall) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.taken || c.promoted {
		return false
	}
	q := w.queues[election]
	q.calls = slices.DeleteFunc(q.calls, func(x *applyCall) bool { return x == c })
	return true
}

// apply runs transition t of election, in one write with whatever else
// this replica asks of the election meanwhile (see "Writes of one
// election combined" above, and write). create gives the settings of an
// election that has no record yet; with nil, a missing election is
// gateway.ErrElectionNotFound. mode says when t's outcome needs a write.
// apply returns the record as stored (or as loaded, if nothing was
// written) and t's error.
func (b *Backend) apply(ctx context.Context, op, election string, create *gateway.Settings, mode applyMode, t transition) (stored, error) {
	c := &applyCall{ctx: ctx, op: op, create: create, mode: mode, t: t, lead: make(chan struct{}), done: make(chan struct{})}
	if !b.writes.enter(election, c) {
		select {
		case <-c.done:
			return c.answer()
		case <-c.lead:
		case <-ctx.Done():
			if b.writes.leave(election, c) {
				return stored{}, fmt.Errorf("nats: %s %q: %w: %w", op, election, gateway.ErrUnavailable, ctx.Err())
			}
			select {
			case <-c.done:
				return c.answer()
			case <-c.lead:
			}
		}
	}
	calls := b.writes.take(election)
	b.writeFor(c, election, calls)
	return c.answer()
}

// answer is c's outcome, on its caller's stack: a transition that
// panicked panics here, as it did before writes were combined, so that
// its own request fails (and the API's recovery logs it), nobody else's.
func (c *applyCall) answer() (stored, error) {
	if c.panicked != nil {
		panic(c.panicked)
	}
	return c.s, c.err
}

// writeFor writes calls (taken from election's queue) as c, the one of
// them whose caller writes, then hands the next write to the first call
// waiting and answers the others. A panic in the write (a transition's
// bug) answers every call with an error, still hands the queue on, and
// goes on up c's caller's stack: it fails that request, and no other
// caller or later write of the election waits for it.
func (b *Backend) writeFor(c *applyCall, election string, calls []*applyCall) {
	wctx, stop := together(c.ctx, calls)
	finished := false
	defer func() {
		stop()
		if !finished {
			for _, x := range calls {
				x.s, x.err = stored{}, fmt.Errorf("nats: %s %q: %w: the write it was in failed unexpectedly", x.op, election, gateway.ErrUnavailable)
			}
		}
		b.writes.next(election)
		for _, x := range calls {
			if x != c {
				close(x.done)
			}
		}
	}()
	b.write(wctx, election, calls)
	finished = true
}

// together returns a context for the write of calls, which lc (the
// writer's) is among: it carries lc's values, has the latest of the
// calls' deadlines when every one has a deadline (publish bounds the
// request by it), and ends once every call's context has ended, so that
// one caller giving up fails nobody else's write. stop releases it.
func together(lc context.Context, calls []*applyCall) (context.Context, func()) {
	var latest time.Time
	all := true
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		all = all && ok
		if d.After(latest) {
			latest = d
		}
	}
	base := context.WithoutCancel(lc)
	var cancelDeadline context.CancelFunc = func() {}
	if all {
		base, cancelDeadline = context.WithDeadline(base, latest)
	}
	ctx, cancel := context.WithCancel(base)
	left := atomic.Int64{}
	left.Store(int64(len(calls)))
	stops := make([]func() bool, 0, len(calls))
	for _, c := range calls {
		stops = append(stops, context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
		cancelDeadline()
	}
}
