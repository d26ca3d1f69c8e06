package gateway

import (
	"context"
	"fmt"
	"sync"
)

// ReadIndex coalesces the "what is your latest revision" calls of
// concurrent linearizable reads, as Raft's read index does: a read that
// arrives while a call is in flight waits for the next call, which starts
// when the one in flight ends and serves every read that arrived
// meanwhile. So each read gets a revision fetched wholly after it arrived
// (a read never misses a write acknowledged before it began), and a burst
// of N concurrent reads costs the backend two calls, not N.
//
// The zero value is not usable; use NewReadIndex. Safe for concurrent use.
type ReadIndex struct {
	fetch func(context.Context) (uint64, error)

	mu      sync.Mutex
	running bool
	next    *readCall // the call the next arrivals join; nil until one arrives
}

// readCall is one fetch shared by the reads that joined it.
type readCall struct {
	done chan struct{}
	rev  uint64
	err  error
	// ctx is the context of the read that started the call; the other
	// waiters stop waiting with their own context.
	ctx context.Context
}

// NewReadIndex returns a ReadIndex whose calls run fetch. fetch gets a
// context without the caller's cancellation (it serves several callers),
// so it must bound its own time.
func NewReadIndex(fetch func(context.Context) (uint64, error)) *ReadIndex {
	return &ReadIndex{fetch: fetch}
}

// Revision returns a revision of the backend fetched after Revision was
// called. Errors: fetch's, or ctx's wrapped in ErrUnavailable.
func (ri *ReadIndex) Revision(ctx context.Context) (uint64, error) {
	return ri.Start(ctx).Wait(ctx)
}

// ReadTicket is a read's place in a fetch that Start joined or started;
// Wait returns its revision.
type ReadTicket struct{ c *readCall }

// Start is the first half of Revision: it joins (or starts) a fetch that
// begins after the call, and returns at once, so that the caller can do
// other work (a heartbeat's publish) while the fetch is in flight, with no
// goroutine of its own. ctx is the read's, as for Revision.
func (ri *ReadIndex) Start(ctx context.Context) ReadTicket {
	ri.mu.Lock()
	c := ri.next
	if c == nil {
		c = &readCall{done: make(chan struct{}), ctx: context.WithoutCancel(linearizable(ctx))}
		ri.next = c
	}
	if !ri.running {
		ri.start()
	}
	ri.mu.Unlock()
	return ReadTicket{c}
}

// Wait returns the revision of the ticket's fetch. Errors as Revision's.
func (t ReadTicket) Wait(ctx context.Context) (uint64, error) {
	select {
	case <-t.c.done:
		return t.c.rev, t.c.err
	case <-ctx.Done():
		return 0, fmt.Errorf("gateway: read index: %w: %w", ErrUnavailable, ctx.Err())
	}
}

// start runs the pending call. Callers hold ri.mu.
func (ri *ReadIndex) start() {
	c := ri.next
	ri.next, ri.running = nil, true
	go func() {
		c.rev, c.err = ri.fetch(c.ctx)
		close(c.done)
		ri.mu.Lock()
		defer ri.mu.Unlock()
		ri.running = false
		if ri.next != nil {
			ri.start()
		}
	}()
}
