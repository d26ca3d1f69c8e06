package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHubEvents is how many recent events a replica's hub keeps for
// subscribers to resume from and to read at their own pace.
const DefaultHubEvents = 8192

// subscriberBuffer is how many events a subscriber's channel holds; the
// ring behind it holds the rest. Small: ten thousand subscribers each
// hold this many events (about 150 bytes each) twice, in the channel and
// in the pump's batch.
const subscriberBuffer = 16

// hub is a replica's one watch of all elections, fanned out to every
// subscriber of that replica (SSE streams, webhook workers, metrics): a
// thousand subscribers cost the backend one watch, not a thousand.
//
// The hub keeps the last events in a ring, each with its Position. A
// subscriber is a pump goroutine that copies events of its election from
// the ring to its channel at its own pace; one that falls so far behind
// that the ring no longer holds its next event is cut off (its channel
// closes) and resumes with the id of the last event it got, as from any
// ended watch. So a slow subscriber never slows the others, and memory is
// bounded by the ring whatever the subscribers do.
//
// Resuming. The ring holds every event after its floor. A cursor at or
// after the floor is served from the ring; an older one is served by a
// backend watch from that cursor (which also decides whether the cursor is
// still valid) until the subscriber reaches the floor, then from the ring,
// and the backend watch is released. Events are told apart and ordered by
// Position, so a subscriber switching from the backend to the ring skips
// exactly what it has already had.
type hub struct {
	b    Backend
	log  *slog.Logger
	size int

	mu      sync.RWMutex
	ready   bool           // following the backend; floor and head are set
	floor   Position       // every event after floor is in the ring
	head    Position       // position of the last event received (floor if none)
	ring    []hubEvent     // circular; event k is at ring[k%size]
	first   uint64         // k of the oldest event held
	next    uint64         // k of the next event to arrive
	epoch   uint64         // bumped when continuity is lost: every pump ends
	changed chan struct{}  // closed and replaced at every change
	started chan struct{}  // closed when ready first becomes true
	done    chan struct{}  // closed when run returns: pumps end
	runs    sync.WaitGroup // pumps, waited for by run
	running atomic.Bool    // run has been called
}

type hubEvent struct {
	ev  Event
	pos Position
}

func newHub(b Backend, log *slog.Logger, size int) *hub {
	if size <= 0 {
		size = DefaultHubEvents
	}
	return &hub{b: b, log: log, size: size, ring: make([]hubEvent, size),
		changed: make(chan struct{}), started: make(chan struct{}), done: make(chan struct{})}
}

// run follows the backend until ctx ends. After a break it resumes from
// the last event it got; if the backend no longer holds that (the hub fell
// behind its history), continuity is lost: every subscriber is cut off to
// resume on its own cursor, and the hub starts again from the head.
func (h *hub) run(ctx context.Context) {
	h.running.Store(true) // also set by Gateway.Run before it starts run
	defer h.runs.Wait()
	defer func() {
		// Subscribers of a stopped hub end and resume elsewhere; new ones
		// watch the backend themselves.
		h.mu.Lock()
		h.ready = false
		h.mu.Unlock()
		close(h.done)
		h.cut()
	}()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		h.mu.RLock()
		ready, from := h.ready, h.head
		h.mu.RUnlock()
		if !ready {
			head, err := h.headPosition(ctx)
			if err != nil {
				h.wait(ctx, &backoff, "gateway: hub cannot read the backend's head", err)
				continue
			}
			h.reset(head)
			from = head
		}
		ch, err := h.b.Watch(ctx, "", from.String())
		if errors.Is(err, ErrCursorExpired) {
			h.log.LogAttrs(ctx, slog.LevelWarn, "gateway: hub fell behind the backend's history; subscribers resume on their own cursors",
				slog.String("from", from.String()))
			h.mu.Lock()
			h.ready = false
			h.mu.Unlock()
			h.cut()
			continue
		}
		if err != nil {
			h.wait(ctx, &backoff, "gateway: hub watch", err)
			continue
		}
		got := false
		for ev := range ch {
			pos, ok := ParsePosition(ev.ID)
			if !ok {
				h.log.LogAttrs(ctx, slog.LevelError, "gateway: hub: event id in no known form; skipped", slog.String("id", ev.ID))
				continue
			}
			h.append(ev, pos)
			got, backoff = true, 50*time.Millisecond
		}
		if !got {
			// A watch that ends before its first event is not progress:
			// do not spin on it.
			h.wait(ctx, &backoff, "gateway: hub watch ended", errors.New("no events"))
		}
	}
}

