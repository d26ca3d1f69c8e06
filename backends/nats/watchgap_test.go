package nats

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
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

	// The writes are done: the watch either delivers every event or ends
	// at the first dropped record. It may end before any event, when its
	// consumer started after the first records were already dropped.
	var got []gateway.Event
	closed := false
	for !closed && len(got) < 4*rounds {
		select {
		case ev, ok := <-ch:
			if !ok {
				closed = true
				break
			}
			got = append(got, ev)
		case <-ctx.Done():
			t.Fatalf("watch neither delivered all %d events nor ended: %d events", 4*rounds, len(got))
		}
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
	if !closed {
		t.Skip("the watch kept up; nothing was dropped") // not expected with these buffers
	}
	last := snap.Cursor
	if len(got) > 0 {
		last = got[len(got)-1].ID
	}
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

// stallOnce is the NATS backend with the first watch of all elections (the
// gateway hub's) read by a receiver that stalls after the first
// leader.begin of election quiet until gate closes, then loses the watch,
// as a hub on a loaded replica whose consumer is reset would. Every other
// watch is the backend's own.
type stallOnce struct {
	*Backend
	gate    chan struct{}
	stalled chan struct{} // closed once the receiver stalls
	used    atomic.Bool
}

func (s *stallOnce) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	if election != "" || s.used.Swap(true) {
		return s.Backend.Watch(ctx, election, after)
	}
	wctx, cancel := context.WithCancel(ctx)
	ch, err := s.Backend.Watch(wctx, election, after)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan gateway.Event)
	go func() {
		defer close(out)
		defer cancel()
		for ev := range ch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Election == "quiet" && ev.Type == gateway.EventLeaderBegin {
				close(s.stalled)
				select {
				case <-s.gate:
				case <-ctx.Done():
				}
				return // the watch is lost: the hub resumes from this event
			}
		}
	}()
	return out, nil
}

// TestHubThatFallsBehindHistoryCutsItsSubscribers: the gateway's hub loses
// its watch after an event of election quiet, and election lag writes
// more records than the stream keeps of it before the hub resumes from
// that event (still held: quiet wrote nothing since). The resumed watch
// meets lag's records after dropped ones: the hub must not go on past
// them. Its subscribers are cut off and their resumption is
// ErrCursorExpired, on which an event stream sends reset snapshots.
func TestHubThatFallsBehindHistoryCutsItsSubscribers(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	cfg.History = 5
	s := &stallOnce{Backend: open(t, e, cfg), gate: make(chan struct{}), stalled: make(chan struct{})}
	gw := gateway.New(s, gateway.Config{Logger: testLogger(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	rctx, stop := context.WithCancel(ctx)
	go func() { defer close(done); _ = gw.Run(rctx) }()
	defer func() { stop(); <-done }()
	eventually.NoErrorUntil(ctx, t, "the hub's watch", func() error {
		if !s.used.Load() {
			return errors.New("not yet")
		}
		return nil
	})

	sub, err := gw.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	campaignT(t, s, "lag", "a", time.Minute)
	campaignT(t, s, "quiet", "q", time.Minute)
	var last string
	for range 4 { // lag's and quiet's candidate.joined and leader.begin
		select {
		case ev := <-sub:
			last = ev.ID
		case <-ctx.Done():
			t.Fatal("no events from the hub")
		}
	}
	<-s.stalled
	for range 5 { // ten records of lag: the first five after quiet's are dropped
		th, _ := campaignT(t, s, "lag", "b", time.Minute)
		if err := s.Resign(ctx, "lag", "b", th); err != nil {
			t.Fatal(err)
		}
	}
	close(s.gate)

	for ev := range sub {
		t.Fatalf("after %s the hub's subscriber got %s %s of %s: the hub went on past records it never got", last, ev.ID, ev.Type, ev.Election)
	}
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
	if _, err := gw.Watch(ctx, "", last); !errors.Is(err, gateway.ErrCursorExpired) {
		t.Fatalf("resuming after %s: %v, want ErrCursorExpired", last, err)
	}
	// A fresh subscriber gets what follows.
	fresh, err := gw.Watch(ctx, "lag", "")
	if err != nil {
		t.Fatal(err)
	}
	campaignT(t, s, "lag", "c", time.Minute)
	select {
	case ev := <-fresh:
		if ev.Type != gateway.EventCandidateJoined || ev.Candidate.ID != "c" {
			t.Fatalf("a fresh subscriber got %s of %+v, want c's candidate.joined", ev.Type, ev.Candidate)
		}
	case <-ctx.Done():
		t.Fatal("a fresh subscriber got nothing")
	}
}
