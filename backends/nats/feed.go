package nats

import (
	"sync"

	"github.com/electorhq/elector/gateway"
)

// feed is a watch of every election fed by the view's own tail
// (view.record) instead of a server consumer of its own: each record
// is delivered by the server once per replica and decoded once, for the
// view and for the hub (events, webhooks, event streams) alike. The view
// hands it every record it takes in, in stream order and once on disk;
// Watch delivers their events as it delivers a tail's, with the same
// checks.
//
// The view never waits for a feed: records queue, and a feed more than
// maxFeedQueue records behind ends, as does every feed when Run ends. Its
// receiver then resumes from the last id it got, as after any watch.
type feed struct {
	mu    sync.Mutex
	queue []stored
	ended bool
	wake  chan struct{} // buffered: something was queued, or the feed ended
}

// maxFeedQueue bounds the records a feed holds for a slow receiver.
const maxFeedQueue = 1 << 14

func newFeed() *feed { return &feed{wake: make(chan struct{}, 1)} }

// push queues s; it ends the feed when the receiver is too far behind.
func (f *feed) push(s stored) {
	f.mu.Lock()
	if !f.ended {
		if len(f.queue) >= maxFeedQueue {
			f.ended = true
		} else {
			f.queue = append(f.queue, s)
		}
	}
	f.mu.Unlock()
	f.signal()
}

// end ends the feed: the receiver gets what is queued, then nothing.
func (f *feed) end() {
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
	f.signal()
}

func (f *feed) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take returns the records queued so far (into dst), and whether the feed
// has ended after them.
func (f *feed) take(dst []stored) ([]stored, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dst = append(dst, f.queue...)
	clear(f.queue)
	f.queue = f.queue[:0]
	return dst, f.ended
}

// attach starts a feed of every record the view takes in after its seen
// sequence, S0, and returns it with S0. The caller delivers the records of
// the watch from its cursor up to S0 some other way (a tail), unless
// noneBefore: no event lies after cursor p up to S0 (newest is not past
// it), so the feed alone delivers every event after p.
//
// It returns a nil feed once Run is ending, and while the view's watch
// may still skip records after seen (before ordered is known, and until
// seen reaches it: see resume): the caller then reads from a tail of its
// own until the view can feed it (watch.go, adopt).
func (v *view) attach(p gateway.Position) (f *feed, s0 uint64, noneBefore bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.feedsEnded || !v.canFeedLocked() {
		return nil, 0, false
	}
	f = newFeed()
	if v.feeds == nil {
		v.feeds = map[*feed]struct{}{}
	}
	v.feeds[f] = struct{}{}
	return f, v.seen, p.Compare(v.newest) >= 0
}

// canFeedLocked reports whether the view delivers every record after
// seen, in order (see attach). Once true it stays so while Run runs:
// ordered is known once, and seen only grows.
func (v *view) canFeedLocked() bool { return v.orderedKnown && v.seen >= v.ordered }

// noteFeedableLocked tells the watches waiting for a view that can feed
// them (Backend.feedableWait) that this one can, the first time it can.
// Called under v.mu after each change of seen or ordered.
func (v *view) noteFeedableLocked() {
	if v.feedableNoted || !v.canFeedLocked() {
		return
	}
	v.feedableNoted = true
	v.b.feedableSignal()
}

// feedableWait returns a channel that is closed the next time a view
// becomes able to feed watches. Take it before asking a view to attach,
// so that a view that becomes able in between is not missed.
func (b *Backend) feedableWait() <-chan struct{} {
	b.feedMu.Lock()
	defer b.feedMu.Unlock()
	if b.feedable == nil {
		b.feedable = make(chan struct{})
	}
	return b.feedable
}

// feedableSignal wakes every feedableWait so far. b.feedMu is taken
// under a view's mu, never the other way round.
func (b *Backend) feedableSignal() {
	b.feedMu.Lock()
	defer b.feedMu.Unlock()
	if b.feedable != nil {
		close(b.feedable)
		b.feedable = nil
	}
}

// detach stops feeding f.
func (v *view) detach(f *feed) {
	v.mu.Lock()
	delete(v.feeds, f)
	v.mu.Unlock()
}

// endFeeds ends every feed, when Run ends.
func (v *view) endFeeds() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.feedsEnded = true
	for f := range v.feeds {
		f.end()
		delete(v.feeds, f)
	}
}
