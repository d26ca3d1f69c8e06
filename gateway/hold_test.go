package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestFailLeaderHoldsTheNextUntilThePromiseLapses: after FailLeader no
// leadership begins, by any path, before the failed leader's expiry as of
// the verdict; its later heartbeats do not move that; reads show no leader
// and the hold's end as HandoverUntil.
func TestFailLeaderHoldsTheNextUntilThePromiseLapses(t *testing.T) {
	type holdStep struct {
		at   time.Duration
		op   string // campaign, heartbeat, fail, error, resign, transfer, advance
		id   string
		ttl  time.Duration // campaign: the TTL; campaign with priority: see prio
		prio int
		want string        // events, as eventString
		held time.Duration // HandoverUntil shown afterwards, from t0; 0: none
	}
	const s = time.Second
	tests := []struct {
		name     string
		settings Settings
		steps    []holdStep
		line     string
		term     uint64
	}{
		{
			name: "the next in line waits for the failed leader's expiry, not for its later heartbeats",
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{0, "campaign", "b", 60 * s, 0, "candidate.joined(b,campaign)", 0},
				{2 * s, "heartbeat", "a", 0, 0, "-", 0}, // answered leader: may act until 12s
				{3 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 12 * s},
				{5 * s, "heartbeat", "a", 0, 0, "-", 12 * s}, // answered error: 15s is its life, not the hold
				{12*s - 1, "advance", "", 0, 0, "-", 12 * s},
				{12 * s, "advance", "", 0, 0, "leader.begin(b,error)", 0},
			},
			line: "b:leader a:error", term: 2,
		},
		{
			name:  "a report by the leader itself holds nothing",
			steps: []holdStep{{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0}, {0, "campaign", "b", 60 * s, 0, "candidate.joined(b,campaign)", 0}, {3 * s, "error", "a", 0, 0, "leader.error(a,) leader.end(a,error) leader.begin(b,error)", 0}},
			line:  "b:leader a:error", term: 2,
		},
		{
			name: "a newcomer to an empty line waits, and so does the failed leader's resignation",
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{3 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 10 * s},
				{4 * s, "resign", "a", 0, 0, "candidate.left(a,resigned)", 10 * s},
				{5 * s, "campaign", "c", 60 * s, 0, "candidate.joined(c,campaign)", 10 * s},
				{10 * s, "advance", "", 0, 0, "leader.begin(c,error)", 0},
			},
			line: "c:leader", term: 2,
		},
		{
			name:     "the failed leader back from its cooldown waits too",
			settings: Settings{ErrorCooldown: 2 * s},
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{3 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 10 * s},
				{4 * s, "heartbeat", "a", 0, 0, "-", 10 * s},
				{5 * s, "advance", "", 0, 0, "candidate.joined(a,rejoined)", 10 * s},
				{10 * s, "advance", "", 0, 0, "leader.begin(a,error)", 0},
			},
			line: "a:leader", term: 2,
		},
		{
			name: "a pending transfer's target waits, then leads",
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{0, "campaign", "b", 60 * s, 0, "candidate.joined(b,campaign)", 0},
				{0, "campaign", "c", 60 * s, 0, "candidate.joined(c,campaign)", 0},
				{1 * s, "transfer", "c", 0, 0, "leader.transfer(c,transferred)", 0},
				{2 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 10 * s},
				{10 * s, "advance", "", 0, 0, "candidate.left(a,expired) leader.begin(c,error)", 0},
			},
			line: "c:leader b:follower", term: 2,
		},
		{
			name:     "a preemption waits, then the candidate of higher priority leads",
			settings: Settings{Preempt: true},
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{1 * s, "campaign", "b", 60 * s, 5, "candidate.joined(b,campaign) leader.transfer(b,preempted)", 0},
				{2 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 10 * s},
				{3 * s, "campaign", "c", 60 * s, 9, "candidate.joined(c,campaign)", 10 * s},
				{10 * s, "advance", "", 0, 0, "candidate.left(a,expired) leader.begin(b,error) leader.transfer(c,preempted)", 0},
			},
			line: "b:leader c:follower", term: 2,
		},
		{
			name:     "a handover delay cannot start during the hold: no leader to expire",
			settings: Settings{HandoverDelay: 30 * s},
			steps: []holdStep{
				{0, "campaign", "a", 10 * s, 0, "candidate.joined(a,campaign) leader.begin(a,)", 0},
				{0, "campaign", "b", 3 * s, 0, "candidate.joined(b,campaign)", 0},
				{0, "campaign", "c", 60 * s, 0, "candidate.joined(c,campaign)", 0},
				{1 * s, "fail", "a", 0, 0, "leader.error(a,) leader.end(a,error)", 10 * s},
				{5 * s, "advance", "", 0, 0, "candidate.left(b,expired)", 10 * s},
				{10 * s, "advance", "", 0, 0, "candidate.left(a,expired) leader.begin(c,error)", 0},
			},
			line: "c:leader", term: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settings := tt.settings
			if settings.ErrorCooldown == 0 {
				settings.ErrorCooldown = time.Minute
			}
			r := NewRecord("e", settings)
			tok := HashToken("t")
			for i, st := range tt.steps {
				now := t0.Add(st.at)
				var (
					ev  []Event
					err error
				)
				switch st.op {
				case "campaign":
					ev, err = r.Campaign(now, Candidacy{ID: st.id, TTL: st.ttl, TokenHash: tok, Priority: st.prio})
				case "heartbeat":
					ev, err = r.Heartbeat(now, st.id, tok)
				case "fail":
					ev, err = r.FailLeader(now, st.id, tok, r.Term, "begin timed out")
				case "error":
					ev, err = r.ReportError(now, st.id, tok, "boom")
				case "resign":
					ev, err = r.Resign(now, st.id, tok)
				case "transfer":
					ev, err = r.Transfer(now, "", st.id, "")
				case "advance":
					ev = r.Advance(now)
				}
				if err != nil {
					t.Fatalf("step %d %s %s: %v", i, st.op, st.id, err)
				}
				if got := eventString(ev); got != st.want {
					t.Fatalf("step %d %s %s:\n got %s\nwant %s", i, st.op, st.id, got, st.want)
				}
				if err := r.Check(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				snap := r.Snapshot()
				var want time.Time
				if st.held > 0 {
					want = t0.Add(st.held)
				}
				if !snap.HandoverUntil.Equal(want) || (st.held > 0 && snap.Leader != nil) {
					t.Fatalf("step %d %s %s: leader %+v, handover_until %v; want none until %v", i, st.op, st.id, snap.Leader, snap.HandoverUntil, want)
				}
				if st.held > 0 {
					if at, ok := r.NextDeadline(); !ok || at.After(want) {
						t.Fatalf("step %d: next deadline %v, %v; want at %v at the latest", i, at, ok, want)
					}
				}
			}
			var line []string
			for _, c := range r.Snapshot().Candidates {
				line = append(line, c.ID+":"+string(c.State))
			}
			if got := strings.Join(line, " "); got != tt.line || r.Term != tt.term {
				t.Fatalf("final line %q term %d, want %q term %d", got, r.Term, tt.line, tt.term)
			}
		})
	}
}

