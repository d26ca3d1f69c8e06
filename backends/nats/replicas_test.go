package nats

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestReplicasAgreeOnLeaderAndEventIDs runs two backends (two gateway
// replicas) on one server: a campaign through one is seen by the other's
// snapshot and watch, with the same event ids.
func TestReplicasAgreeOnLeaderAndEventIDs(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	a, b := open(t, e, cfg), open(t, e, cfg)
	run(t, a)
	run(t, b)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chA, err := a.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	chB, err := b.Watch(ctx, "billing", "")
	if err != nil {
		t.Fatal(err)
	}
	campaignT(t, a, "billing", "node-a", 5*time.Second)
	campaignT(t, b, "billing", "node-b", 5*time.Second)

	recv := func(ch <-chan gateway.Event, n int) []gateway.Event {
		var got []gateway.Event
		for len(got) < n {
			select {
			case ev := <-ch:
				got = append(got, ev)
			case <-ctx.Done():
				t.Fatalf("got %d events, want %d", len(got), n)
			}
		}
		return got
	}
	// joined(a), begin(a), joined(b)
	evA, evB := recv(chA, 3), recv(chB, 3)
	for i := range evA {
		if evA[i].ID != evB[i].ID || evA[i].Type != evB[i].Type {
			t.Errorf("event %d: replica a saw %s %s, replica b %s %s", i, evA[i].ID, evA[i].Type, evB[i].ID, evB[i].Type)
		}
	}
	if evA[1].Type != gateway.EventLeaderBegin || evA[1].Candidate.ID != "node-a" {
		t.Errorf("second event %s %+v, want leader.begin of node-a", evA[1].Type, evA[1].Candidate)
	}
	for _, r := range []*Backend{a, b} {
		el, err := r.Election(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		if el.Leader == nil || el.Leader.ID != "node-a" || el.Leader.Term != 1 {
			t.Errorf("leader %+v, want node-a term 1", el.Leader)
		}
		if el.Cursor != evA[2].ID {
			t.Errorf("cursor %q, want the last event id %q", el.Cursor, evA[2].ID)
		}
	}
}
