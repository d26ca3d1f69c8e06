package backendtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// transferTests are the subtests of transfers, priorities and preempt
// (gateway.Transferer).
var transferTests = []struct {
	name string
	fn   func(t *testing.T, b gateway.Backend)
}{
	{"TransferWithCooperatingLeaderHandsOverAtOnce", testTransferCooperating},
	{"TransferWithSilentLeaderWaitsForItsTTL", testTransferSilent},
	{"TransferToCandidateThatLeavesIsCancelled", testTransferCancelled},
	{"CancelledTransferLeavesTheLeaderLeading", testCancelTransfer},
	{"CancelStartsThePreemptionItHeldBack", testCancelStartsThePreemptionItHeldBack},
	{"CancelLetsTheTargetTakeAFreeSlot", testCancelLetsTheTargetTakeAFreeSlot},
	{"CancelRacingHandoverMakesOneLeader", testCancelRacingHandover},
	{"PrioritiesOrderTheLine", testPrioritiesOrderTheLine},
	{"PreemptHandsOverThroughTransfer", testPreempt},
	{"FailedLeaderHoldsATransferTarget", testFailedLeaderHoldsATransferTarget},
	{"PriorityOrdersALineNobodyLeads", testPriorityOrdersALineNobodyLeads},
	{"HigherPriorityRejoinsAheadDuringAHold", testHigherPriorityRejoinsAheadDuringAHold},
	{"PreemptionMovesToAHigherPriority", testPreemptionMovesToAHigherPriority},
	{"PreemptionIsInTheAnswer", testPreemptionIsInTheAnswer},
	{"HandoverKeepsTheFollowersInOrder", testHandoverKeepsTheFollowersInOrder},
	{"LoweredHolderStaysAheadOfItsPriority", testLoweredHolderStaysAheadOfItsPriority},
	{"LoweringKeepsATransferWaiting", testLoweringKeepsATransferWaiting},
	{"ResignWithATransferPending", testResignWithATransferPending},
}

// runTransfers runs transferTests against b.
func runTransfers(t *testing.T, b gateway.Backend) {
	for _, tt := range transferTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, b)
		})
	}
}

// campaignPriority campaigns with a priority and fails the test on error.
func campaignPriority(t *testing.T, b gateway.Backend, election, id string, ttl time.Duration, prio int) (string, gateway.Status) {
	t.Helper()
	th := token()
	st, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: id, TTL: ttl, Priority: prio, TokenHash: th}, defaults)
	if err != nil {
		t.Fatalf("campaign %s/%s: %v", election, id, err)
	}
	return th, st
}

// nextTerm reports whether term can follow term prev directly. It is
// prev+1 where terms are counted, and any larger term on backends whose
// terms are revisions (etcd: the create revision of the leader's key).
func nextTerm(term, prev uint64) bool { return term > prev }

// refusedForTransfer checks that a heartbeat of the leader is refused
// because of a pending transfer to want.
func refusedForTransfer(t *testing.T, b gateway.Backend, e, id, th, want, reason string) {
	t.Helper()
	_, err := b.Heartbeat(context.Background(), e, id, th)
	var tp *gateway.TransferPendingError
	if !errors.As(err, &tp) || !errors.Is(err, gateway.ErrTransferPending) || tp.Transfer.To != want || tp.Transfer.Reason != reason {
		t.Fatalf("heartbeat of leader %s: %v, want a *TransferPendingError to %s (%s)", id, err, want, reason)
	}
}

