package gateway

import (
	"context"
	"fmt"
	"time"
)

// CatchUpGrace is how long a CatchUpReporter lets its watch reach the
// backend's head, read when CaughtUp is called, before it reports the
// watch behind: a healthy watch under load gets there well within it,
// and a readiness probe still learns of one that does not within its
// period.
const CatchUpGrace = time.Second

// WaitCaughtUp is the wait of every CatchUpReporter, once it has read its
// backend's head (a revision or stream sequence, named by unit). wait
// returns nil once the backend's watch has delivered head, or its
// context's error; WaitCaughtUp gives it CatchUpGrace, or ctx's deadline
// if earlier. When the watch does not get there, delivered says how far it
// got (or why it cannot tell: an error wrapping ErrUnavailable), and
// WaitCaughtUp returns an error wrapping ErrUnavailable that names both
// positions.
func WaitCaughtUp(ctx context.Context, unit string, head uint64, wait func(context.Context) error, delivered func() (uint64, error)) error {
	wctx, cancel := context.WithTimeout(ctx, CatchUpGrace)
	defer cancel()
	if wait(wctx) == nil {
		return nil
	}
	seen, err := delivered()
	switch {
	case err != nil:
		return err
	case seen >= head:
		return nil // got there as the grace ended
	}
	return fmt.Errorf("watch not caught up: delivered up to %s %d, the backend is at %d (%d behind): %w", unit, seen, head, head-seen, ErrUnavailable)
}
