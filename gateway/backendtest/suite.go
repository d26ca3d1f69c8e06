package backendtest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// Run runs the conformance suite against backends made by h.
func Run(t *testing.T, h Harness) {
	b := h.New(t)
	start(t, b)
	tests := []struct {
		name string
		fn   func(t *testing.T, b gateway.Backend)
	}{
		{"FirstCandidateLeads", testFirstCandidateLeads},
		{"LineIsFirstComeFirstServed", testLineIsFIFO},
		{"HeartbeatKeepsLeadership", testHeartbeatKeepsLeadership},
		{"ExpiredLeaderIsReplaced", testExpiredLeaderIsReplaced},
		{"ResignHandsOverAtOnce", testResignHandsOverAtOnce},
		{"HandoverDelayHoldsBackPromotion", testHandoverDelay},
		{"ErrorCooldownRejoinsAtTheBack", testErrorCooldown},
		{"CandidateExpiringInCooldownIsGone", testExpiryDuringCooldown},
		{"TokenIsChecked", testTokenIsChecked},
		{"FailLeaderActsOnlyOnItsTerm", testFailLeader},
		{"FailedLeaderHoldsTheNextUntilItsPromiseLapses", testFailedLeaderHoldsTheNext},
		{"FailedLeaderHoldsANewcomerAndDeletion", testFailedLeaderHoldsANewcomerAndDeletion},
		{"DeletedElectionKeepsItsTermsForASuccessor", testDeleteElection},
		{"DuplicateCampaignIsRefused", testDuplicateCampaign},
		{"UnknownElectionAndCandidate", testUnknown},
		{"LeaderReadAgreesWithElection", testLeaderRead},
		{"CandidateCountAgreesWithElection", testCandidateCount},
		{"ConfigureCreatesAndChanges", testConfigure},
		{"WatchResumesWithoutGapOrDuplicate", testWatchResume},
		{"WatchFiltersByElection", testWatchFilter},
		{"WatchRefusesUnknownCursor", testWatchUnknownCursor},
		{"WatchClosesWhenContextEnds", testWatchCloses},
		{"HubAgreesWithTheBackend", testHubAgreesWithTheBackend},
		{"HubCatchesUpWhateverTheLastWriteWas", testHubCatchesUpWhateverTheLastWriteWas},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, b)
		})
	}
	runTransfers(t, b)
	runHolders(t, h, b)
	runSessions(t, b)
	t.Run("ConcurrentCandidatesNeverShareATerm", func(t *testing.T) {
		t.Parallel()
		testConcurrency(t, h, b)
	})
	t.Run("AgreesWithTheRecord", func(t *testing.T) {
		t.Parallel()
		testAgreesWithTheRecord(t, h, b)
	})
	t.Run("TransferStormNeverOverlaps", func(t *testing.T) {
		t.Parallel()
		testTransferStorm(t, h, b)
	})
}

func testFirstCandidateLeads(t *testing.T, b gateway.Backend) {
	e := name("first")
	rec := watch(t, b, "", "")
	_, a := campaign(t, b, e, "a", 5*time.Second)
	if a.Candidate.State != gateway.StateLeader || a.Position != 0 || a.Term == 0 || a.Leader == nil || a.Leader.ID != "a" {
		t.Fatalf("first candidate: %+v, want leader at position 0 with a term", a)
	}
	if a.Candidate.Term != a.Term || a.Leader.Term != a.Term {
		t.Fatalf("terms disagree: candidate %d, status %d, leader %d", a.Candidate.Term, a.Term, a.Leader.Term)
	}
	_, bs := campaign(t, b, e, "b", 5*time.Second)
	if bs.Candidate.State != gateway.StateFollower || bs.Position != 1 || bs.Leader == nil || bs.Leader.ID != "a" || bs.Term != a.Term {
		t.Fatalf("second candidate: %+v, want follower at position 1 under a", bs)
	}
	if !bs.Candidate.ExpiresAt.After(time.Now()) {
		t.Fatalf("expires_at %v is not in the future", bs.Candidate.ExpiresAt)
	}
	snap := snapshot(t, b, e)
	if got := ids(snap.Candidates); !slices.Equal(got, []string{"a:leader", "b:follower"}) {
		t.Fatalf("candidates = %v", got)
	}
	if snap.Leader == nil || snap.Leader.ID != "a" || snap.Term != a.Term {
		t.Fatalf("snapshot leader %+v term %d", snap.Leader, snap.Term)
	}
	got := rec.wait(t, eventWait, "joined, begin, joined", func(ev []gateway.Event) bool {
		return len(filter(ev, e)) >= 3
	})
	got = filter(got, e)
	want := []gateway.EventType{gateway.EventCandidateJoined, gateway.EventLeaderBegin, gateway.EventCandidateJoined}
	if types(got[:3]) != describeTypes(want) {
		t.Fatalf("events = %s, want %s", describe(got), describeTypes(want))
	}
	if got[1].Term != a.Term || got[1].Previous != nil || got[1].Time.IsZero() || got[1].ID == "" {
		t.Fatalf("leader.begin = %+v", got[1])
	}
}