func testTransferCooperating(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("transfer")
	rec := watch(t, b, e, "")
	tha, a := campaign(t, b, e, "a", 10*time.Second)
	thb, _ := campaign(t, b, e, "b", 10*time.Second)
	campaign(t, b, e, "c", 10*time.Second)
	s, err := b.Transfer(ctx, e, "c", "")
	if err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	if s.Transfer == nil || s.Transfer.To != "c" || s.Transfer.Reason != gateway.ReasonTransferred || s.Leader == nil || s.Leader.ID != "a" {
		t.Fatalf("after the request: transfer %+v leader %+v; want a still leading, c pending", s.Transfer, s.Leader)
	}
	refusedForTransfer(t, b, e, "a", tha, "c", gateway.ReasonTransferred)
	if st, err := b.Heartbeat(ctx, e, "b", thb); err != nil || st.Transfer == nil || st.Transfer.To != "c" {
		t.Fatalf("heartbeat of follower b: %+v, %v; want the pending transfer in its status", st.Transfer, err)
	}
	if _, err := b.Handover(ctx, e, "b", thb); !errors.Is(err, gateway.ErrNotLeader) {
		t.Fatalf("handover by follower b: %v, want ErrNotLeader", err)
	}
	st, err := b.Handover(ctx, e, "a", tha)
	if err != nil {
		t.Fatalf("handover: %v", err)
	}
	if st.Candidate.State != gateway.StateFollower || st.Leader == nil || st.Leader.ID != "c" || !nextTerm(st.Term, a.Term) || st.Transfer != nil {
		t.Fatalf("after handover a is %+v; want a follower under c with a term after %d and no transfer", st, a.Term)
	}
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"c:leader", "b:follower", "a:follower"}) {
		t.Fatalf("line %v, want c leading, then b, then a", got)
	}
	if _, err := b.Heartbeat(ctx, e, "a", tha); err != nil {
		t.Fatalf("heartbeat of a as a follower: %v", err)
	}
	got := filter(rec.wait(t, eventWait, "c begins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "c", "")
	}), e)
	tr1, end, begin := find(got, gateway.EventLeaderTransfer, "c", gateway.ReasonTransferred), find(got, gateway.EventLeaderEnd, "a", gateway.ReasonTransferred), find(got, gateway.EventLeaderBegin, "c", gateway.ReasonTransferred)
	if tr1 < 0 || end < tr1 || begin < end || !nextTerm(got[begin].Term, a.Term) {
		t.Fatalf("events %s: want leader.transfer(c), leader.end(a, transferred), leader.begin(c, transferred) with a term after %d", describe(got), a.Term)
	}
	if p := got[tr1].Previous; p == nil || p.ID != "a" || p.Term != a.Term {
		t.Fatalf("leader.transfer names the leadership %+v, want a in term %d", p, a.Term)
	}
	if err := CheckEvents(got); err != nil {
		t.Fatal(err)
	}
}

func testTransferSilent(t *testing.T, b gateway.Backend) {
	e := name("silent")
	rec := watch(t, b, e, "")
	tha, a := campaign(t, b, e, "a", 2*time.Second)
	thb, _ := campaign(t, b, e, "b", 2*time.Second)
	thc, _ := campaign(t, b, e, "c", 2*time.Second)
	keepAlive(t, b, e, "b", thb, 2*time.Second)
	keepAlive(t, b, e, "c", thc, 2*time.Second)
	if _, err := b.Transfer(context.Background(), e, "c", ""); err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	keepAlive(t, b, e, "a", tha, 2*time.Second) // refused from now on: a's life is not extended
	got := filter(rec.wait(t, 10*time.Second, "c begins after a expires", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "c", "")
	}), e)
	end, begin := find(got, gateway.EventLeaderEnd, "a", gateway.ReasonExpired), find(got, gateway.EventLeaderBegin, "c", gateway.ReasonExpired)
	if end < 0 || begin < end || !nextTerm(got[begin].Term, a.Term) {
		t.Fatalf("events %s: want leader.end(a, expired) then leader.begin(c) with a term after %d", describe(got), a.Term)
	}
	if at := got[begin].Time; at.Before(a.Candidate.ExpiresAt) {
		t.Fatalf("c begins at %v, before a's life (never extended since the transfer) ends at %v", at, a.Candidate.ExpiresAt)
	}
	if has(got, gateway.EventLeaderBegin, "b", "") {
		t.Fatalf("events %s: b, next in line but not the target, led", describe(got))
	}
	if err := CheckEvents(got); err != nil {
		t.Fatal(err)
	}
}

