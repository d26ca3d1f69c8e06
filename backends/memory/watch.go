package memory

import (
	"context"
	"fmt"
	"math"

	"github.com/electorhq/elector/gateway"
)

// watchBuffer is how many events a watcher's channel holds before the
// pump waits for the receiver; the ring behind it holds the rest.
const watchBuffer = 64

// append gives events their ids, keeps them in the ring and wakes watchers
// and the Run loop. Callers hold b.mu.
func (b *Backend) append(ev []gateway.Event) {
	if len(ev) == 0 {
		return
	}
	for _, e := range ev {
		b.seq++
		e.ID = gateway.After(b.seq).String()
		b.ring = append(b.ring, e)
	}
	// Trim to the last history events once twice as many are held: one
	// copy per history events appended, not one per event.
	if len(b.ring) >= 2*b.history {
		over := len(b.ring) - b.history
		b.ring = append(b.ring[:0:0], b.ring[over:]...)
		b.first += uint64(over)
	}
	b.signal()
}

// signal wakes everybody waiting on b.changed. Callers hold b.mu.
func (b *Backend) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Watch implements gateway.Backend. Ids are sequence numbers, one per
// event, in gateway.Position's form "<rev>"; a watcher that falls behind
// by more than the history has its channel closed and gets
// ErrCursorExpired when it resumes.
func (b *Backend) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	b.mu.Lock()
	next := b.seq + 1
	if after != "" {
		p, ok := gateway.ParsePosition(after)
		n := p.Rev
		if !ok || p.Index != math.MaxInt || n > b.seq || n+1 < b.first {
			b.mu.Unlock()
			return nil, fmt.Errorf("memory: watch after %q: %w", after, gateway.ErrCursorExpired)
		}
		next = n + 1
	}
	b.mu.Unlock()
	out := make(chan gateway.Event, watchBuffer)
	go b.pump(ctx, election, next, out)
	return out, nil
}

// pump copies events from the ring to out, starting at id next, until ctx
// ends or the ring no longer holds next. It closes out when it returns.
func (b *Backend) pump(ctx context.Context, election string, next uint64, out chan<- gateway.Event) {
	defer close(out)
	var batch []gateway.Event
	for {
		b.mu.Lock()
		if next < b.first {
			b.mu.Unlock()
			return // fell behind the history: the receiver resumes and resets
		}
		batch = batch[:0]
		for i := next - b.first; i < uint64(len(b.ring)); i++ {
			if e := b.ring[i]; election == "" || e.Election == election {
				batch = append(batch, e)
			}
		}
		next = b.first + uint64(len(b.ring))
		changed := b.changed
		b.mu.Unlock()

		for _, e := range batch {
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
		if len(batch) == 0 {
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}
