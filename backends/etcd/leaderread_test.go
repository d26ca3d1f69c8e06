package etcd_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestElectionLeaderAgreesWithSnapshot: ElectionLeader is Election
// without the candidates, field for field, through a campaign, a pending
// transfer and its handover, a holder in error, two holders, a holder's
// slot held back (its lease revoked with a handover delay set: the
// promise and the delay show in HandoverUntil), and nobody holding. Both
// clocks stand still, so that the two reads compute HandoverUntil alike.
func TestElectionLeaderAgreesWithSnapshot(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	c := newFakeClock()
	b := newClocked(t, ms, "lr", c)
	wall := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b.SetClock(func() time.Time { return wall })
	ctx := context.Background()
	const e = "agree"
	if _, err := b.ElectionLeader(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("leader of no election: %v, want ErrElectionNotFound", err)
	}
	agree := func(step string, leader ...string) gateway.Election {
		t.Helper()
		var got, want gateway.Election
		// Both at one revision: the replica may write in between (the
		// record of an early revocation), which moves the cursor.
		for range 100 {
			var err error
			if want, err = b.Election(ctx, e); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			want.Candidates = nil
			if got, err = b.ElectionLeader(ctx, e); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if got.Cursor == want.Cursor {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", step, got, want)
		}
		var ids []string
		if len(got.Holders) > 0 {
			for _, h := range got.Holders {
				ids = append(ids, h.ID)
			}
		} else if got.Leader != nil {
			ids = []string{got.Leader.ID}
		}
		if !reflect.DeepEqual(ids, leader) {
			t.Fatalf("%s: holders %v, want %v", step, ids, leader)
		}
		return got
	}
	tok := map[string]string{}
	for _, id := range []string{"a", "b", "c", "d"} {
		tok[id] = gateway.HashToken(gateway.NewToken())
		if _, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 20 * time.Second, TokenHash: tok[id]}, gateway.DefaultSettings()); err != nil {
			t.Fatal(err)
		}
	}
	agree("a leads", "a")
	if _, err := b.Transfer(ctx, e, "c", ""); err != nil {
		t.Fatal(err)
	}
	if got := agree("transfer to c pending", "a"); got.Transfer == nil || got.Transfer.To != "c" {
		t.Fatalf("transfer %+v, want one to c", got.Transfer)
	}
	if _, err := b.Handover(ctx, e, "a", tok["a"]); err != nil {
		t.Fatal(err)
	}
	agree("c leads after the handover", "c")
	if _, err := b.ReportError(ctx, e, "c", tok["c"], "begin handler failed"); err != nil {
		t.Fatal(err)
	}
	agree("c in error, b next (the followers kept their order behind the target)", "b")
	s := gateway.DefaultSettings()
	s.Holders, s.HandoverDelay = 2, 30*time.Second
	if _, err := b.Configure(ctx, e, s); err != nil {
		t.Fatal(err)
	}
	agree("two holders", "b", "d")
	revokeLease(t, b, leaseOf(t, b, "lr", e, "d"))
	if got := agree("d's lease revoked: its slot held back", "b"); got.HandoverUntil.IsZero() {
		t.Fatal("no handover_until while d's slot is held back")
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := b.Resign(ctx, e, id, tok[id]); err != nil {
			t.Fatal(err)
		}
	}
	agree("nobody in line")
}

// TestCampaignRoundTrips counts what a campaign asks of etcd, through the
// gateway with its limits on as elector serve runs it: into a fresh
// election a lease grant and two transactions (the candidacy, then its
// acknowledgement, sent at once from what the first proved), no read
// index (the limits count from the cache); behind a holder a grant and
// one transaction. Once the pool holds leases of the TTL, no grant: a
// pooled lease older than a moment is kept alive beside the transaction
// instead (a keep-alive is no raft write).
func TestCampaignRoundTrips(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "rt")
	ctx := context.Background()
	n, err := b.CountRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(b, gateway.Config{MaxCandidates: 1000, MaxElections: 100_000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	const ttl = 20 * time.Second
	n.Take()
	if _, _, err := g.Campaign(ctx, "first", gateway.CampaignRequest{ID: "a", TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	if got := n.Take(); got["grant"] < 1 || got["txn"] != 2 {
		t.Errorf("first campaign of its TTL: requests %v, want a grant of its own and 2 transactions", got)
	}
	eventually.True(t, time.Minute, "16 pooled leases", func() bool { return b.PooledLeases(ttl) == 16 })
	b.AgePooledLeases(time.Second)
	tests := []struct {
		name, election, id string
		leads              bool
		want               map[string]int
	}{
		{"fresh election", "fresh", "a", true, map[string]int{"keepalive": 1, "txn": 2}},
		{"behind a holder", "fresh", "b", false, map[string]int{"keepalive": 1, "txn": 1}},
		{"another fresh election", "other", "a", true, map[string]int{"keepalive": 1, "txn": 2}},
	}
	for _, tt := range tests {
		n.Take()
		start := time.Now()
		st, _, err := g.Campaign(ctx, tt.election, gateway.CampaignRequest{ID: tt.id, TTL: ttl})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if leads := st.Candidate.State == gateway.StateLeader; leads != tt.leads {
			t.Fatalf("%s: state %s, want leading %v", tt.name, st.Candidate.State, tt.leads)
		}
		if got := n.Take(); !maps.Equal(got, tt.want) {
			t.Errorf("%s: requests %v, want %v", tt.name, got, tt.want)
		}
		// Kept alive by the campaign: its life counts from then, not from
		// the pool's grant a second earlier.
		if exp := st.Candidate.ExpiresAt; exp.Before(start.Add(ttl)) {
			t.Errorf("%s: expires at %s, before a TTL from the campaign (%s)", tt.name, exp, start.Add(ttl))
		}
	}
	if got, want := b.PooledLeases(ttl), 13; got != want {
		t.Errorf("the pool holds %d leases after 3 campaigns took from it, want %d", got, want)
	}
}

// TestCloseRevokesPooledLeases: the leases granted ahead of campaigns do
// not outlive the backend; its candidates' leases do (they expire at
// their TTL).
func TestCloseRevokesPooledLeases(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "pool")
	ctx := context.Background()
	const ttl = 30 * time.Second
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", TTL: ttl, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, time.Minute, "16 pooled leases", func() bool { return b.PooledLeases(ttl) == 16 })
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints(ms), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	count := func() int {
		t.Helper()
		l, err := cli.Leases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Leases)
	}
	if got := count(); got < 17 {
		t.Fatalf("%d leases in etcd before Close, want the candidate's and 16 pooled", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 1 {
		t.Errorf("%d leases in etcd after Close, want 1 (the candidate's)", got)
	}
}

var _ gateway.LeaderReader = (*etcd.Backend)(nil)
