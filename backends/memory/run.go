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
// Each wake-up looks only at the elections with a deadline due (a heap of
// deadlines), so a change costs Run the same with ten elections as with
// ten thousand.
func (b *Backend) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		b.mu.Lock()
		next := b.advanceDue(time.Now())
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
