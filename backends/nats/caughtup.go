package nats

import (
	"context"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

// catchUpGrace is how long CaughtUp lets Run's watch reach the records
// stream's last sequence before it reports the watch as behind.
const catchUpGrace = time.Second

var _ gateway.CatchUpReporter = (*Backend)(nil)

// addRun and removeRun track the reconcilers of running Run calls.
func (b *Backend) addRun(r *reconciler) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	if b.runs == nil {
		b.runs = map[*reconciler]struct{}{}
	}
	b.runs[r] = struct{}{}
}

func (b *Backend) removeRun(r *reconciler) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	delete(b.runs, r)
}

// runSeen returns the highest records stream sequence that a running Run's
// watch has delivered, and whether Run is running at all.
func (b *Backend) runSeen() (seen uint64, running bool) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	for r := range b.runs {
		r.mu.Lock()
		seen = max(seen, r.seen)
		r.mu.Unlock()
	}
	return seen, len(b.runs) > 0
}

// CaughtUp implements gateway.CatchUpReporter. Run (the reconciler) acts
// on, and reads are served from, a view of records fed by its watch of the
// records stream: CaughtUp reads the stream's last sequence from the
// stream leader and returns nil once Run's watch has delivered it, waiting up to a second (or ctx's deadline if earlier). It
// returns an error wrapping gateway.ErrUnavailable when the watch is
// still behind (naming both sequences), when Run is not running, when the
// backend is closed, and when NATS cannot be reached.
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
	wctx, wcancel := context.WithTimeout(ctx, catchUpGrace)
	defer wcancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		seen, running := b.runSeen()
		switch {
		case !running:
			return fmt.Errorf("nats: catch-up: the reconciler (Run) is not running: %w", gateway.ErrUnavailable)
		case seen >= want:
			return nil
		}
		select {
		case <-tick.C:
		case <-wctx.Done():
			return fmt.Errorf("nats: catch-up: reconciler's watch is behind: delivered up to sequence %d of stream %s, which is at %d (%d behind): %w",
				seen, b.cfg.Stream, want, want-seen, gateway.ErrUnavailable)
		}
	}
}
