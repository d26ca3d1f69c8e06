package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/ctxwait"
	"github.com/electorhq/elector/internal/eventually"
)

// Holders: an election's holders setting N makes its first N candidates in
// line hold at once, each holdership with a term of its own (see
// gateway.MultiHolder). The subtests run with N = 1, 2 and 5 on every
// backend. A backend whose MaxHolders is 1 declares so in its Harness
// (SingleHolder), runs the N = 1 subtests, and must refuse N above
// 1 with gateway.ErrNotSupported, which the other subtests then check.

// holderCounts are the holders settings every backend is tested with.
var holderCounts = []int{1, 2, 5}

// runHolders runs the holders subtests.
func runHolders(t *testing.T, h Harness, b gateway.Backend) {
	multi := b.MaxHolders() > 1
	if multi == h.SingleHolder {
		t.Run("HoldersHarnessAgreesWithTheBackend", func(t *testing.T) {
			if multi {
				t.Fatalf("%T takes %d holders: drop SingleHolder from its Harness", b, b.MaxHolders())
			}
			t.Fatalf("%T takes one holder: set SingleHolder in its Harness", b)
		})
		return
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, b gateway.Backend, n int)
	}{
		{"FirstNHoldEachWithItsOwnTerm", testFirstNHold},
		{"ExpiredHolderIsReplaced", testExpiredHolderIsReplaced},
		{"LoweringEndsTheNewestAndHoldsTheirSlots", testLoweringHolders},
		{"TransferFromAHolder", testTransferFromAHolder},
		{"NeverMoreThanNHold", testNeverMoreThanNHold},
	}
	for _, n := range holderCounts {
		if n > 1 && !multi {
			t.Run(fmt.Sprintf("Holders%d/Refused", n), func(t *testing.T) {
				t.Parallel()
				testHoldersRefused(t, b, n)
			})
			continue
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("Holders%d/%s", n, tt.name), func(t *testing.T) {
				t.Parallel()
				tt.fn(t, b, n)
			})
		}
	}
}

// testHoldersRefused: a backend that takes one holder refuses holders
// above 1, as a setting and as the defaults of a campaign, and stores
// nothing that says otherwise.
func testHoldersRefused(t *testing.T, b gateway.Backend, n int) {
	ctx := context.Background()
	e := name("refused")
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, Holders: n}); !errors.Is(err, gateway.ErrNotSupported) {
		t.Fatalf("Configure with %d holders: %v, want gateway.ErrNotSupported", n, err)
	}
	d := defaults
	d.Holders = n
	if _, err := b.Campaign(ctx, e, gateway.Candidacy{ID: "a", TTL: 2 * time.Second, TokenHash: token()}, d); !errors.Is(err, gateway.ErrNotSupported) {
		t.Fatalf("Campaign with defaults of %d holders: %v, want gateway.ErrNotSupported", n, err)
	}
	if s, err := b.Election(ctx, e); err == nil && s.Settings.HolderLimit() != 1 {
		t.Fatalf("after the refusals the election holds %d", s.Settings.HolderLimit())
	}
}

// holdersElection makes a fresh election of n holders and records its
// events.
func holdersElection(t *testing.T, b gateway.Backend, prefix string, n int, s gateway.Settings) (string, *recorder) {
	t.Helper()
	e := name(prefix)
	s.Holders = n
	if s.ErrorCooldown == 0 {
		s.ErrorCooldown = time.Second
	}
	if _, err := b.Configure(context.Background(), e, s); err != nil {
		t.Fatalf("configure %d holders: %v", n, err)
	}
	return e, watch(t, b, e, "")
}

