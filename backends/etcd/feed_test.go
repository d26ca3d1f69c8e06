package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestWatchAtHeadIsFedByTheCache: a Watch from the replica's Head (as the
// hub starts) is fed the events the cache derives, with no watch of its
// own, and they are the events, byte for byte, that a watch of its own
// derives again from etcd's history from the same cursor; the feed ends
// with the Watch's context.
func TestWatchAtHeadIsFedByTheCache(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "fed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	fed, err := b.Watch(wctx, "", head)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Feeds(); n != 1 {
		t.Fatalf("a watch from the head %q: the cache feeds %d watches, want 1", head, n)
	}
	tha := campaignAs(t, b, "e", "a", 10*time.Second)
	campaignAs(t, b, "e", "b", 10*time.Second)
	if err := b.Resign(ctx, "e", "a", tha); err != nil {
		t.Fatal(err)
	}
	var want []gateway.Event
	for len(want) < 5 { // a joins and leads, b joins, a ends and leaves, b leads
		want = append(want, nextEvent(t, fed))
	}
	// The same cursor is no longer the head: a watch of its own.
	own, err := b.Watch(ctx, "", head)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.Feeds(); n != 1 {
		t.Fatalf("a watch from behind the head: the cache feeds %d watches, want 1", n)
	}
	for _, w := range want {
		got := nextEvent(t, own)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("derived again: %s\nfed:          %s", gj, wj)
		}
	}
	wcancel()
	eventually.True(t, 5*time.Second, "the fed watch closed", func() bool {
		select {
		case _, ok := <-fed:
			return !ok
		default:
			return false
		}
	})
	if n := b.Feeds(); n != 0 {
		t.Fatalf("after its context ended the cache feeds %d watches, want 0", n)
	}
}

// TestFedWatchThatFallsBehindClosesAndResumes: a Watch fed by the cache
// whose receiver falls more than its backlog behind gets what was queued,
// then its channel closes, and resuming from the last event it got (a
// watch of its own now) brings the rest: no event lost, none twice.
func TestFedWatchThatFallsBehindClosesAndResumes(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "behind")
	b.SetFeedBacklog(3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// Each campaign into a new election: joined, then leader.begin; more
	// than the channel's buffer and the backlog hold.
	const elections = 60
	for i := range elections {
		campaignAs(t, b, fmt.Sprintf("e-%02d", i), "a", 10*time.Second)
	}
	var got []gateway.Event
	closed := false
	for !closed {
		select {
		case e, ok := <-ch:
			if !ok {
				closed = true
				break
			}
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("after %d events the fed watch neither sent more nor closed", len(got))
		}
	}
	if len(got) == 0 || len(got) >= 2*elections {
		t.Fatalf("the fed watch that fell behind delivered %d of %d events before closing", len(got), 2*elections)
	}
	if n := b.Feeds(); n != 0 {
		t.Fatalf("after it closed the cache feeds %d watches, want 0", n)
	}
	rest, err := b.Watch(ctx, "", got[len(got)-1].ID)
	if err != nil {
		t.Fatal(err)
	}
	for len(got) < 2*elections {
		got = append(got, nextEvent(t, rest))
	}
	for i, e := range got {
		want := gateway.EventCandidateJoined
		if i%2 == 1 {
			want = gateway.EventLeaderBegin
		}
		if e.Type != want || e.Election != fmt.Sprintf("e-%02d", i/2) {
			t.Fatalf("event %d is %s of %q (id %s), want %s of %q", i, e.Type, e.Election, e.ID, want, fmt.Sprintf("e-%02d", i/2))
		}
	}
}
