package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// campaignCall marks the context of the campaign under test, so that
// earlyRevoker tells its grants from those of the lease pool's filler.
type campaignCall struct{}

// earlyRevoker is a clientv3.Lease that revokes the leases it grants for
// the campaign under test, the first budget of them, before answering the
// grant, as an etcd member resuming from a freeze revokes leases early.
type earlyRevoker struct {
	clientv3.Lease
	budget atomic.Int64 // grants still to revoke
	grants atomic.Int64 // grants for the campaign under test
}

func (l *earlyRevoker) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g, err := l.Lease.Grant(ctx, ttl)
	if err != nil || ctx.Value(campaignCall{}) == nil {
		return g, err
	}
	l.grants.Add(1)
	if l.budget.Add(-1) >= 0 {
		if _, err := l.Lease.Revoke(ctx, g.ID); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// TestCampaignOnLeasesRevokedEarly: a campaign whose lease etcd ends
// before its transaction takes a new one; once etcd has ended each of the
// three it tries, it is answered unavailable (a 503 the caller retries),
// never "candidate not found" (a 404 that would tell the caller its
// candidacy is gone while it campaigns), and nothing is written.
func TestCampaignOnLeasesRevokedEarly(t *testing.T) {
	b := newBackend(t, startCluster(t, 1), "early")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := &earlyRevoker{}
	if err := b.WrapLease(ctx, func(lease clientv3.Lease) clientv3.Lease { l.Lease = lease; return l }); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		revoked    int64 // leases etcd ends early
		wantGrants int64
		wantErr    error // nil: the campaign leads
	}{
		{revoked: 1, wantGrants: 2},
		{revoked: 2, wantGrants: 3},
		{revoked: 1000, wantGrants: 3, wantErr: gateway.ErrUnavailable},
	} {
		t.Run(fmt.Sprintf("revoked=%d", c.revoked), func(t *testing.T) {
			l.budget.Store(c.revoked)
			l.grants.Store(0)
			// A TTL of its own: the pool has no lease of it yet, so the
			// campaign grants its first lease itself.
			election := fmt.Sprintf("e%d", i)
			cctx := context.WithValue(ctx, campaignCall{}, true)
			st, err := b.Campaign(cctx, election, gateway.Candidacy{ID: "a", TTL: time.Duration(10+i) * time.Second,
				TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
			if got := l.grants.Load(); got != c.wantGrants {
				t.Errorf("%d grants for the campaign, want %d", got, c.wantGrants)
			}
			if c.wantErr == nil {
				if err != nil || st.Candidate.State != gateway.StateLeader {
					t.Fatalf("campaign: %+v, %v; want it to lead", st.Candidate, err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) || errors.Is(err, gateway.ErrCandidateNotFound) {
				t.Fatalf("campaign: %v; want %v and not ErrCandidateNotFound", err, c.wantErr)
			}
			if el, err := b.Election(ctx, election); !errors.Is(err, gateway.ErrElectionNotFound) {
				t.Fatalf("after the refused campaign: election %+v, %v; want none", el, err)
			}
		})
	}
}

// TestCampaignWhoseAnswerIsLost: a campaign's transaction applies but its
// answer does not come (a request timeout after etcd applied it). The
// campaign asks etcd, finds its candidacy and answers as if the answer had
// come: the candidacy stays, and its token works. A transaction that did
// not apply and got no answer either still fails as unavailable, its lease
// revoked, and the candidate can campaign again at once.
func TestCampaignWhoseAnswerIsLost(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	tests := []struct {
		name   string
		commit func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error)
		landed bool
	}{
		{"Applied", lostAnswer, true},
		{"NotApplied", func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
			k.fired.Store(true)
			return nil, context.DeadlineExceeded // never sent
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, ms, "lost-campaign-"+tt.name)
			lost := &hookKV{key: "/_elector/ids/", commit: tt.commit}
			if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { lost.KV = kv; return lost }); err != nil {
				t.Fatal(err)
			}
			run(t, b)
			th := gateway.HashToken(gateway.NewToken())
			st, err := b.Campaign(ctx, "lost", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings())
			if !lost.fired.Load() {
				t.Fatal("the campaign's transaction was not the one that lost its answer")
			}
			if !tt.landed {
				if !errors.Is(err, gateway.ErrUnavailable) {
					t.Fatalf("campaign: %+v, %v; want ErrUnavailable", st, err)
				}
				th = gateway.HashToken(gateway.NewToken())
				if st, err = b.Campaign(ctx, "lost", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
					t.Fatalf("the campaign again: %v", err)
				}
			}
			if err != nil || st.Candidate.State != gateway.StateLeader {
				t.Fatalf("campaign: %+v, %v; want a leading", st, err)
			}
			if _, err := b.Heartbeat(ctx, "lost", "a", th); err != nil {
				t.Fatalf("heartbeat with the campaign's token: %v", err)
			}
		})
	}
}

// TestResignWhoseAnswerIsLost: a resignation applies but its answer does
// not come. Asked again whether the candidacy is there, etcd says it is
// gone, so the resignation succeeds, as a retry could not (it would be
// told that the candidate is not found).
func TestResignWhoseAnswerIsLost(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	b := newBackend(t, ms, "lost-resign")
	lost := &hookKV{key: "/_elector/mark/", commit: lostAnswer}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { lost.KV = kv; return lost }); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	th := campaignAs(t, b, "lost", "a", 10*time.Second)
	campaignAs(t, b, "lost", "b", 10*time.Second)
	if err := b.Resign(ctx, "lost", "a", th); err != nil {
		t.Fatalf("resign: %v", err)
	}
	if !lost.fired.Load() {
		t.Fatal("the resignation's transaction did not lose its answer")
	}
	if _, err := b.Heartbeat(ctx, "lost", "a", th); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Fatalf("heartbeat after the resignation: %v, want ErrCandidateNotFound", err)
	}
}
