package etcd

import (
	"cmp"
	"context"
	"sync"

	"github.com/electorhq/elector/gateway"
)

// feedBacklog is how many events a feed holds for a receiver that has
// not taken them yet; a receiver that falls further behind has its
// channel closed after what it holds, and resumes (see Watch).
const feedBacklog = 8192

// feed delivers the events the cache derives to one Watch that starts
// where the cache is: the cache already derives every revision's events
// (to know Head), so such a watch costs etcd no watch of its own and the
// replica no second copy of the state nor a second decoding of each
// value. The events are the ones a watch of its own would derive: both
// apply the same revisions of etcd's history to the same state (see
// state.applyRevision), and Watch subscribes a feed only at the cache's
// Head, with every earlier event already delivered to the receiver.
type feed struct {
	election string // "" for every election
	backlog  int    // feedBacklog, but in tests

	mu    sync.Mutex
	queue []gateway.Event
	ended bool          // no event will be added: deliver the queue, then close
	ready chan struct{} // signalled (never closed) when queue or ended changes
}

func newFeed(election string, backlog int) *feed {
	return &feed{election: election, backlog: backlog, ready: make(chan struct{}, 1)}
}

// push queues the events of evs that the feed's receiver follows; it
// reports false, and ends the feed, when the receiver has fallen more
// than its backlog behind. Callers hold the cache's mu, so pushes
// come in the order of the revisions.
func (f *feed) push(evs []gateway.Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return false
	}
	n := len(f.queue)
	for _, e := range evs {
		if f.election == "" || e.Election == f.election {
			f.queue = append(f.queue, e)
		}
	}
	if len(f.queue) > f.backlog {
		// What is queued is delivered: the receiver resumes after the
		// last event it got.
		f.ended = true
	}
	if len(f.queue) != n || f.ended {
		f.signal()
	}
	return !f.ended
}

// end makes the feed close its channel once the receiver has taken what
// is queued.
func (f *feed) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	f.signal()
}

func (f *feed) signal() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// take returns the queued events and whether the feed has ended.
func (f *feed) take() ([]gateway.Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue
	f.queue = nil
	return q, f.ended
}

// subscribe starts a feed of the events after the cache's Head, if after
// is that Head ("" meaning wherever the cache is): the receiver then has
// every event up to it, and no event lies between it and the cache's
// revision. It returns nil otherwise, or when the state is not loaded.
func (c *cache) subscribe(election, after string) *feed {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded || (after != "" && after != c.st.last) {
		return nil
	}
	f := newFeed(election, cmp.Or(c.backlog, feedBacklog))
	if c.feeds == nil {
		c.feeds = map[*feed]bool{}
	}
	c.feeds[f] = true
	return f
}

// unsubscribe ends f and stops feeding it.
func (c *cache) unsubscribe(f *feed) {
	c.mu.Lock()
	delete(c.feeds, f)
	c.mu.Unlock()
	f.end()
}

// publish hands the events of one revision to every feed. Callers hold mu.
func (c *cache) publish(evs []gateway.Event) {
	if len(evs) == 0 {
		return
	}
	for f := range c.feeds {
		if !f.push(evs) {
			delete(c.feeds, f)
		}
	}
}

// endFeeds ends every feed: the state was loaded afresh, so the events of
// the revisions between the old state and the new one are not derived.
// Their receivers resume from the last event they got. Callers hold mu.
func (c *cache) endFeeds() {
	for f := range c.feeds {
		f.end()
	}
	clear(c.feeds)
}

// deliver copies f's events to a channel, which closes when f ends and
// its queue is delivered, when ctx ends, or when done closes (the
// backend's end).
func (c *cache) deliver(ctx context.Context, done <-chan struct{}, f *feed) <-chan gateway.Event {
	out := make(chan gateway.Event, watchBuffer)
	go func() {
		defer close(out)
		defer c.unsubscribe(f)
		for {
			evs, ended := f.take()
			for _, e := range evs {
				select {
				case out <- e:
				case <-ctx.Done():
					return
				case <-done:
					return
				}
			}
			if ended && len(evs) == 0 {
				return
			}
			if len(evs) > 0 {
				continue // more may have come meanwhile
			}
			select {
			case <-f.ready:
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return out
}
