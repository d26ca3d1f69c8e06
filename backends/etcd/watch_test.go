package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// nextEvent returns the next event of ch, failing the test after 10s or
// when ch closes.
func nextEvent(t *testing.T, ch <-chan gateway.Event) gateway.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return gateway.Event{}
}

// expectEvents checks that the next events of ch are of election e and of
// types want, in order.
func expectEvents(t *testing.T, name string, ch <-chan gateway.Event, e string, want ...gateway.EventType) {
	t.Helper()
	for i, w := range want {
		got := nextEvent(t, ch)
		if got.Election != e || got.Type != w {
			t.Fatalf("%s: event %d is %s of %q (id %s), want %s of %q", name, i, got.Type, got.Election, got.ID, w, e)
		}
	}
}

// TestWatchFromElectionsCursorOfElectionNotYetCreated subscribes, as
// webhooks do, to an election nobody has campaigned in yet, with the
// cursor of Elections, on another replica, and gets its first events.
func TestWatchFromElectionsCursorOfElectionNotYetCreated(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	replica := newBackend(t, ms, "elector")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	all, cursor, err := b.Elections(ctx) // an empty etcd
	if err != nil || len(all) != 0 {
		t.Fatalf("elections: %+v, %v", all, err)
	}
	ch, err := replica.Watch(ctx, "later", cursor)
	if err != nil {
		t.Fatalf("watch of an election not yet created, from %q: %v", cursor, err)
	}
	if _, err := b.Create(ctx, "webhooks/subscriptions/s1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(ctx, "other", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Campaign(ctx, "later", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, "watch of later", ch, "later", gateway.EventCandidateJoined, gateway.EventLeaderBegin)

	// The same from a cursor taken once other elections exist.
	_, cursor, err = replica.Elections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch, err = b.Watch(ctx, "later2", cursor)
	if err != nil {
		t.Fatalf("watch of an election not yet created, from %q: %v", cursor, err)
	}
	if _, err := replica.Campaign(ctx, "later2", gateway.Candidacy{ID: "b", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, "watch of later2", ch, "later2", gateway.EventCandidateJoined, gateway.EventLeaderBegin)
}
