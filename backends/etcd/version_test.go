package etcd_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestCampaignOneWrite: once every replica is declared to run this
// version, a campaign into an empty election is one transaction that
// also acknowledges it; its term is that transaction's revision, which
// another replica derives alike, and the events are those of a campaign
// acknowledged after its write (candidate.joined, then leader.begin).
// Before the declaration, two transactions; behind a holder, one either
// way.
func TestCampaignOneWrite(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b, other := newBackend(t, ms, "one"), newBackend(t, ms, "one")
	ctx := context.Background()
	n, err := b.CountRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	campaign := func(election, id string) gateway.Status {
		t.Helper()
		n.Take()
		st, err := b.Campaign(ctx, election, gateway.Candidacy{ID: id, TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	txns := func() int { t.Helper(); return n.Take()["txn"] }
	if st := campaign("before", "a"); st.Candidate.State != gateway.StateLeader || txns() != 2 {
		t.Fatalf("before the declaration: %s", st.Candidate.State)
	}
	if err := b.DeclareUpgraded(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := other.Watch(ctx, "after", head)
	if err != nil {
		t.Fatal(err)
	}
	lead := campaign("after", "a")
	if got := txns(); lead.Candidate.State != gateway.StateLeader || got != 1 {
		t.Fatalf("after the declaration: %s in %d transactions, want leader in 1", lead.Candidate.State, got)
	}
	if st := campaign("after", "b"); st.Candidate.State != gateway.StateFollower || txns() != 1 {
		t.Fatalf("behind a holder: %s", st.Candidate.State)
	}
	e, err := other.Election(ctx, "after")
	if err != nil {
		t.Fatal(err)
	}
	if e.Leader == nil || e.Leader.ID != "a" || e.Term != lead.Term || e.Term == 0 {
		t.Fatalf("the other replica: leader %+v term %d, want a at term %d", e.Leader, e.Term, lead.Term)
	}
	var got []gateway.EventType
	for ev := range w {
		got = append(got, ev.Type)
		if ev.Type == gateway.EventLeaderBegin && (ev.Term != e.Term || ev.Candidate == nil || ev.Candidate.ID != "a") {
			t.Errorf("leader.begin of %+v at term %d, want a at %d", ev.Candidate, ev.Term, e.Term)
		}
		if len(got) == 3 {
			break
		}
	}
	want := []gateway.EventType{gateway.EventCandidateJoined, gateway.EventLeaderBegin, gateway.EventCandidateJoined}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestNewerDeclaredVersionRefused: a replica older than the version the
// prefix declares says so and serves nothing rather than misread.
func TestNewerDeclaredVersionRefused(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "newer")
	ctx := context.Background()
	if _, err := b.Client().Put(ctx, "newer/_elector/version", `{"min":3}`); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, time.Minute, "ping to answer unavailable", func() bool { return errors.Is(b.Ping(ctx), gateway.ErrUnavailable) })
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("campaign: %v, want unavailable", err)
	}
	if _, err := b.Client().Put(ctx, "newer/_elector/version", `{"min":2}`); err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, time.Minute, "ping at a version it runs", func() error { return b.Ping(ctx) })
}
