package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// A replica whose cache has not yet seen the lead record name a candidate
// (another replica handed over to it a moment ago) must not remove that
// candidate without handing over: the leadership would be left pending as
// if it had expired, the handover delay would hold the next leader back
// although the leader resigned, and the next leader.begin would say
// "expired".
func TestRemoveFromStaleViewDoesNotSkipHandover(t *testing.T) {
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "stale")
	ctx := context.Background()
	for _, reason := range []string{gateway.ReasonResigned, gateway.ReasonError} {
		t.Run(reason, func(t *testing.T) {
			e := "stale-" + reason
			if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute, HandoverDelay: time.Hour}); err != nil {
				t.Fatal(err)
			}
			thA, st := candidate(t, b, e, "a-"+reason, 30*time.Second)
			if st.Candidate.State != gateway.StateLeader {
				t.Fatalf("a: %+v, want leader", st)
			}
			thX, _ := candidate(t, b, e, "x-"+reason, 30*time.Second)
			thY, _ := candidate(t, b, e, "y-"+reason, 30*time.Second)

			// x's removal computed while a leads, committed after a handed over to x.
			commit, err := b.PrepareRemove(ctx, e, "x-"+reason, thX, reason)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Resign(ctx, e, "a-"+reason, thA); err != nil {
				t.Fatal(err)
			}
			el, err := b.Election(ctx, e)
			if err != nil || el.Leader == nil || el.Leader.ID != "x-"+reason {
				t.Fatalf("after a resigned: leader %+v, %v; want x", el.Leader, err)
			}
			ok, err := commit()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				el, _ := b.Election(ctx, e)
				t.Fatalf("a removal computed before x led was applied after it did: leader %+v, handover until %v", el.Leader, el.HandoverUntil)
			}
			// The real call looks again and hands over to y at once.
			if reason == gateway.ReasonError {
				_, err = b.ReportError(ctx, e, "x-"+reason, thX, "boom")
			} else {
				err = b.Resign(ctx, e, "x-"+reason, thX)
			}
			if err != nil {
				t.Fatal(err)
			}
			el, err = b.Election(ctx, e)
			if err != nil || el.Leader == nil || el.Leader.ID != "y-"+reason {
				t.Fatalf("after x left: leader %+v, handover until %v, %v; want y at once", el.Leader, el.HandoverUntil, err)
			}
			if err := b.Resign(ctx, e, "y-"+reason, thY); err != nil {
				t.Fatal(err)
			}
		})
	}
}