// TestEngineTimedHoldEndsOnlyByEndHold: with liveness outside the Record
// (Entry.ExpiresAt zero) the hold is a TTL from the verdict, and an
// EngineTimed Record waits for EndHold, however late its clock says it is.
func TestEngineTimedHoldEndsOnlyByEndHold(t *testing.T) {
	r := NewRecord("e", Settings{ErrorCooldown: time.Hour})
	r.EngineTimed = true
	for _, id := range []string{"a", "b"} {
		if _, err := r.Campaign(t0, Candidacy{ID: id, TTL: 4 * time.Second, TokenHash: "h" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range r.Line {
		r.Line[i].ExpiresAt = time.Time{}
	}
	if _, err := r.FailLeader(t0.Add(time.Second), "a", "ha", r.Term, ""); err != nil {
		t.Fatal(err)
	}
	if hs := r.Held; len(hs) != 1 || hs[0].Term != 1 || hs[0].ID != "a" || !hs[0].Until.Equal(t0.Add(5*time.Second)) || hs[0].TTL != 4*time.Second || hs[0].Reason != ReasonError {
		t.Fatalf("holds %+v: want a's term 1 until a TTL after the verdict", hs)
	}
	late := t0.Add(24 * time.Hour)
	if got := eventString(r.Advance(late)); got != "-" || r.Holding() != 0 {
		t.Fatalf("Advance a day later: %s, %d holding; want the hold kept", got, r.Holding())
	}
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("an engine-timed hold has a deadline")
	}
	if got := eventString(r.EndHold(late, 2)); got != "-" || len(r.Held) != 1 {
		t.Fatalf("EndHold of another term: %s, holds %+v; want the hold kept", got, r.Held)
	}
	if got, want := eventString(r.EndHold(late, 1)), "leader.begin(b,error)"; got != want {
		t.Fatalf("EndHold: %s, want %s", got, want)
	}
	if got := eventString(r.EndHold(late, 1)); got != "-" || r.Term != 2 {
		t.Fatalf("EndHold without a hold: %s, term %d", got, r.Term)
	}
}
