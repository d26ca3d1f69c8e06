package nats

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// caughtUpWithin polls CaughtUp until it returns nil or d passes (Run
// starts its watch asynchronously), returning the last error.
func caughtUpWithin(b *Backend, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return poll(ctx, func() error { return b.CaughtUp(context.Background()) })
}

func TestCaughtUp(t *testing.T) {
	e := startServer(t, t.TempDir())
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := b.CaughtUp(ctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("CaughtUp without Run: %v, want ErrUnavailable", err)
	}
	campaignT(t, b, "e1", "node-a", 5*time.Second)
	stop := runUntil(b)
	if err := caughtUpWithin(b, 5*time.Second); err != nil {
		t.Fatalf("CaughtUp with Run running: %v", err)
	}
	// Later writes are caught up with too, within the grace.
	campaignT(t, b, "e1", "node-b", 5*time.Second)
	campaignT(t, b, "e2", "node-c", 5*time.Second)
	if err := b.CaughtUp(ctx); err != nil {
		t.Fatalf("CaughtUp after more campaigns: %v", err)
	}

	// A reconciler whose watch has delivered nothing is behind; the error
	// names both sequences.
	stop()
	lag := &reconciler{b: b, recs: map[string]stored{}, wake: make(chan struct{}, 1)}
	b.addRun(lag)
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := b.CaughtUp(sctx)
	scancel()
	if !errors.Is(err, gateway.ErrUnavailable) || !strings.Contains(err.Error(), "sequence 0") {
		t.Fatalf("CaughtUp of a lagging watch: %v, want ErrUnavailable naming the sequences", err)
	}
	b.removeRun(lag)

	if err := b.CaughtUp(ctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("CaughtUp after Run stopped: %v, want ErrUnavailable", err)
	}

	stop = runUntil(b)
	defer stop()
	if err := caughtUpWithin(b, 5*time.Second); err != nil {
		t.Fatalf("CaughtUp with Run running again: %v", err)
	}
	e.Shutdown()
	if err := b.CaughtUp(ctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("CaughtUp with the server down: %v, want ErrUnavailable", err)
	}
}
