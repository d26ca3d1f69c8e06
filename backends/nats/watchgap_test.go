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

// TestWatchFromACursorOlderThanAnElectionsHistoryEnds: a watch of all
// elections, or of one election, started from a cursor of another
// election, after which the watched election wrote more records than the
// stream keeps of it. The first of its records the watch gets names a
// predecessor the stream dropped: the watch must end before delivering
// it, and the resumption from the receiver's last id must be
// ErrCursorExpired (a snapshot follows), never a stream that goes on past
// the dropped transitions, nor one that ends at the same gap again and
// again.
func TestWatchFromACursorOlderThanAnElectionsHistoryEnds(t *testing.T) {
	for _, watched := range []string{"", "busy"} {
		name := watched
		if name == "" {
			name = "all"
		}
		t.Run(name, func(t *testing.T) {
			e := startServer(t, t.TempDir())
			t.Cleanup(e.Shutdown)
			cfg := freshConfig()
			cfg.History = 5
			b := open(t, e, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			campaignT(t, b, "busy", "a", time.Minute)
			campaignT(t, b, "quiet", "q", time.Minute)
			snap, err := b.Election(ctx, "quiet")
			if err != nil {
				t.Fatal(err)
			}
			cursor := snap.Cursor
			// Ten transitions of busy after the cursor: the first five are
			// dropped by the limit of five records per election.
			for range 5 {
				th, _ := campaignT(t, b, "busy", "b", time.Minute)
				if err := b.Resign(ctx, "busy", "b", th); err != nil {
					t.Fatal(err)
				}
			}
			// A last transition of busy that the watch must not get to
			// without having ended first.
			campaignT(t, b, "busy", "z", time.Minute)

			ch, err := b.Watch(ctx, watched, cursor)
			if err != nil {
				t.Fatalf("watch from %s: %v", cursor, err)
			}
			last := cursor
			for ev := range ch {
				if ev.Candidate != nil && ev.Candidate.ID == "z" {
					t.Fatalf("the watch from %s delivered %s %s of z: it went on past the dropped records of busy", cursor, ev.ID, ev.Type)
				}
				last = ev.ID
			}
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
			if _, err := b.Watch(ctx, watched, last); !errors.Is(err, gateway.ErrCursorExpired) {
				t.Fatalf("resume after %s: %v, want ErrCursorExpired", last, err)
			}
			// A snapshot's cursor is after the gap: watching from it works.
			snap, err = b.Election(ctx, "busy")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Watch(ctx, watched, snap.Cursor); err != nil {
				t.Fatalf("watch from the snapshot's cursor %s: %v", snap.Cursor, err)
			}
		})
	}
}