func (h *hub) wait(ctx context.Context, backoff *time.Duration, msg string, err error) {
	if ctx.Err() != nil {
		return
	}
	h.log.LogAttrs(ctx, slog.LevelWarn, msg, slog.Any("err", err))
	select {
	case <-ctx.Done():
	case <-time.After(*backoff):
	}
	*backoff = min(2**backoff, 2*time.Second)
}

// headPosition asks the backend where its stream ends now.
func (h *hub) headPosition(ctx context.Context) (Position, error) {
	s, err := h.b.Head(ctx)
	if err != nil {
		return Position{}, err
	}
	p, ok := ParsePosition(s)
	if !ok {
		return Position{}, fmt.Errorf("gateway: backend head %q is in no known form", s)
	}
	return p, nil
}

// reset empties the ring and starts it at head.
func (h *hub) reset(head Position) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.floor, h.head, h.ready = head, head, true
	h.first = h.next
	select {
	case <-h.started:
	default:
		close(h.started)
	}
	h.signal()
}

// cut ends every pump: they close their channels and their receivers
// resume with the last id they got.
func (h *hub) cut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.epoch++
	h.signal()
}

func (h *hub) append(ev Event, pos Position) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pos.Compare(h.head) <= 0 {
		return // a backend watch resumed over what the hub already has
	}
	if h.next-h.first == uint64(h.size) {
		h.floor = h.ring[h.first%uint64(h.size)].pos
		h.first++
	}
	h.ring[h.next%uint64(h.size)] = hubEvent{ev: ev, pos: pos}
	h.next++
	h.head = pos
	h.signal()
}

// signal wakes every pump. Callers hold h.mu for writing.
func (h *hub) signal() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// after returns k of the first event held after pos. Callers hold h.mu.
func (h *hub) after(pos Position) uint64 {
	n := int(h.next - h.first)
	i := sort.Search(n, func(i int) bool {
		return h.ring[(h.first+uint64(i))%uint64(h.size)].pos.Compare(pos) > 0
	})
	return h.first + uint64(i)
}

// hubStartWait bounds how long a subscriber waits for a hub that runs but
// has not reached the backend yet (a replica starting, its backend slow).
const hubStartWait = 5 * time.Second

// subscribe starts a pump for the events of election ("" for all) after
// cursor ("" for only new ones). ok is false when the hub is not following
// the backend because nobody runs it, or because it stopped or lost
// continuity; the caller then watches the backend itself. A subscriber
// that arrives while the hub is starting waits for it (a replica's
// reconnecting streams must not each open a backend watch), up to
// hubStartWait. Errors: ErrCursorExpired for a cursor the backend does not
// hold, ErrUnavailable when the hub did not start in time, the backend's
// errors.
func (h *hub) subscribe(ctx context.Context, election, cursor string) (ch <-chan Event, ok bool, err error) {
	if !h.running.Load() {
		return nil, false, nil
	}
	if !h.hasStarted() {
		wait := time.NewTimer(hubStartWait)
		defer wait.Stop()
		select {
		case <-h.started:
		case <-h.done:
			return nil, false, nil
		case <-wait.C:
			return nil, true, fmt.Errorf("gateway: event hub has not reached the backend yet: %w", ErrUnavailable)
		case <-ctx.Done():
			return nil, true, fmt.Errorf("gateway: waiting for the event hub: %w: %w", ErrUnavailable, ctx.Err())
		}
	}
	var from Position
	if cursor != "" {
		p, valid := ParsePosition(cursor)
		if !valid {
			return nil, true, fmt.Errorf("gateway: event id %q: %w", cursor, ErrCursorExpired)
		}
		from = p
	}
	h.mu.RLock()
	ready, floor, head, epoch := h.ready, h.floor, h.head, h.epoch
	h.mu.RUnlock()
	if !ready {
		return nil, false, nil
	}
	if cursor == "" {
		from = head
	}
	p := &pump{h: h, election: election, last: from, epoch: epoch, out: make(chan Event, subscriberBuffer)}
	switch {
	case from.Compare(floor) < 0:
		// Older than the ring: the backend serves it until the pump
		// reaches the floor. It also tells whether the cursor is held.
		bctx, cancel := context.WithCancel(ctx)
		bch, err := h.b.Watch(bctx, "", cursor)
		if err != nil {
			cancel()
			return nil, true, err
		}
		p.backend, p.stopBackend = bch, cancel
	case from.Compare(head) > 0:
		// Past what the hub has: the hub may lag the replica that issued
		// the cursor, or the cursor is made up. The backend knows.
		if err := h.checkFuture(ctx, from); err != nil {
			return nil, true, err
		}
	}
	h.runs.Add(1)
	go func() {
		defer h.runs.Done()
		p.run(ctx)
	}()
	return p.out, true, nil
}

