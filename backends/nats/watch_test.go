package nats

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestWatchOfNewElectionFromElectionsCursor: a webhook subscription to an
// election that does not exist yet starts from the all-elections cursor of
// Elections(), on an empty stream and on one with other elections; its
// events carry the time of their transition, also when replayed later.
func TestWatchOfNewElectionFromElectionsCursor(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	var clock atomic.Pointer[time.Time]
	setClock := func(at time.Time) { clock.Store(&at) }
	setClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	nc, err := e.Connect(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := New(ctx, nc, freshConfig(), WithLogger(testLogger(t)), WithClock(func() time.Time { return *clock.Load() }))
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	b.ownConn = true
	t.Cleanup(func() { _ = b.Close() })

	recv := func(ch <-chan gateway.Event, n int) []gateway.Event {
		t.Helper()
		var got []gateway.Event
		for len(got) < n {
			select {
			case ev, ok := <-ch:
				if !ok {
					t.Fatalf("watch closed after %d events, want %d", len(got), n)
				}
				got = append(got, ev)
			case <-ctx.Done():
				t.Fatalf("got %d events, want %d", len(got), n)
			}
		}
		return got
	}
	elections := func() string {
		t.Helper()
		_, cursor, err := b.Elections(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cursor
	}

	// An empty stream.
	empty := elections()
	chEmpty, err := b.Watch(ctx, "first", empty)
	if err != nil {
		t.Fatalf("watch of a new election after %q (empty stream): %v", empty, err)
	}
	joinedAt := time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC)
	setClock(joinedAt)
	campaignT(t, b, "first", "a", 10*time.Second)
	if ev := recv(chEmpty, 1)[0]; ev.Type != gateway.EventCandidateJoined || !ev.Time.Equal(joinedAt) {
		t.Fatalf("first event %s at %s, want candidate.joined at %s", ev.Type, ev.Time, joinedAt)
	}

	// A stream holding other elections.
	cursor := elections()
	ch, err := b.Watch(ctx, "second", cursor)
	if err != nil {
		t.Fatalf("watch of a new election after %q: %v", cursor, err)
	}
	beganAt := time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC)
	setClock(beganAt)
	campaignT(t, b, "second", "b", 10*time.Second)
	live := recv(ch, 2) // joined(b), begin(b)
	for _, ev := range live {
		if ev.Election != "second" || !ev.Time.Equal(beganAt) {
			t.Fatalf("event %s of %s at %s, want of second at %s", ev.Type, ev.Election, ev.Time, beganAt)
		}
	}

	// Replayed later, the events keep the time of their transition.
	setClock(beganAt.Add(time.Hour))
	replay, err := b.Watch(ctx, "second", cursor)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range recv(replay, 2) {
		if ev.ID != live[i].ID || !ev.Time.Equal(beganAt) {
			t.Fatalf("replayed event %s at %s, want %s at %s", ev.ID, ev.Time, live[i].ID, beganAt)
		}
	}
}

// TestWatchFromHead: Head names the position after the latest write, and a
// watch from it gets the next write's events and none before.
func TestWatchFromHead(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if h, err := b.Head(ctx); err != nil || h != "0" {
		t.Fatalf("head of an empty stream = %q, %v; want \"0\"", h, err)
	}
	campaignT(t, b, "head", "a", 10*time.Second) // joined(a), begin(a): one record
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := gateway.ParsePosition(head); !ok || p.String() != head {
		t.Fatalf("head %q is not a bare position", head)
	}
	ch, err := b.Watch(ctx, "", head)
	if err != nil {
		t.Fatalf("watch from head %q: %v", head, err)
	}
	campaignT(t, b, "head", "b", 10*time.Second)
	select {
	case ev := <-ch:
		if ev.Type != gateway.EventCandidateJoined || ev.Candidate.ID != "b" {
			t.Fatalf("first event after head: %s %+v, want b joined", ev.Type, ev.Candidate)
		}
		evPos, _ := gateway.ParsePosition(ev.ID)
		headPos, _ := gateway.ParsePosition(head)
		if evPos.Compare(headPos) <= 0 {
			t.Fatalf("event %s is not after head %s", ev.ID, head)
		}
	case <-ctx.Done():
		t.Fatal("no event after head")
	}
}