// holdersOf returns the ids of the holders a snapshot shows, in line
// order, and checks that it agrees with itself: Leader the first, Holders
// (with n above 1) all of them, each with its candidate's term, the terms
// increasing.
func holdersOf(t *testing.T, s gateway.Election, n int) []string {
	t.Helper()
	var out []string
	var last uint64
	for _, c := range s.Candidates {
		if c.State != gateway.StateLeader {
			continue
		}
		if c.Term <= last {
			t.Fatalf("holder %s of term %d after term %d: %v", c.ID, c.Term, last, ids(s.Candidates))
		}
		last = c.Term
		if len(out) < len(s.Holders) && (s.Holders[len(out)].ID != c.ID || s.Holders[len(out)].Term != c.Term) {
			t.Fatalf("Holders %+v disagree with the candidates %v", s.Holders, ids(s.Candidates))
		}
		out = append(out, c.ID)
	}
	switch {
	case len(out) > n:
		t.Fatalf("%d hold, above %d: %v", len(out), n, ids(s.Candidates))
	case len(out) == 0 && s.Leader != nil, len(out) > 0 && (s.Leader == nil || s.Leader.ID != out[0]):
		t.Fatalf("leader %+v, holders %v", s.Leader, out)
	case n > 1 && len(s.Holders) != len(out), n == 1 && s.Holders != nil:
		t.Fatalf("Holders %+v, holders in line %v (of %d)", s.Holders, out, n)
	case last > s.Term:
		t.Fatalf("a holder's term %d is after the election's %d", last, s.Term)
	}
	return out
}

func testFirstNHold(t *testing.T, b gateway.Backend, n int) {
	ctx := context.Background()
	e, rec := holdersElection(t, b, "holders", n, gateway.Settings{})
	const ttl = 10 * time.Second
	tok := map[string]string{}
	var terms []uint64
	for i := range n + 2 {
		id := fmt.Sprintf("c%d", i)
		th, st := campaign(t, b, e, id, ttl)
		tok[id] = th
		if st.Position != i {
			t.Fatalf("%s at position %d, want %d", id, st.Position, i)
		}
		if i >= n {
			if st.Candidate.State != gateway.StateFollower || st.Leader == nil || st.Leader.ID != "c0" {
				t.Fatalf("%s: %+v, want a follower under c0", id, st)
			}
			continue
		}
		if st.Candidate.State != gateway.StateLeader || st.Term != st.Candidate.Term || st.Term == 0 || (len(terms) > 0 && st.Term <= terms[len(terms)-1]) {
			t.Fatalf("%s: state %s, term %d (candidate %d), after terms %v; want it to hold a term of its own", id, st.Candidate.State, st.Term, st.Candidate.Term, terms)
		}
		if st.Leader == nil || st.Leader.ID != "c0" || (n > 1 && len(st.Holders) != i+1) || (n == 1 && st.Holders != nil) {
			t.Fatalf("%s: leader %+v, holders %+v; want c0 the longest-standing of %d", id, st.Leader, st.Holders, i+1)
		}
		terms = append(terms, st.Term)
	}
	for id, th := range tok {
		keepAlive(t, b, e, id, th, ttl)
	}
	s := snapshot(t, b, e)
	if got := holdersOf(t, s, n); len(got) != n {
		t.Fatalf("holders %v, want the first %d", got, n)
	}
	for i := range n {
		st, err := b.Heartbeat(ctx, e, fmt.Sprintf("c%d", i), tok[fmt.Sprintf("c%d", i)])
		if err != nil || st.Candidate.State != gateway.StateLeader || st.Term != terms[i] {
			t.Fatalf("heartbeat of holder c%d: %+v, %v; want its own term %d", i, st, err, terms[i])
		}
	}
	if lr, ok := b.(gateway.LeaderReader); ok {
		l, err := lr.ElectionLeader(ctx, e)
		if err != nil || l.Leader == nil || l.Leader.ID != "c0" || len(l.Holders) != len(s.Holders) || (n > 1 && l.Holders[n-1].Term != terms[n-1]) {
			t.Fatalf("ElectionLeader: leader %+v, holders %+v, %v; want c0 and the snapshot's holders %+v", l.Leader, l.Holders, err, s.Holders)
		}
	}
	// The longest-standing resigns: the first follower takes the slot with
	// the next term, the others keep theirs.
	resign(t, b, e, "c0", tok["c0"])
	delete(tok, "c0")
	got := filter(rec.wait(t, eventWait, fmt.Sprintf("c%d begins", n), func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, fmt.Sprintf("c%d", n), "")
	}), e)
	s = snapshot(t, b, e)
	want := []string{}
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("c%d", i))
	}
	if h := holdersOf(t, s, n); !slices.Equal(h, want) {
		t.Fatalf("holders %v, want %v", h, want)
	}
	if err := CheckHolderEvents(got, n); err != nil {
		t.Fatal(err)
	}
}

