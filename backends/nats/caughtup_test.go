package nats

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// caughtUpWithin polls CaughtUp until it returns nil or d passes (Run
// starts its watch asynchronously), returning the last error.
func caughtUpWithin(b *Backend, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return eventually.Poll(ctx, func() error { return b.CaughtUp(context.Background()) })
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

	// A view whose watch has delivered nothing is behind; the error
	// names both sequences.
	stop()
	lag := newView(b)
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

// TestALaggingViewServesNoStaleLeader: a replica whose view stopped at an
// old record (its watch stalled, as a watcher that fell behind is) still
// answers a read with the leader of the latest record, never the view's,
// and its readiness check says it is behind. The read waits for the view
// up to gateway.CatchUpGrace, then reads from the stream leader.
func TestALaggingViewServesNoStaleLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := viewStoppedAtALeadership(t, ctx)
	el, err := b.ElectionLeader(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if el.Leader == nil || el.Leader.ID != "b" || el.Term != 2 {
		t.Fatalf("read through the lagging view: leader %+v at term %d, want b at term 2", el.Leader, el.Term)
	}
	if err := b.CaughtUp(ctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("CaughtUp of the lagging view: %v, want ErrUnavailable", err)
	}
}

// viewStoppedAtALeadership returns a backend with a view of its own (as
// Run's) that loaded election e up to candidate a's leadership and
// receives nothing more (nor says it follows the stream), and that view;
// a has since resigned through another replica, so candidate b leads. The
// view goes when the test ends.
func viewStoppedAtALeadership(t *testing.T, ctx context.Context) (*Backend, *view) {
	t.Helper()
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	b, other := open(t, e, cfg), open(t, e, cfg)
	thA, _ := campaignT(t, other, "e", "a", time.Minute)
	campaignT(t, other, "e", "b", time.Minute)
	old, found, err := b.load(ctx, "e")
	if err != nil || !found {
		t.Fatalf("load: %v, %v", found, err)
	}
	lag := newView(b)
	lag.recs["e"], lag.seen, lag.filled = old.viewed(), old.seq, true
	b.addRun(lag)
	t.Cleanup(func() { b.removeRun(lag) })
	if err := other.Resign(ctx, "e", "a", thA); err != nil {
		t.Fatal(err)
	}
	return b, lag
}

// TestAViewThatMayHaveMissedRecordsIsNotUsed: a view that has reached the
// read index, but whose watch reported as many records pending after it
// as the stream keeps per election, may have missed records the History
// limit dropped before it read them. A read must then go to the stream
// leader rather than answer from the view's older record.
func TestAViewThatMayHaveMissedRecordsIsNotUsed(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	cfg.History = 5
	b, other := open(t, e, cfg), open(t, e, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	thA, _ := campaignT(t, other, "e", "a", time.Minute)
	campaignT(t, other, "e", "b", time.Minute)
	old, found, err := b.load(ctx, "e")
	if err != nil || !found {
		t.Fatalf("load: %v, %v", found, err)
	}
	if err := other.Resign(ctx, "e", "a", thA); err != nil {
		t.Fatal(err)
	}
	head, err := b.fetchHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The view says it delivered the head, with History records pending
	// after it, and holds e as it was before a resigned.
	lag := newView(b)
	lag.recs["e"], lag.seen, lag.pending, lag.filled = old.viewed(), head, uint64(cfg.History), true
	b.addRun(lag)
	defer b.removeRun(lag)

	el, err := b.ElectionLeader(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	if el.Leader == nil || el.Leader.ID != "b" || el.Term != 2 {
		t.Fatalf("read through a view that may have missed records: leader %+v at term %d, want b at term 2", el.Leader, el.Term)
	}
}
