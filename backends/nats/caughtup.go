package nats

import (
	"context"
	"fmt"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.CatchUpReporter = (*Backend)(nil)

// runSeen returns the highest records stream sequence that a running Run's
// watch has delivered, and whether Run is running at all.
func (b *Backend) runSeen() (seen uint64, running bool) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	for v := range b.runs {
		v.mu.Lock()
		seen = max(seen, v.seen)
		v.mu.Unlock()
	}
	return seen, len(b.runs) > 0
}

// CaughtUp implements gateway.CatchUpReporter. Run (the reconciler) acts
// on, and reads are served from, a view of records fed by its watch of the
// records stream: CaughtUp reads the stream's last sequence from the
// stream leader and returns nil once Run's watch has delivered it, waiting
// as gateway.WaitCaughtUp does. It returns an error wrapping
// gateway.ErrUnavailable when the watch is still behind (naming both
// sequences), when Run is not running, when the backend is closed, and
// when NATS cannot be reached.
func (b *Backend) CaughtUp(ctx context.Context) error {
	if b.isClosed() {
		return fmt.Errorf("nats: catch-up: backend closed: %w", gateway.ErrUnavailable)
	}
	if err := b.connected(); err != nil {
		return fmt.Errorf("nats: catch-up: %w", err)
	}
	if _, running := b.runSeen(); !running {
		return fmt.Errorf("nats: catch-up: the reconciler (Run) is not running: %w", gateway.ErrUnavailable)
	}
	want, err := b.lastSeq(ctx)
	if err != nil {
		return fmt.Errorf("nats: catch-up: %w", err)
	}
	delivered := func() (uint64, error) {
		seen, running := b.runSeen()
		if !running {
			return 0, fmt.Errorf("the reconciler (Run) is not running: %w", gateway.ErrUnavailable)
		}
		return seen, nil
	}
	err = gateway.WaitCaughtUp(ctx, "sequence", want, func(ctx context.Context) error {
		v := b.running()
		if v == nil {
			return errViewBehind
		}
		return v.waitSeen(ctx, want)
	}, delivered)
	if err != nil {
		return fmt.Errorf("nats: catch-up of stream %s: %w", b.cfg.Stream, err)
	}
	return nil
}