func testLineIsFIFO(t *testing.T, b gateway.Backend) {
	e := name("fifo")
	tok := map[string]string{}
	for _, id := range []string{"a", "b", "c", "d"} {
		tok[id], _ = campaign(t, b, e, id, 10*time.Second)
	}
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"a:leader", "b:follower", "c:follower", "d:follower"}) {
		t.Fatalf("line = %v", got)
	}
	term0 := snapshot(t, b, e).Term
	resign(t, b, e, "a", tok["a"])
	s := snapshot(t, b, e)
	if got := ids(s.Candidates); !slices.Equal(got, []string{"b:leader", "c:follower", "d:follower"}) || s.Term <= term0 {
		t.Fatalf("after a resigned: line %v term %d (was %d)", got, s.Term, term0)
	}
	resign(t, b, e, "c", tok["c"])
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"b:leader", "d:follower"}) {
		t.Fatalf("after c resigned: line %v", got)
	}
	resign(t, b, e, "b", tok["b"])
	s2 := snapshot(t, b, e)
	if s2.Leader == nil || s2.Leader.ID != "d" || s2.Term <= s.Term {
		t.Fatalf("after b resigned: leader %+v term %d (was %d)", s2.Leader, s2.Term, s.Term)
	}
	resign(t, b, e, "d", tok["d"])
	s3 := snapshot(t, b, e)
	if s3.Leader != nil || len(s3.Candidates) != 0 || s3.Term != s2.Term {
		t.Fatalf("empty election: leader %+v candidates %v term %d, want none and term %d kept", s3.Leader, ids(s3.Candidates), s3.Term, s2.Term)
	}
	_, again := campaign(t, b, e, "e", 10*time.Second)
	if again.Term <= s2.Term {
		t.Fatalf("term after the election emptied: %d, want more than %d", again.Term, s2.Term)
	}
}

func resign(t *testing.T, b gateway.Backend, e, id, th string) {
	t.Helper()
	if err := b.Resign(context.Background(), e, id, th); err != nil {
		t.Fatalf("resign %s/%s: %v", e, id, err)
	}
}

func testHeartbeatKeepsLeadership(t *testing.T, b gateway.Backend) {
	e := name("beat")
	ttl := time.Second
	th, a := campaign(t, b, e, "a", ttl)
	keepAlive(t, b, e, "a", th, ttl)
	campaign(t, b, e, "b", 10*time.Second)
	time.Sleep(3 * ttl)
	st, err := b.Heartbeat(context.Background(), e, "a", th)
	if err != nil {
		t.Fatalf("heartbeat after %s: %v", 3*ttl, err)
	}
	if st.Candidate.State != gateway.StateLeader || st.Term != a.Term || st.Leader == nil || st.Leader.ID != "a" {
		t.Fatalf("heartbeating leader: %+v, want still leader of term %d", st, a.Term)
	}
	if left := time.Until(st.Candidate.ExpiresAt); left < ttl/2 || left > ttl+time.Second {
		t.Fatalf("expires in %s after a heartbeat with ttl %s", left, ttl)
	}
}

