package backendtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Priorities while nobody leads, and preemptions answered at once: cases
// the model test (AgreesWithTheRecord) found etcd disagreeing with
// gateway.Record on, kept here as plain tests.

// testPriorityOrdersALineNobodyLeads: while a handover delay holds the
// next leadership back, the line is a line of followers, in priority
// order like any: a newcomer of higher priority stands ahead of the
// candidate that was first.
func testPriorityOrdersALineNobodyLeads(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("prioheld")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, HandoverDelay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	campaignPriority(t, b, e, "l", time.Second, 0) // leads, and expires
	thx, _ := campaignPriority(t, b, e, "x", 10*time.Second, 0)
	keepAlive(t, b, e, "x", thx, 10*time.Second)
	rec.wait(t, 10*time.Second, "l expires", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderEnd, "l", gateway.ReasonExpired)
	})
	thy, st := campaignPriority(t, b, e, "y", 10*time.Second, 2)
	keepAlive(t, b, e, "y", thy, 10*time.Second)
	if st.Position != 0 || st.Leader != nil {
		t.Fatalf("y (priority 2) during the delay: position %d, leader %+v; want 0, ahead of x (priority 0), and no leader", st.Position, st.Leader)
	}
	if s := snapshot(t, b, e); !slices.Equal(ids(s.Candidates), []string{"y:follower", "x:follower"}) || s.Leader != nil {
		t.Fatalf("line during the delay %v, leader %+v; want y, then x, and no leader", ids(s.Candidates), s.Leader)
	}
}

// testHigherPriorityRejoinsAheadDuringAHold: a failed leader of higher
// priority whose cooldown ends while its own promise still holds the next
// leadership back rejoins ahead of the follower that was next, and leads
// once the hold ends.
func testHigherPriorityRejoinsAheadDuringAHold(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("priohold")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	// The hold lasts about a's TTL, the cooldown a second (two on etcd):
	// a rejoins during the hold unless the machine stalls for seconds.
	ttl := 6 * time.Second
	tha, a := campaignPriority(t, b, e, "a", ttl, 1)
	keepAlive(t, b, e, "a", tha, ttl)
	thb, _ := campaignPriority(t, b, e, "b", 10*time.Second, 0)
	keepAlive(t, b, e, "b", thb, 10*time.Second)
	if _, err := b.FailLeader(ctx, e, "a", tha, a.Term, "leader.begin was not acknowledged"); err != nil {
		t.Fatalf("FailLeader(a): %v", err)
	}
	got := rec.wait(t, 30*time.Second, "a leadership after a's", func(ev []gateway.Event) bool {
		return slices.ContainsFunc(ev, func(x gateway.Event) bool { return x.Type == gateway.EventLeaderBegin && x.Term > a.Term })
	})
	begin := slices.IndexFunc(got, func(x gateway.Event) bool { return x.Type == gateway.EventLeaderBegin && x.Term > a.Term })
	rejoined := find(got, gateway.EventCandidateJoined, "a", gateway.ReasonRejoined)
	switch {
	case rejoined >= 0 && rejoined < begin && got[begin].Candidate.ID != "a":
		t.Fatalf("events %s: a (priority 1) rejoined while nobody led, yet %s (priority 0) leads next", describe(got), got[begin].Candidate.ID)
	case rejoined < 0 || rejoined > begin:
		t.Logf("the hold ended before a's cooldown (a slow machine): %s", describe(got))
	}
}