func testTransferCancelled(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("cancel")
	rec := watch(t, b, e, "")
	tha, a := campaign(t, b, e, "a", 10*time.Second)
	thb, _ := campaign(t, b, e, "b", 10*time.Second)
	if _, err := b.Transfer(ctx, e, "b", tha); err != nil { // asked by the leader itself
		t.Fatalf("transfer to b: %v", err)
	}
	refusedForTransfer(t, b, e, "a", tha, "b", gateway.ReasonTransferred)
	resign(t, b, e, "b", thb)
	got := filter(rec.wait(t, eventWait, "the transfer is cancelled", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventTransferCancelled, "b", gateway.ReasonResigned)
	}), e)
	if i := find(got, gateway.EventLeaderTransfer, "b", ""); i < 0 || i > find(got, gateway.EventTransferCancelled, "b", "") {
		t.Fatalf("events %s: want leader.transfer(b) before its cancellation", describe(got))
	}
	st, err := b.Heartbeat(ctx, e, "a", tha)
	if err != nil || st.Candidate.State != gateway.StateLeader || st.Term != a.Term || st.Transfer != nil {
		t.Fatalf("heartbeat of a after the cancellation: %+v, %v; want a leading term %d again", st, err, a.Term)
	}
	if _, err := b.Handover(ctx, e, "a", tha); !errors.Is(err, gateway.ErrNoTransfer) {
		t.Fatalf("handover with no transfer pending: %v, want ErrNoTransfer", err)
	}
	if _, err := b.Transfer(ctx, e, "nobody", ""); !errors.Is(err, gateway.ErrNotFollower) {
		t.Fatalf("transfer to an unknown candidate: %v, want ErrNotFollower", err)
	}
	if _, err := b.Transfer(ctx, e, "b", token()); !errors.Is(err, gateway.ErrNotLeader) {
		t.Fatalf("transfer with a token not the leader's: %v, want ErrNotLeader", err)
	}
	if _, err := b.Transfer(ctx, name("none"), "b", ""); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("transfer in an unknown election: %v, want ErrElectionNotFound", err)
	}
}

func testPrioritiesOrderTheLine(t *testing.T, b gateway.Backend) {
	e := name("priority")
	tok := map[string]string{}
	for _, c := range []struct {
		id   string
		prio int
	}{{"a", 0}, {"b", 1}, {"c", 5}, {"d", 1}, {"e", -2}, {"f", 5}} {
		tok[c.id], _ = campaignPriority(t, b, e, c.id, 10*time.Second, c.prio)
	}
	s := snapshot(t, b, e)
	if got := ids(s.Candidates); !slices.Equal(got, []string{"a:leader", "c:follower", "f:follower", "b:follower", "d:follower", "e:follower"}) {
		t.Fatalf("line %v: want the leader, then by priority, then first come first", got)
	}
	if s.Candidates[1].Priority != 5 || s.Candidates[5].Priority != -2 {
		t.Fatalf("priorities not reported: %+v", s.Candidates)
	}
	resign(t, b, e, "a", tok["a"])
	if l := snapshot(t, b, e).Leader; l == nil || l.ID != "c" {
		t.Fatalf("after a resigned the leader is %+v, want c (highest priority, first come)", l)
	}
}

func testPreempt(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("preempt")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Preempt: true}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	tha, a := campaignPriority(t, b, e, "a", 10*time.Second, 1)
	campaignPriority(t, b, e, "b", 10*time.Second, 1)
	if s := snapshot(t, b, e); s.Transfer != nil {
		t.Fatalf("equal priority started a transfer: %+v", s.Transfer)
	}
	campaignPriority(t, b, e, "c", 10*time.Second, 7)
	refusedForTransfer(t, b, e, "a", tha, "c", gateway.ReasonPreempted)
	st, err := b.Handover(ctx, e, "a", tha)
	if err != nil {
		t.Fatalf("handover: %v", err)
	}
	if st.Leader == nil || st.Leader.ID != "c" || !nextTerm(st.Term, a.Term) {
		t.Fatalf("after handover: %+v, want c leading a term after %d", st, a.Term)
	}
	got := filter(rec.wait(t, eventWait, "c begins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "c", "")
	}), e)
	if find(got, gateway.EventLeaderTransfer, "c", gateway.ReasonPreempted) < 0 || find(got, gateway.EventLeaderEnd, "a", gateway.ReasonPreempted) < 0 || find(got, gateway.EventLeaderBegin, "c", gateway.ReasonPreempted) < 0 {
		t.Fatalf("events %s: want transfer, end and begin with reason preempted", describe(got))
	}
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"c:leader", "b:follower", "a:follower"}) {
		t.Fatalf("line %v, want c, then b, then a at the back of its priority", got)
	}
}

