package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// earlyRevoker is a clientv3.Lease that, while on, revokes every lease it
// grants before answering the grant, as an etcd member resuming from a
// freeze revokes leases early.
type earlyRevoker struct {
	clientv3.Lease
	on      atomic.Bool
	revoked atomic.Int64
}

func (l *earlyRevoker) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g, err := l.Lease.Grant(ctx, ttl)
	if err == nil && l.on.Load() {
		if _, err := l.Lease.Revoke(ctx, g.ID); err != nil {
			return nil, err
		}
		l.revoked.Add(1)
	}
	return g, err
}

// TestCampaignOnLeasesRevokedEarlyIsUnavailable: a campaign whose leases
// etcd ends before its transaction, pooled or granted for it, is answered
// unavailable (a 503 the caller retries), never "candidate not found"
// (a 404 that would tell it to campaign again, which it is doing), and
// leaves nothing in the election; once etcd keeps its leases again, the
// next campaign leads.
func TestCampaignOnLeasesRevokedEarlyIsUnavailable(t *testing.T) {
	b := newBackend(t, startCluster(t, 1), "early")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := &earlyRevoker{}
	if err := b.WrapLease(ctx, func(lease clientv3.Lease) clientv3.Lease { l.Lease = lease; return l }); err != nil {
		t.Fatal(err)
	}
	campaign := func(id string) (gateway.Status, error) {
		return b.Campaign(ctx, "e", gateway.Candidacy{ID: id, TTL: 10 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
	}
	l.on.Store(true)
	_, err := campaign("a")
	if !errors.Is(err, gateway.ErrUnavailable) || errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Fatalf("campaign on leases revoked early: %v, want ErrUnavailable and not ErrCandidateNotFound", err)
	}
	if n := l.revoked.Load(); n < 2 {
		t.Fatalf("%d leases revoked early, want the campaign to try a new grant after the first", n)
	}
	// Nothing was written: not the candidacy, not the election.
	if el, err := b.Election(ctx, "e"); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("after the refused campaign: election %+v, %v; want none", el, err)
	}
	l.on.Store(false)
	st, err := campaign("a")
	if err != nil {
		t.Fatalf("campaign once etcd keeps its leases: %v", err)
	}
	if st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign once etcd keeps its leases: %s, want leader", st.Candidate.State)
	}
}
