package etcd_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestFailedLeaderIsSucceededOnlyAfterItsPromise: right after a heartbeat
// answered "leader", the gateway fails the leader (its begin webhook went
// unacknowledged). No replica acknowledges the next candidate until the
// promise of that heartbeat has lapsed on its clock (a replica started
// later counting from its load), whatever the failed leader's heartbeats
// say meanwhile (they answer "error" and write no promise); then the next
// leads, after the events of an error.
func TestFailedLeaderIsSucceededOnlyAfterItsPromise(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	fc := newFakeClock()
	const prefix, e, ttl = "failed", "verdict", 10 * time.Second
	b1, b2 := newClocked(t, ms, prefix, fc), newClocked(t, ms, prefix, fc)
	stop1 := runStoppable(t, b1) // b2 runs no reconciler: it only serves
	ctx := context.Background()
	events := follow(t, b2, e)
	if _, err := b1.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}

	thl := campaignAs(t, b1, e, "l", ttl)
	thf := campaignAs(t, b1, e, "f", ttl)
	keepBeating(t, b1, e, "f", thf) // leases live on in real time; only the promise clock is fake
	st, err := b1.Heartbeat(ctx, e, "l", thl)
	if err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of l: %+v, %v; want it leading", st, err)
	}
	term := st.Term
	if st, err := b2.FailLeader(ctx, e, "l", thl, term, "leader.begin was not acknowledged"); err != nil || st.Candidate.State != gateway.StateError {
		t.Fatalf("FailLeader(l): %+v, %v", st, err)
	}
	now, err := b2.Client().Get(ctx, prefix+"/_elector/lead/"+e) // a revision at or after the verdict's
	if err != nil {
		t.Fatal(err)
	}
	rev := now.Header.Revision
	beatFailed := func() {
		t.Helper()
		for i, b := range []*etcd.Backend{b1, b2} {
			if st, err := b.Heartbeat(ctx, e, "l", thl); err != nil || st.Candidate.State != gateway.StateError {
				t.Fatalf("replica %d: heartbeat of the failed leader: %+v, %v; want error", i, st, err)
			}
		}
	}
	beatFailed()
	reconciled(t, b1, rev, fc)
	noLeaderBut(t, []*etcd.Backend{b1, b2}, e, "f", thf)
	if s, err := b2.Election(ctx, e); err != nil || !s.HandoverUntil.After(time.Now()) {
		t.Fatalf("nobody leads: handover_until %v, %v; want when the promise lapses", s.HandoverUntil, err)
	}

	// A replica started half a TTL on counts from its load.
	stop1()
	fc.Advance(ttl / 2)
	beatFailed()
	b3 := newClocked(t, ms, prefix, fc)
	runStoppable(t, b3)
	reconciled(t, b3, rev, fc)
	noLeaderBut(t, []*etcd.Backend{b1, b2, b3}, e, "f", thf)
	fc.Advance(ttl / 2) // lapsed for b1 (stopped) and b2, which held the promise, not for b3
	beatFailed()
	reconciled(t, b3, rev, fc)
	if s, err := b3.Election(ctx, e); err != nil || s.Leader != nil {
		t.Fatalf("replica 3 half a TTL after its load: leader %+v, %v; want none", s.Leader, err)
	}
	if st, err := b3.Heartbeat(ctx, e, "f", thf); err != nil || st.Candidate.State != gateway.StateFollower {
		t.Fatalf("replica 3: heartbeat of f: %+v, %v; want a follower", st, err)
	}

	fc.Advance(ttl / 2)
	eventually.True(t, 10*time.Second, "f leads once the promise lapsed", func() bool {
		s, err := b3.Election(ctx, e)
		return err == nil && s.Leader != nil && s.Leader.ID == "f"
	})
	if st, err := b3.Heartbeat(ctx, e, "f", thf); err != nil || st.Candidate.State != gateway.StateLeader || st.Term <= term {
		t.Fatalf("heartbeat of f after the promise lapsed: %+v, %v; want it leading a term after %d", st, err, term)
	}
	var got []gateway.Event
	eventually.True(t, 10*time.Second, "f's leader.begin in the stream", func() bool {
		got = events()
		return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "f" })
	})
	perr := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderError && ev.Candidate.ID == "l" })
	end := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderEnd && ev.Candidate.ID == "l" })
	begin := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "f" })
	if perr < 0 || end < perr || begin < end || got[end].Reason != gateway.ReasonError || got[begin].Reason != gateway.ReasonError ||
		got[begin].Previous == nil || got[begin].Previous.ID != "l" || got[begin].Previous.Term != term {
		t.Fatalf("events %v: want l's leader.error and leader.end (error), then f's leader.begin after l's error", got)
	}
}