func testExpiredLeaderIsReplaced(t *testing.T, b gateway.Backend) {
	e := name("expiry")
	rec := watch(t, b, "", "")
	tha, a := campaign(t, b, e, "a", time.Second)
	thb, _ := campaign(t, b, e, "b", 2*time.Second)
	keepAlive(t, b, e, "b", thb, 2*time.Second)
	got := rec.wait(t, 10*time.Second, "b begins after a expires", func(ev []gateway.Event) bool {
		return has(filter(ev, e), gateway.EventLeaderBegin, "b", "")
	})
	got = filter(got, e)
	end, left, begin := find(got, gateway.EventLeaderEnd, "a", gateway.ReasonExpired), find(got, gateway.EventCandidateLeft, "a", gateway.ReasonExpired), find(got, gateway.EventLeaderBegin, "b", gateway.ReasonExpired)
	if end < 0 || left < 0 || begin < 0 || begin < end {
		t.Fatalf("events %s: want leader.end(a, expired), candidate.left(a, expired), then leader.begin(b, expired)", describe(got))
	}
	if p := got[begin].Previous; p == nil || p.ID != "a" || p.Term != a.Term || got[begin].Term <= a.Term {
		t.Fatalf("leader.begin %+v: want previous a term %d and a greater term", got[begin], a.Term)
	}
	if _, err := b.Heartbeat(context.Background(), e, "a", tha); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Fatalf("heartbeat of expired candidate: %v, want ErrCandidateNotFound", err)
	}
}

func testResignHandsOverAtOnce(t *testing.T, b gateway.Backend) {
	e := name("resign")
	if _, err := b.Configure(context.Background(), e, gateway.Settings{HandoverDelay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	tha, a := campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	resign(t, b, e, "a", tha)
	s := snapshot(t, b, e)
	if s.Leader == nil || s.Leader.ID != "b" || s.Term <= a.Term || !s.HandoverUntil.IsZero() {
		t.Fatalf("right after resign: leader %+v term %d handover %v; want b at once", s.Leader, s.Term, s.HandoverUntil)
	}
	got := rec.wait(t, eventWait, "b begins", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
	if find(got, gateway.EventLeaderEnd, "a", gateway.ReasonResigned) < 0 || find(got, gateway.EventCandidateLeft, "a", gateway.ReasonResigned) < 0 || find(got, gateway.EventLeaderBegin, "b", gateway.ReasonResigned) < 0 {
		t.Fatalf("events %s: want leader.end, candidate.left and leader.begin with reason resigned", describe(got))
	}
}

func testHandoverDelay(t *testing.T, b gateway.Backend) {
	e := name("handover")
	delay := 2 * time.Second
	if _, err := b.Configure(context.Background(), e, gateway.Settings{ErrorCooldown: time.Second, HandoverDelay: delay}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	campaign(t, b, e, "a", time.Second)
	thb, _ := campaign(t, b, e, "b", 2*time.Second)
	keepAlive(t, b, e, "b", thb, 2*time.Second)
	rec.wait(t, 10*time.Second, "a expires", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderEnd, "a", gateway.ReasonExpired) })
	s := snapshot(t, b, e)
	if s.Leader == nil {
		if s.HandoverUntil.IsZero() {
			t.Fatalf("no leader and no handover_until during the delay: %+v", s)
		}
		if st, ok := gateway.StatusOf(s, "b"); !ok || st.Candidate.State != gateway.StateFollower || st.Position != 0 {
			t.Fatalf("b during the delay: %+v", st)
		}
	}
	got := rec.wait(t, 10*time.Second, "b begins after the delay", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
	end, begin := got[find(got, gateway.EventLeaderEnd, "a", "")], got[find(got, gateway.EventLeaderBegin, "b", "")]
	if held := begin.Time.Sub(end.Time); held < delay-100*time.Millisecond {
		t.Fatalf("leader.begin came %s after leader.end; the handover delay is %s", held, delay)
	}
}

func testErrorCooldown(t *testing.T, b gateway.Backend) {
	e := name("cooldown")
	rec := watch(t, b, e, "")
	tok := map[string]string{}
	for _, id := range []string{"a", "b", "c"} {
		tok[id], _ = campaign(t, b, e, id, 2*time.Second)
		keepAlive(t, b, e, id, tok[id], 2*time.Second)
	}
	term := snapshot(t, b, e).Term
	st, err := b.ReportError(context.Background(), e, "a", tok["a"], "begin hook exited 1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Candidate.State != gateway.StateError || st.Position != -1 || st.Candidate.CooldownUntil.IsZero() || st.Leader == nil || st.Leader.ID != "b" {
		t.Fatalf("after error: %+v, want a in error with cooldown and b leading", st)
	}
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"b:leader", "c:follower", "a:error"}) {
		t.Fatalf("line during cooldown = %v", got)
	}
	got := rec.wait(t, eventWait, "error handover", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
	perr, pend, pbeg := find(got, gateway.EventLeaderError, "a", ""), find(got, gateway.EventLeaderEnd, "a", gateway.ReasonError), find(got, gateway.EventLeaderBegin, "b", gateway.ReasonError)
	if perr < 0 || pend < perr || pbeg < pend || got[perr].Detail != "begin hook exited 1" || got[perr].Term != term {
		t.Fatalf("events %s: want leader.error(a, detail), leader.end(a, error), leader.begin(b, error)", describe(got))
	}
	rec.wait(t, 10*time.Second, "a rejoins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventCandidateJoined, "a", gateway.ReasonRejoined)
	})
	if got := ids(snapshot(t, b, e).Candidates); !slices.Equal(got, []string{"b:leader", "c:follower", "a:follower"}) {
		t.Fatalf("line after cooldown = %v, want a back at the end", got)
	}
}

func testExpiryDuringCooldown(t *testing.T, b gateway.Backend) {
	e := name("coolexp")
	if _, err := b.Configure(context.Background(), e, gateway.Settings{ErrorCooldown: 4 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, "")
	tha, _ := campaign(t, b, e, "a", time.Second)
	if _, err := b.ReportError(context.Background(), e, "a", tha, ""); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 10*time.Second, "a expires in cooldown", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventCandidateLeft, "a", gateway.ReasonExpired)
	})
	time.Sleep(4 * time.Second)
	if got := rec.all(); has(got, gateway.EventCandidateJoined, "a", gateway.ReasonRejoined) {
		t.Fatalf("an expired candidate rejoined: %s", describe(got))
	}
	if s := snapshot(t, b, e); len(s.Candidates) != 0 {
		t.Fatalf("candidates = %v, want none", ids(s.Candidates))
	}
}