// testPreemptionMovesToAHigherPriority: a pending preemption moves to a
// follower of still higher priority that arrives (one leader.transfer, no
// leader.transfer_cancelled), which then leads when the leader hands over.
func testPreemptionMovesToAHigherPriority(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("preempt-again")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Preempt: true}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	tha, a := campaignPriority(t, b, e, "a", 10*time.Second, 0)
	campaignPriority(t, b, e, "b", 10*time.Second, 1)
	refusedForTransfer(t, b, e, "a", tha, "b", gateway.ReasonPreempted)
	_, st := campaignPriority(t, b, e, "c", 10*time.Second, 2)
	if st.Transfer == nil || st.Transfer.To != "c" || st.Transfer.Reason != gateway.ReasonPreempted {
		t.Fatalf("after c (priority 2) campaigned: transfer %+v, want the preemption moved to c", st.Transfer)
	}
	refusedForTransfer(t, b, e, "a", tha, "c", gateway.ReasonPreempted)
	hs, err := b.Handover(ctx, e, "a", tha)
	if err != nil {
		t.Fatalf("handover: %v", err)
	}
	if hs.Leader == nil || hs.Leader.ID != "c" || !nextTerm(hs.Term, a.Term) {
		t.Fatalf("after handover: leader %+v term %d, want c after term %d", hs.Leader, hs.Term, a.Term)
	}
	got := filter(rec.wait(t, eventWait, "c begins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "c", "")
	}), e)
	if find(got, gateway.EventLeaderTransfer, "b", gateway.ReasonPreempted) < 0 || find(got, gateway.EventLeaderTransfer, "c", gateway.ReasonPreempted) < 0 || has(got, gateway.EventLeaderBegin, "b", "") {
		t.Fatalf("events %s: want a preemption to b, then to c, and c leading, never b", describe(got))
	}
	// Moving the preemption is a new leader.transfer, not a cancellation:
	// b neither left nor was cancelled by anyone.
	if has(got, gateway.EventTransferCancelled, "b", "") {
		t.Fatalf("events %s: the preemption moved from b to c, yet b's was reported cancelled", describe(got))
	}
	if err := CheckEvents(got); err != nil {
		t.Fatal(err)
	}
}

// testPreemptionIsInTheAnswer: a preemption that a change of settings or
// a handover starts is in that request's answer, as it is in the
// transition that caused it.
func testPreemptionIsInTheAnswer(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("preempt-answer")
	campaignPriority(t, b, e, "a", 10*time.Second, 0)
	campaignPriority(t, b, e, "b", 10*time.Second, 3)
	s, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Preempt: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Transfer == nil || s.Transfer.To != "b" || s.Transfer.Reason != gateway.ReasonPreempted {
		t.Fatalf("turning preempt on answered transfer %+v, want the preemption to b", s.Transfer)
	}

	// A handover to a target of lower priority than a follower: the
	// target leads, and is asked at once to hand over in turn.
	p := name("preempt-handover")
	thp, _ := campaignPriority(t, b, p, "a", 10*time.Second, 0)
	campaignPriority(t, b, p, "b", 10*time.Second, 0)
	campaignPriority(t, b, p, "c", 10*time.Second, 5)
	if _, err := b.Transfer(ctx, p, "b", ""); err != nil {
		t.Fatalf("transfer to b: %v", err)
	}
	if _, err := b.Configure(ctx, p, gateway.Settings{ErrorCooldown: time.Second, Preempt: true}); err != nil {
		t.Fatal(err)
	}
	st, err := b.Handover(ctx, p, "a", thp)
	if err != nil {
		t.Fatalf("handover: %v", err)
	}
	if st.Leader == nil || st.Leader.ID != "b" || st.Transfer == nil || st.Transfer.To != "c" || st.Transfer.Reason != gateway.ReasonPreempted {
		t.Fatalf("handover answered leader %+v, transfer %+v; want b leading and preempted by c", st.Leader, st.Transfer)
	}
}

// testHandoverKeepsTheFollowersInOrder: a handover to a follower that
// stands behind others leaves the others in the order they stood, the
// old leader behind them: only the target moves.
func testHandoverKeepsTheFollowersInOrder(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("handover-order")
	tha, _ := campaignPriority(t, b, e, "a", time.Minute, 0)
	for _, id := range []string{"x", "y", "t", "z"} {
		campaignPriority(t, b, e, id, time.Minute, 0)
	}
	if _, err := b.Transfer(ctx, e, "t", ""); err != nil {
		t.Fatalf("transfer to t: %v", err)
	}
	if _, err := b.Handover(ctx, e, "a", tha); err != nil {
		t.Fatalf("handover: %v", err)
	}
	want := []string{"t:leader", "x:follower", "y:follower", "z:follower", "a:follower"}
	if s := snapshot(t, b, e); !slices.Equal(ids(s.Candidates), want) {
		t.Fatalf("line after the handover %v, want %v", ids(s.Candidates), want)
	}
}