func testExpiredHolderIsReplaced(t *testing.T, b gateway.Backend, n int) {
	e, rec := holdersElection(t, b, "hexpire", n, gateway.Settings{})
	const ttl = 10 * time.Second
	last := fmt.Sprintf("c%d", n-1) // the newest holder stops heartbeating
	var lastTerm uint64
	for i := range n + 1 {
		id := fmt.Sprintf("c%d", i)
		life := ttl
		if id == last {
			life = 2 * time.Second
		}
		th, st := campaign(t, b, e, id, life)
		if id == last {
			lastTerm = st.Term
			continue
		}
		keepAlive(t, b, e, id, th, ttl)
	}
	next := fmt.Sprintf("c%d", n)
	got := filter(rec.wait(t, 15*time.Second, next+" takes the expired holder's slot", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, next, "")
	}), e)
	end, begin := find(got, gateway.EventLeaderEnd, last, gateway.ReasonExpired), find(got, gateway.EventLeaderBegin, next, "")
	if end < 0 || begin < end || got[begin].Term <= lastTerm || got[end].Term != lastTerm {
		t.Fatalf("events %s: want leader.end(%s, expired, term %d), then leader.begin(%s) with a later term", describe(got), last, lastTerm, next)
	}
	if h := holdersOf(t, snapshot(t, b, e), n); len(h) != n || h[len(h)-1] != next {
		t.Fatalf("holders %v, want %d with %s the newest", h, n, next)
	}
	if err := CheckHolderEvents(got, n); err != nil {
		t.Fatal(err)
	}
}

// testLoweringHolders lowers N to 1 and raises it again at once: the
// newest holderships end (holders_reduced), their holders stay in line,
// and no slot is filled again before the promise of the holder it had
// lapsed (a TTL after its last heartbeat answered "leader", on the test's
// clock: see hold.go), and then all N hold again. With N = 1 there is
// nothing to lower: setting 1 again changes no holdership.
func testLoweringHolders(t *testing.T, b gateway.Backend, n int) {
	ctx := context.Background()
	e, rec := holdersElection(t, b, "hlower", n, gateway.Settings{})
	const ttl = 3 * time.Second
	tok := map[string]string{}
	for i := range n + 1 {
		id := fmt.Sprintf("c%d", i)
		tok[id], _ = campaign(t, b, e, id, ttl)
	}
	// Heartbeat each holder now, so that its step-down deadline is known.
	deadline := map[string]time.Time{}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		sent := time.Now()
		if st, err := b.Heartbeat(ctx, e, id, tok[id]); err != nil || st.Candidate.State != gateway.StateLeader {
			t.Fatalf("heartbeat of holder %s: %+v, %v", id, st, err)
		}
		deadline[id] = sent.Add(ttl)
	}
	for id, th := range tok {
		keepAlive(t, b, e, id, th, ttl)
	}
	s := snapshot(t, b, e).Settings
	s.Holders = 1
	if _, err := b.Configure(ctx, e, s); err != nil {
		t.Fatal(err)
	}
	if h := holdersOf(t, snapshot(t, b, e), 1); !slices.Equal(h, []string{"c0"}) {
		t.Fatalf("after lowering to 1: holders %v, want c0 alone", h)
	}
	if n == 1 {
		if got := filter(rec.all(), e); has(got, gateway.EventLeaderEnd, "c0", "") {
			t.Fatalf("setting 1 holder again ended a holdership: %s", describe(got))
		}
		return
	}
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		if st, err := b.Heartbeat(ctx, e, id, tok[id]); err != nil || st.Candidate.State != gateway.StateFollower || st.Position != i {
			t.Fatalf("heartbeat of demoted %s: %+v, %v; want a follower at %d, ahead of those that never held", id, st, err, i)
		}
	}
	got := filter(rec.wait(t, eventWait, "the newest holderships end", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderEnd, "c1", gateway.ReasonHoldersReduced)
	}), e)
	if i, j := find(got, gateway.EventLeaderEnd, fmt.Sprintf("c%d", n-1), gateway.ReasonHoldersReduced), find(got, gateway.EventLeaderEnd, "c1", gateway.ReasonHoldersReduced); i < 0 || j < i {
		t.Fatalf("events %s: want the newest holdership ended first, reason holders_reduced", describe(got))
	}
	// Raised at once: the freed slots wait for the promises of their holders.
	s.Holders = n
	if _, err := b.Configure(ctx, e, s); err != nil {
		t.Fatal(err)
	}
	earliest := deadline["c1"]
	for i := 2; i < n; i++ {
		if d := deadline[fmt.Sprintf("c%d", i)]; d.Before(earliest) {
			earliest = d
		}
	}
	eventually.True(t, 20*time.Second, fmt.Sprintf("%d hold again", n), func() bool {
		h := holdersOf(t, snapshot(t, b, e), n)
		if len(h) > 1 && time.Now().Before(earliest) {
			t.Fatalf("holders %v at %s before the demoted holders' promises lapse", h, time.Until(earliest))
		}
		return len(h) == n
	})
	if err := CheckHolderEvents(filter(rec.all(), e), n); err != nil {
		t.Fatal(err)
	}
}