func testTokenIsChecked(t *testing.T, b gateway.Backend) {
	e := name("token")
	campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	before := snapshot(t, b, e)
	wrong := token()
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := b.Heartbeat(ctx, e, id, wrong); !errors.Is(err, gateway.ErrTokenMismatch) {
			t.Errorf("heartbeat %s with a wrong token: %v", id, err)
		}
		if err := b.Resign(ctx, e, id, wrong); !errors.Is(err, gateway.ErrTokenMismatch) {
			t.Errorf("resign %s with a wrong token: %v", id, err)
		}
		if _, err := b.ReportError(ctx, e, id, wrong, "x"); !errors.Is(err, gateway.ErrTokenMismatch) {
			t.Errorf("error %s with a wrong token: %v", id, err)
		}
	}
	after := snapshot(t, b, e)
	if !slices.Equal(ids(after.Candidates), ids(before.Candidates)) || after.Term != before.Term || after.Leader.ID != before.Leader.ID {
		t.Fatalf("state changed by refused calls: %v term %d -> %v term %d", ids(before.Candidates), before.Term, ids(after.Candidates), after.Term)
	}
}

func testDuplicateCampaign(t *testing.T, b gateway.Backend) {
	e := name("dup")
	tha, _ := campaign(t, b, e, "a", 10*time.Second)
	before := snapshot(t, b, e)
	_, err := b.Campaign(context.Background(), e, gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: token()}, defaults)
	if !errors.Is(err, gateway.ErrCandidateExists) {
		t.Fatalf("second campaign of a: %v, want ErrCandidateExists", err)
	}
	if after := snapshot(t, b, e); after.Term != before.Term || len(after.Candidates) != 1 {
		t.Fatalf("refused campaign changed state: %+v", after)
	}
	resign(t, b, e, "a", tha)
	if _, st := campaign(t, b, e, "a", 10*time.Second); st.Term <= before.Term {
		t.Fatalf("campaign after resign: term %d, want more than %d", st.Term, before.Term)
	}
}

func testUnknown(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e := name("unknown")
	if _, err := b.Election(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Errorf("election of nobody: %v, want ErrElectionNotFound", err)
	}
	th := token()
	if _, err := b.Heartbeat(ctx, e, "a", th); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Errorf("heartbeat in an unknown election: %v", err)
	}
	campaign(t, b, e, "a", 10*time.Second)
	if _, err := b.Heartbeat(ctx, e, "zz", th); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Errorf("heartbeat of an unknown candidate: %v", err)
	}
	if err := b.Resign(ctx, e, "zz", th); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Errorf("resign of an unknown candidate: %v", err)
	}
	if _, err := b.ReportError(ctx, e, "zz", th, ""); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Errorf("error of an unknown candidate: %v", err)
	}
}