// testLoweredHolderStaysAheadOfItsPriority: a holder whose holdership a
// lower holders setting ended goes ahead of the followers of its
// priority, behind those of higher priority.
func testLoweredHolderStaysAheadOfItsPriority(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("lowered-order")
	campaignPriority(t, b, e, "a", time.Minute, 0)
	campaignPriority(t, b, e, "c", time.Minute, 0)
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	campaignPriority(t, b, e, "b", time.Minute, 1)
	campaignPriority(t, b, e, "d", time.Minute, 0)
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: 1}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:leader", "b:follower", "c:follower", "d:follower"}
	if s := snapshot(t, b, e); !slices.Equal(ids(s.Candidates), want) {
		t.Fatalf("line after lowering the holders %v, want %v", ids(s.Candidates), want)
	}
}

// testLoweringKeepsATransferWaiting: a pending transfer of a holdership
// that a lower holders setting ends stays pending, as after any other end
// of that holdership: its target is next in line and takes the next slot
// that frees (once the ended holdership's hold is over).
func testLoweringKeepsATransferWaiting(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("lowered-transfer")
	rec := watch(t, b, e, "")
	tha, _ := campaignPriority(t, b, e, "a", time.Minute, 0)
	the, _ := campaignPriority(t, b, e, "e", time.Second, 0)
	keepAlive(t, b, e, "e", the, time.Second)
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	campaignPriority(t, b, e, "c", time.Minute, 0)
	campaignPriority(t, b, e, "t", time.Minute, 0)
	if _, err := b.Transfer(ctx, e, "t", the); err != nil { // e asks
		t.Fatalf("transfer from e to t: %v", err)
	}
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: 1}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a:leader", "t:follower", "e:follower", "c:follower"}
	if s := snapshot(t, b, e); !slices.Equal(ids(s.Candidates), want) || s.Transfer == nil || s.Transfer.To != "t" {
		t.Fatalf("after lowering the holders: line %v, transfer %+v; want %v and the transfer to t pending", ids(s.Candidates), s.Transfer, want)
	}
	if err := b.Resign(ctx, e, "a", tha); err != nil {
		t.Fatal(err)
	}
	got := filter(rec.wait(t, eventWait, "t begins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "t", "")
	}), e)
	if has(got, gateway.EventTransferCancelled, "t", "") || has(got, gateway.EventLeaderBegin, "c", "") {
		t.Fatalf("events %s: want the transfer to t kept, and t leading next", describe(got))
	}
}

// testResignWithATransferPending: a leader that resigns or reports an
// error while a transfer of its leadership is pending, instead of handing
// over, leaves the slot at once to the transfer's target, ahead of the
// follower that stood before it (it stopped acting before it asked), and
// the transfer completes rather than being cancelled.
func testResignWithATransferPending(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	for _, how := range []string{"resigns", "reports an error"} {
		e := name("ended-transfer")
		rec := watch(t, b, e, "")
		tha, _ := campaignPriority(t, b, e, "a", time.Second, 0)
		thx, _ := campaignPriority(t, b, e, "x", 10*time.Second, 0)
		tht, _ := campaignPriority(t, b, e, "t", 10*time.Second, 0)
		keepAlive(t, b, e, "x", thx, 10*time.Second)
		keepAlive(t, b, e, "t", tht, 10*time.Second)
		if _, err := b.Transfer(ctx, e, "t", ""); err != nil {
			t.Fatalf("transfer to t: %v", err)
		}
		var err error
		if how == "resigns" {
			err = b.Resign(ctx, e, "a", tha)
		} else {
			_, err = b.ReportError(ctx, e, "a", tha, "stepping down")
		}
		if err != nil {
			t.Fatalf("a %s: %v", how, err)
		}
		want := []string{"t:leader", "x:follower"}
		if how != "resigns" {
			want = append(want, "a:error")
		}
		if s := snapshot(t, b, e); !slices.Equal(ids(s.Candidates), want) || s.Transfer != nil {
			t.Fatalf("a %s: %v, transfer %+v; want %v and no transfer", how, ids(s.Candidates), s.Transfer, want)
		}
		got := filter(rec.wait(t, eventWait, "t begins", func(ev []gateway.Event) bool {
			return has(ev, gateway.EventLeaderBegin, "t", "")
		}), e)
		if has(got, gateway.EventTransferCancelled, "t", "") {
			t.Fatalf("a %s: events %s; want the transfer completed, not cancelled", how, describe(got))
		}
	}
}
