package memory

import (
	"context"
	"time"
)

// Run expires candidates, ends cooldowns and handover delays when they are
// due, so their events fire without waiting for a request. It returns nil
// when ctx ends. Operations also catch up on their own election, so state
// is right even while Run is not running; only the events come late.
//
// Each wake-up scans every election: fine for thousands, not for millions.
func (b *Backend) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		b.mu.Lock()
		now := time.Now()
		var next time.Time
		for _, r := range b.elections {
			b.append(r.Advance(now))
			if at, ok := r.NextDeadline(); ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		changed := b.changed
		b.mu.Unlock()

		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-timer.C:
		}
	}
}