// testCancelStartsThePreemptionItHeldBack: an operator's transfer holds
// preemption back; cancelling it starts the preemption at once, in the
// cancellation's answer and its events (gateway.Record.CancelTransfer).
func testCancelStartsThePreemptionItHeldBack(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("unheld")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Preempt: true}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	if _, err := b.Transfer(ctx, e, "b", ""); err != nil {
		t.Fatalf("transfer to b: %v", err)
	}
	campaignPriority(t, b, e, "c", 10*time.Second, 5)
	if s := snapshot(t, b, e); s.Transfer == nil || s.Transfer.To != "b" {
		t.Fatalf("before the cancellation: transfer %+v, want the operator's to b", s.Transfer)
	}
	s, err := b.CancelTransfer(ctx, e, "")
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if s.Transfer == nil || s.Transfer.To != "c" || s.Transfer.Reason != gateway.ReasonPreempted || s.Leader == nil || s.Leader.ID != "a" {
		t.Fatalf("the cancellation's answer: transfer %+v, leader %+v; want a leading, asked to hand over to c (preempted)", s.Transfer, s.Leader)
	}
	got := filter(rec.wait(t, eventWait, "the preemption", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderTransfer, "c", gateway.ReasonPreempted)
	}), e)
	if i := find(got, gateway.EventTransferCancelled, "b", gateway.ReasonCancelled); i < 0 || i > find(got, gateway.EventLeaderTransfer, "c", gateway.ReasonPreempted) {
		t.Fatalf("events %s: want leader.transfer_cancelled(b, cancelled), then leader.transfer(c, preempted)", describe(got))
	}
}

// testCancelLetsTheTargetTakeAFreeSlot: a transfer's target waits for the
// holdership it takes over rather than taking a slot freed beside it (the
// holders raised); cancelling the transfer lets it take that slot at once,
// in the cancellation's answer and its events (gateway.Record.promote).
func testCancelLetsTheTargetTakeAFreeSlot(t *testing.T, b gateway.Backend) {
	if b.MaxHolders() < 2 {
		t.Skipf("%T takes one holder", b)
	}
	ctx := context.Background()
	e := name("beside")
	rec := watch(t, b, e, "")
	campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	if _, err := b.Transfer(ctx, e, "b", ""); err != nil {
		t.Fatalf("transfer to b: %v", err)
	}
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	if s := snapshot(t, b, e); s.Transfer == nil || s.Transfer.To != "b" || len(s.Holders) != 1 {
		t.Fatalf("holders raised during the transfer: transfer %+v, holders %+v; want a alone holding, asked to hand over to b", s.Transfer, s.Holders)
	}
	s, err := b.CancelTransfer(ctx, e, "")
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if s.Transfer != nil || len(s.Holders) != 2 || s.Leader == nil || s.Leader.ID != "a" {
		t.Fatalf("the cancellation's answer: transfer %+v, leader %+v, holders %+v; want a and b holding, nothing pending", s.Transfer, s.Leader, s.Holders)
	}
	got := filter(rec.wait(t, eventWait, "b's holdership", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, "b", "")
	}), e)
	if i := find(got, gateway.EventTransferCancelled, "b", gateway.ReasonCancelled); i < 0 || i > find(got, gateway.EventLeaderBegin, "b", "") {
		t.Fatalf("events %s: want leader.transfer_cancelled(b, cancelled), then leader.begin(b)", describe(got))
	}
}