// checkFuture returns ErrCursorExpired for a position past the backend's
// head: no backend issued it.
func (h *hub) checkFuture(ctx context.Context, from Position) error {
	limit, err := h.headPosition(ctx)
	if err != nil {
		return err
	}
	if cb, ok := h.b.(CursorBound); ok && from.Compare(limit) > 0 {
		s, err := cb.MaxCursor(ctx)
		if err != nil {
			return err
		}
		if limit, ok = ParsePosition(s); !ok {
			return fmt.Errorf("gateway: backend cursor bound %q is in no known form", s)
		}
	}
	if from.Compare(limit) > 0 {
		return fmt.Errorf("gateway: event id %s is past the backend's head %s: %w", from, limit, ErrCursorExpired)
	}
	return nil
}

// pump is one subscriber.
type pump struct {
	h        *hub
	election string
	last     Position // the last position delivered (or the cursor)
	epoch    uint64
	out      chan Event
	// backend, while set, serves the events before the ring's floor.
	backend     <-chan Event
	stopBackend context.CancelFunc
}

func (p *pump) run(ctx context.Context) {
	defer close(p.out)
	defer func() {
		if p.stopBackend != nil {
			p.stopBackend()
		}
	}()
	if p.backend != nil && !p.fromBackend(ctx) {
		return
	}
	p.fromRing(ctx)
}

// fromBackend forwards the backend watch until the ring holds everything
// after the last event delivered. It reports false when the pump is to end.
func (p *pump) fromBackend(ctx context.Context) bool {
	for {
		h := p.h
		h.mu.RLock()
		covered, epoch, changed := h.ready && p.last.Compare(h.floor) >= 0, h.epoch, h.changed
		h.mu.RUnlock()
		if epoch != p.epoch {
			return false
		}
		if covered {
			p.stopBackend()
			p.stopBackend, p.backend = nil, nil
			return true
		}
		select {
		case ev, ok := <-p.backend:
			if !ok {
				return false
			}
			pos, valid := ParsePosition(ev.ID)
			if !valid || pos.Compare(p.last) <= 0 {
				continue
			}
			p.last = pos
			if p.election == "" || ev.Election == p.election {
				if !p.send(ctx, ev) {
					return false
				}
			}
		case <-changed:
		case <-ctx.Done():
			return false
		case <-h.done:
			return false
		}
	}
}

// send delivers one event; it reports false when the pump is to end
// instead.
func (p *pump) send(ctx context.Context, ev Event) bool {
	select {
	case p.out <- ev:
		return true
	case <-ctx.Done():
	case <-p.h.done:
	}
	return false
}

// fromRing copies events after p.last from the ring until ctx ends, the
// hub loses continuity, or the ring no longer holds the next event.
func (p *pump) fromRing(ctx context.Context) {
	h := p.h
	batch := make([]Event, 0, subscriberBuffer)
	h.mu.RLock()
	k := h.after(p.last)
	behind := p.last.Compare(h.floor) < 0 // the floor moved on since the caller looked
	h.mu.RUnlock()
	if behind {
		return
	}
	for {
		h.mu.RLock()
		if h.epoch != p.epoch || k < h.first {
			h.mu.RUnlock()
			return // cut off: too slow, or the hub started over
		}
		// A bounded batch: a pump never copies more than its channel holds.
		batch = batch[:0]
		for ; k < h.next && len(batch) < subscriberBuffer; k++ {
			he := &h.ring[k%uint64(h.size)]
			if he.pos.Compare(p.last) <= 0 {
				continue
			}
			p.last = he.pos
			if p.election == "" || he.ev.Election == p.election {
				batch = append(batch, he.ev)
			}
		}
		changed, more := h.changed, k < h.next
		h.mu.RUnlock()
		for _, ev := range batch {
			if !p.send(ctx, ev) {
				return
			}
		}
		if more {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-h.done:
			return
		}
	}
}