func testTransferFromAHolder(t *testing.T, b gateway.Backend, n int) {
	ctx := context.Background()
	e, rec := holdersElection(t, b, "htransfer", n, gateway.Settings{})
	transfer := func(from, to string) (gateway.Election, error) {
		return b.TransferFrom(ctx, e, from, to, "")
	}
	const ttl = 10 * time.Second
	tok := map[string]string{}
	terms := map[string]uint64{}
	for i := range n + 2 {
		id := fmt.Sprintf("c%d", i)
		var st gateway.Status
		tok[id], st = campaign(t, b, e, id, ttl)
		terms[id] = st.Candidate.Term
	}
	from, to := "c0", fmt.Sprintf("c%d", n+1) // the longest-standing, to the second follower
	if n > 1 {
		if _, err := b.Transfer(ctx, e, to, ""); !errors.Is(err, gateway.ErrInvalid) {
			t.Fatalf("an operator's transfer naming no holder of %d: %v, want gateway.ErrInvalid", n, err)
		}
	}
	if _, err := transfer(fmt.Sprintf("c%d", n), to); !errors.Is(err, gateway.ErrNotLeader) {
		t.Fatalf("a transfer from a follower: %v, want gateway.ErrNotLeader", err)
	}
	s, err := transfer(from, to)
	if err != nil || s.Transfer == nil || s.Transfer.To != to || s.Transfer.From != from || s.Transfer.Term != terms[from] {
		t.Fatalf("transfer from %s to %s: %+v, %v", from, to, s.Transfer, err)
	}
	refusedForTransfer(t, b, e, from, tok[from], to, gateway.ReasonTransferred)
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		if st, err := b.Heartbeat(ctx, e, id, tok[id]); err != nil || st.Candidate.State != gateway.StateLeader {
			t.Fatalf("heartbeat of holder %s, not asked: %+v, %v", id, st, err)
		}
	}
	st, err := b.Handover(ctx, e, from, tok[from])
	if err != nil || st.Candidate.State != gateway.StateFollower {
		t.Fatalf("handover by %s: %+v, %v", from, st, err)
	}
	got := filter(rec.wait(t, eventWait, to+" begins", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventLeaderBegin, to, "")
	}), e)
	end, begin := find(got, gateway.EventLeaderEnd, from, gateway.ReasonTransferred), find(got, gateway.EventLeaderBegin, to, gateway.ReasonTransferred)
	if end < 0 || begin < end || got[begin].Term <= terms[fmt.Sprintf("c%d", n-1)] {
		t.Fatalf("events %s: want leader.end(%s, transferred) then leader.begin(%s) with the newest term", describe(got), from, to)
	}
	h := holdersOf(t, snapshot(t, b, e), n)
	if len(h) != n || h[len(h)-1] != to || slices.Contains(h, from) {
		t.Fatalf("holders %v: want %s in %s's place, the others kept", h, to, from)
	}
	if err := CheckHolderEvents(got, n); err != nil {
		t.Fatal(err)
	}
}

