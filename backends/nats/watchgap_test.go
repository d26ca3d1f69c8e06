package nats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

// TestWatchThatFallsBehindHistoryEnds: a watch whose receiver does not keep
// up falls more records behind than the stream keeps per election. The
// records it had not read yet are dropped, and the consumer delivers the
// next held one as if nothing were missing; the watch must notice the gap
// in the chain of records, end after the last event before it, and a
// resumption from that event must be ErrCursorExpired, never a stream
// that silently skips transitions.
func TestWatchThatFallsBehindHistoryEnds(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	cfg.History = 5
	b := open(t, e, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	snap, err := b.Configure(ctx, "lag", gateway.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := b.Watch(ctx, "lag", snap.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads ch: the watch's buffers (64 events, 500 messages pulled
	// ahead) fill up and the server-side consumer stops well behind.
	const rounds = 400 // 800 records, 4 events each round
	for range rounds {
		th, _ := campaignT(t, b, "lag", "a", time.Minute)
		if err := b.Resign(ctx, "lag", "a", th); err != nil {
			t.Fatal(err)
		}
	}

	var got []gateway.Event
	closed, quiet := false, false
	for !closed && !quiet {
		select {
		case ev, ok := <-ch:
			if !ok {
				closed = true
				break
			}
			got = append(got, ev)
		case <-time.After(3 * time.Second):
			quiet = true
		}
	}
	if len(got) == 0 {
		t.Fatal("no events before the watch ended")
	}
	// One election on the stream: its records are consecutive sequences.
	prev := uint64(0)
	for _, ev := range got {
		seq, _, err := parseCursor(ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if prev != 0 && seq != prev && seq != prev+1 {
			t.Fatalf("events jump from record %d to record %d after %d events: a silent gap", prev, seq, len(got))
		}
		prev = seq
	}
	if err := backendtest.CheckEvents(got); err != nil {
		t.Fatal(err)
	}
	if !closed && len(got) < 4*rounds {
		t.Fatalf("watch neither delivered all %d events nor ended: %d events, last %s", 4*rounds, len(got), got[len(got)-1].ID)
	}
	if len(got) == 4*rounds {
		t.Skip("the watch kept up; nothing was dropped") // not expected with these buffers
	}
	last := got[len(got)-1].ID
	if _, err := b.Watch(ctx, "lag", last); !errors.Is(err, gateway.ErrCursorExpired) {
		t.Fatalf("resume after %s (%d of %d events): %v, want ErrCursorExpired", last, len(got), 4*rounds, err)
	}
	t.Logf("watch ended after %d of %d events at %s; resuming is ErrCursorExpired", len(got), 4*rounds, last)
}