// testLeaderRead: a LeaderReader's ElectionLeader is Election without the
// candidates, with a leader, after a handover and with nobody leading.
func testLeaderRead(t *testing.T, b gateway.Backend) {
	lr, ok := b.(gateway.LeaderReader)
	if !ok {
		t.Skipf("%T is not a gateway.LeaderReader", b)
	}
	ctx := context.Background()
	e := name("leaderread")
	if _, err := lr.ElectionLeader(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("leader of nobody: %v, want ErrElectionNotFound", err)
	}
	check := func(step, leader string) {
		t.Helper()
		want := snapshot(t, b, e)
		want.Candidates = nil
		got, err := lr.ElectionLeader(ctx, e)
		// The cursor is the backend's position, which parallel tests'
		// writes to other elections move on between the two reads; it
		// may only move forward.
		if g, w, ok := positions(got.Cursor, want.Cursor); err == nil && ok && g.Compare(w) < 0 {
			t.Fatalf("%s: leader read at cursor %s, before the election read at %s", step, got.Cursor, want.Cursor)
		}
		got.Cursor = want.Cursor
		switch {
		case err != nil:
			t.Fatalf("%s: %v", step, err)
		case leader == "" && got.Leader != nil, leader != "" && (got.Leader == nil || got.Leader.ID != leader):
			t.Fatalf("%s: leader %+v, want %q", step, got.Leader, leader)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%s:\n got %+v\nwant %+v", step, got, want)
		}
	}
	ta, _ := campaign(t, b, e, "a", 10*time.Second)
	tb, _ := campaign(t, b, e, "b", 10*time.Second)
	check("a leads", "a")
	if err := b.Resign(ctx, e, "a", ta); err != nil {
		t.Fatal(err)
	}
	check("b leads after a resigned", "b")
	if err := b.Resign(ctx, e, "b", tb); err != nil {
		t.Fatal(err)
	}
	check("nobody leads", "")
}

// testCandidateCount: a CandidateCounter's count, which may lag, comes to
// agree with Election.
func testCandidateCount(t *testing.T, b gateway.Backend) {
	c, ok := b.(gateway.CandidateCounter)
	if !ok {
		t.Skipf("%T is not a gateway.CandidateCounter", b)
	}
	ctx := context.Background()
	e := name("count")
	if _, err := c.CountCandidates(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("count of nobody: %v, want ErrElectionNotFound", err)
	}
	campaign(t, b, e, "a", 10*time.Second)
	campaign(t, b, e, "b", 10*time.Second)
	eventually.True(t, 5*time.Second, "a count of 2", func() bool {
		n, err := c.CountCandidates(ctx, e)
		return err == nil && n == len(snapshot(t, b, e).Candidates) && n == 2
	})
}