func testCancelTransfer(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("withdraw")
	rec := watch(t, b, e, "")
	tha, a := campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	campaign(t, b, e, "c", 10*time.Second)
	if _, err := b.CancelTransfer(ctx, e, ""); !errors.Is(err, gateway.ErrNoTransfer) {
		t.Fatalf("cancel with no transfer pending: %v, want ErrNoTransfer", err)
	}
	if _, err := b.Transfer(ctx, e, "c", ""); err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	refusedForTransfer(t, b, e, "a", tha, "c", gateway.ReasonTransferred)
	if _, err := b.CancelTransfer(ctx, e, token()); !errors.Is(err, gateway.ErrNotLeader) {
		t.Fatalf("cancel with a token not the leader's: %v, want ErrNotLeader", err)
	}
	s, err := b.CancelTransfer(ctx, e, tha) // by the leader itself
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if s.Transfer != nil || s.Leader == nil || s.Leader.ID != "a" || s.Term != a.Term {
		t.Fatalf("after the cancellation: transfer %+v, leader %+v, term %d; want a leading term %d, nothing pending", s.Transfer, s.Leader, s.Term, a.Term)
	}
	st, err := b.Heartbeat(ctx, e, "a", tha)
	if err != nil || st.Candidate.State != gateway.StateLeader || st.Term != a.Term || st.Transfer != nil {
		t.Fatalf("heartbeat of a after the cancellation: %+v, %v; want a leading term %d again", st, err, a.Term)
	}
	if _, err := b.Handover(ctx, e, "a", tha); !errors.Is(err, gateway.ErrNoTransfer) {
		t.Fatalf("handover after the cancellation: %v, want ErrNoTransfer", err)
	}
	if _, err := b.CancelTransfer(ctx, e, ""); !errors.Is(err, gateway.ErrNoTransfer) {
		t.Fatalf("a second cancellation: %v, want ErrNoTransfer", err)
	}
	got := filter(rec.wait(t, eventWait, "the cancellation", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventTransferCancelled, "c", gateway.ReasonCancelled)
	}), e)
	if i := find(got, gateway.EventLeaderTransfer, "c", gateway.ReasonTransferred); i < 0 || i > find(got, gateway.EventTransferCancelled, "c", gateway.ReasonCancelled) {
		t.Fatalf("events %s: want leader.transfer(c) before leader.transfer_cancelled(c, cancelled)", describe(got))
	}
	if has(got, gateway.EventLeaderEnd, "a", "") || has(got, gateway.EventLeaderBegin, "c", "") {
		t.Fatalf("events %s: the cancellation changed the leadership", describe(got))
	}
	if _, err := b.CancelTransfer(ctx, name("none"), ""); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("cancel in an unknown election: %v, want ErrElectionNotFound", err)
	}

	// A preemption would start again at once: refused while preempt is on.
	p := name("withdraw-preempt")
	if _, err := b.Configure(ctx, p, gateway.Settings{ErrorCooldown: time.Second, Preempt: true}); err != nil {
		t.Fatal(err)
	}
	thp, _ := campaignPriority(t, b, p, "a", 10*time.Second, 0)
	campaignPriority(t, b, p, "b", 10*time.Second, 3)
	refusedForTransfer(t, b, p, "a", thp, "b", gateway.ReasonPreempted)
	if _, err := b.CancelTransfer(ctx, p, ""); !errors.Is(err, gateway.ErrPreempting) {
		t.Fatalf("cancel a preemption with preempt on: %v, want ErrPreempting", err)
	}
	if _, err := b.Configure(ctx, p, gateway.Settings{ErrorCooldown: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CancelTransfer(ctx, p, ""); err != nil {
		t.Fatalf("cancel a preemption with preempt off: %v", err)
	}
	if st, err := b.Heartbeat(ctx, p, "a", thp); err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of a after the preemption was cancelled: %+v, %v; want a leading", st, err)
	}
}

// testCancelRacingHandover sends a cancellation and the leader's handover
// at the same time, several times: each round ends with exactly one
// leader, either the old one in its term with nothing pending, or the
// target in a later term, and the events agree.
func testCancelRacingHandover(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	for round := range 6 {
		e := name("withdraw-race")
		rec := watch(t, b, e, "")
		tha, a := campaign(t, b, e, "a", 10*time.Second)
		campaign(t, b, e, "b", 10*time.Second)
		if _, err := b.Transfer(ctx, e, "b", ""); err != nil {
			t.Fatalf("round %d: transfer to b: %v", round, err)
		}
		cancelErr, handoverErr := make(chan error, 1), make(chan error, 1)
		go func() { _, err := b.CancelTransfer(ctx, e, ""); cancelErr <- err }()
		go func() { _, err := b.Handover(ctx, e, "a", tha); handoverErr <- err }()
		ce, he := <-cancelErr, <-handoverErr
		s := snapshot(t, b, e)
		switch {
		case ce == nil && errors.Is(he, gateway.ErrNoTransfer):
			if s.Leader == nil || s.Leader.ID != "a" || s.Term != a.Term || s.Transfer != nil {
				t.Fatalf("round %d: cancelled first, yet leader %+v term %d transfer %+v", round, s.Leader, s.Term, s.Transfer)
			}
		case he == nil && errors.Is(ce, gateway.ErrNoTransfer):
			if s.Leader == nil || s.Leader.ID != "b" || !nextTerm(s.Term, a.Term) {
				t.Fatalf("round %d: handed over first, yet leader %+v term %d", round, s.Leader, s.Term)
			}
		default:
			t.Fatalf("round %d: cancel %v, handover %v: want exactly one to win", round, ce, he)
		}
		want := gateway.EventTransferCancelled
		if s.Leader.ID == "b" {
			want = gateway.EventLeaderBegin
		}
		got := filter(rec.wait(t, eventWait, string(want), func(ev []gateway.Event) bool {
			return has(ev, want, "b", "")
		}), e)
		if err := CheckEvents(got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if has(got, gateway.EventLeaderBegin, "b", "") && has(got, gateway.EventTransferCancelled, "b", "") {
			t.Fatalf("round %d: events %s: both cancelled and completed", round, describe(got))
		}
	}
}