// testNeverMoreThanNHold: candidates campaign, resign, report errors and
// stop heartbeating at random for a while; no snapshot and no event
// stream ever shows more than N holders, and terms are unique and
// increasing.
//
// The storm lasts stormFor at least, and until its watch has seen
// stormBegins holderships begin: how much a storm moves in a given time
// depends on the machine's load, and one that moved nothing tests nothing.
// The events are checked once the watch has delivered everything up to a
// candidacy made after the storm, not as far as it happened to be.
func testNeverMoreThanNHold(t *testing.T, b gateway.Backend, n int) {
	e, rec := holdersElection(t, b, "hstorm", n, gateway.Settings{ErrorCooldown: time.Second})
	const (
		ttl         = 2 * time.Second
		stormFor    = 3 * time.Second
		stormLimit  = 2 * time.Minute // bounds a storm that moves nothing
		stormBegins = 2               // above n: the first n only fill the slots
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range 2*n + 2 {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", i)
			rnd := rand.New(rand.NewPCG(uint64(i), 26))
			th := token()
			for ctx.Err() == nil {
				_, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, defaults)
				if err != nil && !errors.Is(err, gateway.ErrCandidateExists) {
					ctxwait.Sleep(ctx, 50*time.Millisecond)
					continue
				}
				for range 1 + rnd.IntN(6) {
					ctxwait.Sleep(ctx, time.Duration(50+rnd.IntN(200))*time.Millisecond)
					_, _ = b.Heartbeat(ctx, e, id, th)
				}
				switch rnd.IntN(3) {
				case 0:
					_ = b.Resign(ctx, e, id, th)
				case 1:
					_, _ = b.ReportError(ctx, e, id, th, "storm")
				}
			}
		})
	}
	start := time.Now()
	for {
		if s, err := b.Election(context.Background(), e); err == nil {
			holdersOf(t, s, n)
		}
		begins := countBegins(filter(rec.all(), e))
		if begins >= n+stormBegins && time.Since(start) >= stormFor {
			break
		}
		if time.Since(start) > stormLimit {
			t.Fatalf("after %s the watch has seen %d holderships begin: want the storm to move them; events %s", stormLimit, begins, describe(filter(rec.all(), e)))
		}
		time.Sleep(30 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	// A candidacy after the storm: once the watch delivers its joining, it
	// has delivered every event of the storm before it.
	th := token()
	eventually.True(t, 30*time.Second, "a campaign after the storm", func() bool {
		_, err := b.Campaign(context.Background(), e, gateway.Candidacy{ID: "after-the-storm", TTL: ttl, TokenHash: th}, defaults)
		switch {
		case err == nil, errors.Is(err, gateway.ErrCandidateExists): // an earlier try got in
			return true
		case errors.Is(err, gateway.ErrUnavailable):
			return false
		}
		t.Fatalf("campaign after the storm: %v", err)
		return false
	})
	got := filter(rec.wait(t, 30*time.Second, "the watch to deliver the candidacy after the storm", func(ev []gateway.Event) bool {
		return has(ev, gateway.EventCandidateJoined, "after-the-storm", "")
	}), e)
	if err := CheckHolderEvents(got, n); err != nil {
		t.Fatal(err)
	}
}

// countBegins counts the holderships that begin in events.
func countBegins(events []gateway.Event) int {
	begins := 0
	for _, ev := range events {
		if ev.Type == gateway.EventLeaderBegin {
			begins++
		}
	}
	return begins
}