func testConfigure(t *testing.T, b gateway.Backend) {
	ctx := context.Background()
	e1, e2 := name("conf-b"), name("conf-a")
	s1 := gateway.Settings{ErrorCooldown: 3 * time.Second, HandoverDelay: 2 * time.Second}
	got, err := b.Configure(ctx, e1, s1)
	if err != nil || got.Settings != s1 || got.Term != 0 || got.Leader != nil || len(got.Candidates) != 0 {
		t.Fatalf("configure new election: %+v, %v", got, err)
	}
	if snap := snapshot(t, b, e1); snap.Settings != s1 {
		t.Fatalf("settings read back %+v, want %+v", snap.Settings, s1)
	}
	campaign(t, b, e1, "a", 10*time.Second)
	if snap := snapshot(t, b, e1); snap.Settings != s1 {
		t.Fatalf("campaign replaced settings with defaults: %+v", snap.Settings)
	}
	s2 := gateway.Settings{ErrorCooldown: 5 * time.Second}
	if got, err := b.Configure(ctx, e1, s2); err != nil || got.Settings != s2 || got.Leader == nil {
		t.Fatalf("reconfigure: %+v, %v", got, err)
	}
	campaign(t, b, e2, "a", 10*time.Second)
	if snap := snapshot(t, b, e2); snap.Settings != defaults {
		t.Fatalf("election created by campaign has %+v, want defaults %+v", snap.Settings, defaults)
	}
	all, cursor, err := b.Elections(ctx)
	if err != nil || cursor == "" {
		t.Fatalf("elections: cursor %q, %v", cursor, err)
	}
	var names []string
	for _, x := range all {
		names = append(names, x.Name)
	}
	if !slices.IsSorted(names) || !slices.Contains(names, e1) || !slices.Contains(names, e2) {
		t.Fatalf("elections = %v: want sorted, with %s and %s", names, e1, e2)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := b.Watch(wctx, "", cursor); err != nil {
		t.Fatalf("watch from the elections cursor: %v", err)
	}
}

// testFailLeader: FailLeader puts the leader of a term in error, and
// refuses, changing nothing, for any other term or a follower.
func testFailLeader(t *testing.T, b gateway.Backend) {
	e := name("fail")
	ctx := context.Background()
	ta, a := campaign(t, b, e, "a", 10*time.Second)
	tb, _ := campaign(t, b, e, "b", 10*time.Second)
	before := snapshot(t, b, e)
	for _, tc := range []struct {
		id, token string
		term      uint64
	}{
		{"a", ta, a.Term + 1}, // a later term than a's
		{"a", ta, a.Term - 1}, // an earlier one
		{"b", tb, a.Term},     // a follower
	} {
		if _, err := b.FailLeader(ctx, e, tc.id, tc.token, tc.term, "late"); !errors.Is(err, gateway.ErrNotLeader) {
			t.Errorf("FailLeader(%s, term %d): %v, want ErrNotLeader", tc.id, tc.term, err)
		}
	}
	if after := snapshot(t, b, e); after.Leader == nil || after.Leader.ID != "a" || after.Term != before.Term {
		t.Fatalf("refused FailLeader changed the leader: %+v term %d", after.Leader, after.Term)
	}
	if _, err := b.FailLeader(ctx, e, "a", token(), a.Term, "x"); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Errorf("FailLeader with a wrong token: %v, want ErrTokenMismatch", err)
	}
	st, err := b.FailLeader(ctx, e, "a", ta, a.Term, "begin timed out")
	if err != nil {
		t.Fatalf("FailLeader of the leader in its term: %v", err)
	}
	if st.Candidate.State != gateway.StateError {
		t.Errorf("a after FailLeader: %s, want error", st.Candidate.State)
	}
	// b leads only once a's promise has lapsed (see hold.go), then with a
	// later term.
	if after := snapshot(t, b, e); after.Leader != nil && (after.Leader.ID != "b" || after.Term <= a.Term) {
		t.Fatalf("after FailLeader: leader %+v term %d, want none or b with a later term than %d", after.Leader, after.Term, a.Term)
	}
}

// testDeleteElection: DeleteElection refuses to delete an election with
// candidates, deletes an empty one (gone from reads and lists), and an
// election created again under the same name hands out terms above the
// deleted one's.
func testDeleteElection(t *testing.T, b gateway.Backend) {
	e := name("delete")
	ctx := context.Background()
	if err := b.DeleteElection(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("deleting an unknown election: %v, want ErrElectionNotFound", err)
	}
	th, a := campaign(t, b, e, "a", 30*time.Second)
	if err := b.DeleteElection(ctx, e); !errors.Is(err, gateway.ErrElectionNotEmpty) {
		t.Fatalf("deleting an election with a leader: %v, want ErrElectionNotEmpty", err)
	}
	if _, err := b.ReportError(ctx, e, "a", th, "x"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteElection(ctx, e); !errors.Is(err, gateway.ErrElectionNotEmpty) {
		t.Fatalf("deleting an election with a candidate in cooldown: %v, want ErrElectionNotEmpty", err)
	}
	resign(t, b, e, "a", th)
	if err := b.DeleteElection(ctx, e); err != nil {
		t.Fatalf("deleting an empty election: %v", err)
	}
	if _, err := b.Election(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("reading a deleted election: %v, want ErrElectionNotFound", err)
	}
	all, _, err := b.Elections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		if x.Name == e {
			t.Fatalf("a deleted election is still listed")
		}
	}
	_, again := campaign(t, b, e, "b", 30*time.Second)
	if again.Term <= a.Term {
		t.Fatalf("term %d of an election created again after deletion; the deleted one reached %d", again.Term, a.Term)
	}
}

// positions parses two cursors; ok is false unless both are in the forms
// of gateway.Position.
func positions(a, b string) (x, y gateway.Position, ok bool) {
	x, okA := gateway.ParsePosition(a)
	y, okB := gateway.ParsePosition(b)
	return x, y, okA && okB
}
