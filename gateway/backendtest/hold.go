package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// The hold of a failed leader's promise (gateway.Record.FailLeader): a
// leader that the gateway fails may have been told that it leads, and may
// act until a TTL after it sent its last heartbeat answered "leader"; no
// other candidate may be told that it leads before then.
//
// The suite has no clock of its own to move, so these tests assert the
// promise itself, on the test's monotonic clock: whenever a heartbeat
// answer, a read or the event stream shows a successor, the failed
// leader's deadline (a TTL after the test sent that heartbeat, which is
// no later than the backend's own) must have passed. A slow machine only
// makes observations later, which such an assertion never minds; a read
// that ends before the deadline must show the hold as handover_until.

// holdElection makes a fresh election whose candidates in error stay so
// for the test (a cooldown of a minute), and records its events.
func holdElection(t *testing.T, b gateway.Backend, prefix string) (string, *recorder) {
	t.Helper()
	e := name(prefix)
	if _, err := b.Configure(context.Background(), e, gateway.Settings{ErrorCooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return e, watch(t, b, e, "")
}

// failAfterLeaderHeartbeat heartbeats leader id (token th, TTL ttl),
// checks that the answer says it leads term, fails it, and returns its
// step-down deadline: a TTL after the heartbeat was sent.
func failAfterLeaderHeartbeat(t *testing.T, b gateway.Backend, e, id, th string, term uint64, ttl time.Duration) time.Time {
	t.Helper()
	ctx := context.Background()
	sent := time.Now()
	st, err := b.Heartbeat(ctx, e, id, th)
	if err != nil || st.Candidate.State != gateway.StateLeader || st.Term != term {
		t.Fatalf("heartbeat of %s: %+v, %v; want leader of term %d", id, st, err, term)
	}
	st, err = b.FailLeader(ctx, e, id, th, term, "leader.begin was not acknowledged")
	if err != nil || st.Candidate.State != gateway.StateError {
		t.Fatalf("FailLeader(%s, term %d): %+v, %v; want it in error", id, term, st, err)
	}
	return sent.Add(ttl)
}

// successorAfter waits until one of the candidates of tokens (id →
// token hash) is told by a heartbeat that it leads, and returns it and its
// term. Until then it heartbeats them and, unless failedToken is "", the
// failed leader (answered "error": were its heartbeats to extend the
// hold, nobody would ever lead and the wait would fail), reads the
// election, and fails the test if a successor shows before deadline (see
// the top of this file).
func successorAfter(t *testing.T, b gateway.Backend, e string, rec *recorder, deadline time.Time, failed, failedToken string, failedTerm uint64, tokens map[string]string) (string, uint64) {
	t.Helper()
	ctx := context.Background()
	early := func(what string) {
		t.Helper()
		if now := time.Now(); now.Before(deadline) {
			t.Fatalf("%s %s before the failed leader %s could still act (until %s)", what, deadline.Sub(now), failed, deadline.Format(time.RFC3339Nano))
		}
	}
	var (
		leader string
		term   uint64
	)
	eventually.True(t, 30*time.Second, "a successor of "+failed+" leads", func() bool {
		if st, err := b.Heartbeat(ctx, e, failed, failedToken); failedToken != "" && (err != nil || st.Candidate.State != gateway.StateError) {
			t.Fatalf("heartbeat of the failed leader %s: %+v, %v; want state error", failed, st, err)
		}
		for id, th := range tokens {
			st, err := b.Heartbeat(ctx, e, id, th)
			if err != nil {
				t.Fatalf("heartbeat of %s: %v", id, err)
			}
			if st.Candidate.State == gateway.StateLeader {
				early(id + " was told that it leads")
				if st.Term <= failedTerm {
					t.Fatalf("%s leads term %d, want a term after %d", id, st.Term, failedTerm)
				}
				leader, term = id, st.Term
				return true
			}
		}
		s := snapshot(t, b, e)
		if s.Leader != nil {
			early("a read showed " + s.Leader.ID + " leading")
		} else if time.Now().Before(deadline) && s.HandoverUntil.IsZero() {
			t.Fatalf("a read during the hold shows no leader and no handover_until: %+v", s)
		}
		for _, ev := range filter(rec.all(), e) {
			if ev.Type == gateway.EventLeaderBegin && ev.Term > failedTerm {
				early("leader.begin of " + ev.Candidate.ID + " was sent")
			}
		}
		return false
	})
	return leader, term
}

// testFailedLeaderHoldsTheNext: the next in line is told it leads only
// once the failed leader's promise has lapsed, then with a later term, and
// the events say why.
func testFailedLeaderHoldsTheNext(t *testing.T, b gateway.Backend) {
	e, rec := holdElection(t, b, "failhold")
	ttl := 3 * time.Second
	ta, a := campaign(t, b, e, "a", ttl)
	tb, _ := campaign(t, b, e, "b", 10*time.Second)
	deadline := failAfterLeaderHeartbeat(t, b, e, "a", ta, a.Term, ttl)
	leader, term := successorAfter(t, b, e, rec, deadline, "a", ta, a.Term, map[string]string{"b": tb})
	if leader != "b" {
		t.Fatalf("%s leads, want b, next in line", leader)
	}
	got := filter(rec.wait(t, eventWait, "leader.begin of b", func(ev []gateway.Event) bool {
		return has(filter(ev, e), gateway.EventLeaderBegin, "b", "")
	}), e)
	perr, end, begin := find(got, gateway.EventLeaderError, "a", ""), find(got, gateway.EventLeaderEnd, "a", gateway.ReasonError), find(got, gateway.EventLeaderBegin, "b", gateway.ReasonError)
	if perr < 0 || end < perr || begin < end || got[begin].Term != term {
		t.Fatalf("events %s: want leader.error(a), leader.end(a, error), then leader.begin(b, error) of term %d", describe(got), term)
	}
	if p := got[begin].Previous; p == nil || p.ID != "a" || p.Term != a.Term {
		t.Fatalf("leader.begin %+v: want previous a, term %d", got[begin], a.Term)
	}
	if err := CheckEvents(got); err != nil {
		t.Fatal(err)
	}
}

// testFailedLeaderHoldsANewcomerAndDeletion: with the line empty after the
// verdict (the failed leader resigned: a verdict is not the leader saying
// that it stopped, so its resignation ends nothing more), the election is
// not deleted while the hold runs, and a newcomer is told it leads only
// once the failed leader's promise has lapsed.
func testFailedLeaderHoldsANewcomerAndDeletion(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e, rec := holdElection(t, b, "failempty")
	ttl := 3 * time.Second
	ta, a := campaign(t, b, e, "a", ttl)
	deadline := failAfterLeaderHeartbeat(t, b, e, "a", ta, a.Term, ttl)
	resign(t, b, e, "a", ta)
	switch err := b.DeleteElection(ctx, e); {
	case errors.Is(err, gateway.ErrElectionNotEmpty):
	case err == nil:
		if time.Now().Before(deadline) {
			t.Fatalf("the election of a failed leader was deleted while its promise held")
		}
	default:
		t.Fatalf("delete during the hold: %v", err)
	}
	tc, st := campaign(t, b, e, "c", 10*time.Second)
	if st.Candidate.State == gateway.StateLeader && time.Now().Before(deadline) {
		t.Fatalf("newcomer c was told that it leads while the failed leader's promise held: %+v", st)
	}
	if leader, _ := successorAfter(t, b, e, rec, deadline, "a", "", a.Term, map[string]string{"c": tc}); leader != "c" {
		t.Fatalf("%s leads, want c", leader)
	}
}

// testFailedLeaderHoldsATransferTarget: a transfer pending when the leader
// is failed hands over to nobody before the failed leader's promise has
// lapsed; then its target leads, ahead of the follower that stood before
// it.
func testFailedLeaderHoldsATransferTarget(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e, rec := holdElection(t, b, "failtransfer")
	ttl := 3 * time.Second
	ta, a := campaign(t, b, e, "a", ttl)
	tb, _ := campaign(t, b, e, "b", 10*time.Second)
	tc, _ := campaign(t, b, e, "c", 10*time.Second)
	sent := time.Now()
	if st, err := b.Heartbeat(ctx, e, "a", ta); err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of a: %+v, %v", st, err)
	}
	if _, err := b.Transfer(ctx, e, "c", ""); err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	if _, err := b.FailLeader(ctx, e, "a", ta, a.Term, "leader.begin was not acknowledged"); err != nil {
		t.Fatalf("FailLeader(a): %v", err)
	}
	leader, _ := successorAfter(t, b, e, rec, sent.Add(ttl), "a", ta, a.Term, map[string]string{"b": tb, "c": tc})
	if leader != "c" {
		t.Fatalf("%s leads, want c, the target", leader)
	}
}
