package gateway

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// holdersOp is one operation of a scripted election with several holders.
// Each candidate's token is HashToken(its id).
type holdersOp struct {
	at      time.Duration
	op      string // campaign, heartbeat, resign, error, fail, advance, holders, transfer, holder-transfer, handover, cancel, preempt
	id      string // the candidate; for transfer, the target
	from    string // transfer: the holder named
	ttl     time.Duration
	prio    int
	holders int // holders: the new setting
	want    string
	err     error
	// held is HandoverUntil afterwards, from t0; 0: none.
	held time.Duration
}

func TestRecordHoldersScripts(t *testing.T) {
	const s, long = time.Second, time.Hour
	tests := []struct {
		name     string
		settings Settings
		ops      []holdersOp
		line     string // "id:state/term" for holders, "id:state" for the others
		term     uint64
	}{
		{
			name:     "the first N in line hold, each with a term of its own",
			settings: Settings{Holders: 2},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{at: s, op: "resign", id: "a", want: "leader.end(a/1,resigned) candidate.left(a,resigned) leader.begin(c/3,resigned)"},
			},
			line: "b:leader/2 c:leader/3", term: 3,
		},
		{
			name:     "a holder's expiry refills its slot after the handover delay; the others hold on",
			settings: Settings{Holders: 2, HandoverDelay: 3 * s},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: 2 * s, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{at: 2 * s, op: "advance", want: "leader.end(a/1,expired) candidate.left(a,expired)", held: 5 * s},
				{at: 3 * s, op: "resign", id: "b", want: "leader.end(b/2,resigned) candidate.left(b,resigned) leader.begin(c/3,resigned)", held: 5 * s},
				{at: 4 * s, op: "campaign", id: "d", ttl: long, want: "candidate.joined(d,campaign)", held: 5 * s},
				{at: 5 * s, op: "advance", want: "leader.begin(d/4,resigned)"},
			},
			line: "c:leader/3 d:leader/4", term: 4,
		},
		{
			name:     "raising N promotes the next in line at once",
			settings: Settings{Holders: 1},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, want: "candidate.joined(d,campaign)"},
				{at: s, op: "holders", holders: 3, want: "leader.begin(b/2,) leader.begin(c/3,)"},
			},
			line: "a:leader/1 b:leader/2 c:leader/3 d:follower", term: 3,
		},
		{
			name:     "lowering N ends the newest first and holds their slots until their promises lapse",
			settings: Settings{Holders: 3},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: 10 * s, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: 10 * s, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: 10 * s, want: "candidate.joined(c,campaign) leader.begin(c/3,)"},
				{op: "campaign", id: "d", ttl: long, want: "candidate.joined(d,campaign)"},
				{at: 2 * s, op: "heartbeat", id: "b", want: "-"},
				{at: 3 * s, op: "holders", holders: 1, want: "leader.end(c/3,holders_reduced) leader.end(b/2,holders_reduced)"},
				// Raised again at once: the slots of b and c are held until
				// their promises lapse (c: 10s, b: 12s).
				{at: 4 * s, op: "holders", holders: 3, want: "-", held: 10 * s},
				{at: 4 * s, op: "heartbeat", id: "c", want: "-", held: 10 * s},
				{at: 10 * s, op: "advance", want: "leader.end(a/1,expired) candidate.left(a,expired) leader.begin(b/4,expired) leader.begin(c/5,expired)", held: 12 * s},
			},
			line: "b:leader/4 c:leader/5 d:follower", term: 5,
		},
		{
			name:     "lowering N keeps the demoted ahead of the followers of their priority",
			settings: Settings{Holders: 3},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, prio: 1, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, prio: 2, want: "candidate.joined(c,campaign) leader.begin(c/3,)"},
				{op: "campaign", id: "d", ttl: long, prio: 1, want: "candidate.joined(d,campaign)"},
				{op: "campaign", id: "e", ttl: long, want: "candidate.joined(e,campaign)"},
				{at: s, op: "holders", holders: 1, want: "leader.end(c/3,holders_reduced) leader.end(b/2,holders_reduced)"},
			},
			line: "a:leader/1 c:follower d:follower b:follower e:follower", term: 3,
		},
		{
			name:     "a failed holder holds its own slot; the others are unaffected",
			settings: Settings{Holders: 2, ErrorCooldown: long},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: 10 * s, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: 10 * s, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, want: "candidate.joined(d,campaign)"},
				{at: s, op: "fail", id: "b", want: "leader.error(b/2,) leader.end(b/2,error)", held: 10 * s},
				{at: 2 * s, op: "resign", id: "a", want: "leader.end(a/1,resigned) candidate.left(a,resigned) leader.begin(c/3,resigned)", held: 10 * s},
				{at: 10 * s, op: "advance", want: "candidate.left(b,expired) leader.begin(d/4,resigned)"},
			},
			line: "c:leader/3 d:leader/4", term: 4,
		},
		{
			name:     "a transfer replaces the named holder; other slots go to the next behind the target",
			settings: Settings{Holders: 2},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, want: "candidate.joined(d,campaign)"},
				{op: "transfer", id: "d", want: "-", err: ErrInvalid},
				{op: "transfer", id: "a", from: "b", want: "-", err: ErrNotFollower},
				{op: "transfer", id: "c", from: "x", want: "-", err: ErrNotLeader},
				{op: "transfer", id: "c", from: "b", want: "leader.transfer(c,transferred)"},
				{op: "transfer", id: "c", from: "b", want: "-"},
				{op: "transfer", id: "d", from: "a", want: "-", err: ErrTransferPending},
				{op: "heartbeat", id: "b", want: "-", err: ErrTransferPending},
				{op: "heartbeat", id: "a", want: "-"},
				{op: "handover", id: "a", want: "-", err: ErrNoTransfer},
				{at: s, op: "resign", id: "a", want: "leader.end(a/1,resigned) candidate.left(a,resigned) leader.begin(d/3,resigned)"},
				{at: 2 * s, op: "handover", id: "b", want: "leader.end(b/2,transferred) leader.begin(c/4,transferred)"},
			},
			line: "d:leader/3 c:leader/4 b:follower", term: 4,
		},
		{
			name:     "a holder asks with its own token",
			settings: Settings{Holders: 2},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "holder-transfer", from: "c", id: "c", want: "-", err: ErrNotLeader},
				{op: "holder-transfer", from: "b", id: "c", want: "leader.transfer(c,transferred)"},
				{op: "cancel", from: "a", want: "-", err: ErrNotLeader},
				{op: "cancel", from: "b", want: "leader.transfer_cancelled(c,cancelled)"},
			},
			line: "a:leader/1 b:leader/2 c:follower", term: 2,
		},
		{
			name:     "lowering N ends the holdership a transfer asks for: its target takes the next free slot",
			settings: Settings{Holders: 2},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: 5 * s, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: 5 * s, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, prio: 5, want: "candidate.joined(d,campaign)"},
				{op: "transfer", from: "b", id: "c", want: "leader.transfer(c,transferred)"},
				{at: s, op: "holders", holders: 1, want: "leader.end(b/2,holders_reduced)"},
				{at: 2 * s, op: "resign", id: "a", want: "leader.end(a/1,resigned) candidate.left(a,resigned)", held: 5 * s},
				{at: 5 * s, op: "advance", want: "candidate.left(b,expired) leader.begin(c/3,resigned)"},
			},
			line: "c:leader/3 d:follower", term: 3,
		},
		{
			name:     "preempt: a follower of higher priority than the lowest holder takes that holder's slot",
			settings: Settings{Holders: 2, Preempt: true},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, prio: 3, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: long, prio: 1, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{op: "campaign", id: "c", ttl: long, prio: 1, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, prio: 2, want: "candidate.joined(d,campaign) leader.transfer(d,preempted)"},
				{op: "heartbeat", id: "a", want: "-"},
				{op: "heartbeat", id: "b", want: "-", err: ErrTransferPending},
				{at: s, op: "handover", id: "b", want: "leader.end(b/2,preempted) leader.begin(d/3,preempted)"},
			},
			line: "a:leader/1 d:leader/3 c:follower b:follower", term: 3,
		},
		{
			name:     "preempt waits while a slot is free or held back",
			settings: Settings{Holders: 2, Preempt: true, HandoverDelay: 3 * s},
			ops: []holdersOp{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a/1,)"},
				{op: "campaign", id: "b", ttl: s, want: "candidate.joined(b,campaign) leader.begin(b/2,)"},
				{at: 2 * s, op: "campaign", id: "c", ttl: long, prio: 5, want: "leader.end(b/2,expired) candidate.left(b,expired) candidate.joined(c,campaign)", held: 4 * s},
				{at: 4 * s, op: "advance", want: "leader.begin(c/3,expired)"},
			},
			line: "a:leader/1 c:leader/3", term: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settings := tt.settings
			if settings.ErrorCooldown == 0 {
				settings.ErrorCooldown = time.Minute
			}
			r := NewRecord("e", settings)
			for i, o := range tt.ops {
				ev, err := applyHoldersOp(r, o)
				if (o.err == nil && err != nil) || (o.err != nil && !errors.Is(err, o.err)) {
					t.Fatalf("op %d %s %s: err %v, want %v", i, o.op, o.id, err, o.err)
				}
				if got := holderEventString(ev); got != o.want {
					t.Fatalf("op %d %s %s:\n got %s\nwant %s", i, o.op, o.id, got, o.want)
				}
				if err := r.Check(); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				var want time.Time
				if o.held > 0 {
					want = t0.Add(o.held)
				}
				if got := r.Snapshot().HandoverUntil; !got.Equal(want) {
					t.Fatalf("op %d %s %s: handover_until %v, want %v", i, o.op, o.id, got, want)
				}
			}
			if got := lineString(r); got != tt.line || r.Term != tt.term {
				t.Fatalf("final line %q term %d, want %q term %d", got, r.Term, tt.line, tt.term)
			}
		})
	}
}

func applyHoldersOp(r *Record, o holdersOp) ([]Event, error) {
	now := t0.Add(o.at)
	tok := HashToken(o.id)
	switch o.op {
	case "campaign":
		return r.Campaign(now, Candidacy{ID: o.id, TTL: o.ttl, Priority: o.prio, TokenHash: tok})
	case "heartbeat":
		return r.Heartbeat(now, o.id, tok)
	case "resign":
		return r.Resign(now, o.id, tok)
	case "error":
		return r.ReportError(now, o.id, tok, "boom")
	case "fail":
		var term uint64
		if e := r.Find(o.id); e != nil {
			term = e.Term
		}
		return r.FailLeader(now, o.id, tok, term, "begin timed out")
	case "advance":
		return r.Advance(now), nil
	case "holders":
		s := r.Settings
		s.Holders = o.holders
		return r.Configure(now, s), nil
	case "transfer":
		return r.Transfer(now, o.from, o.id, "")
	case "holder-transfer":
		return r.Transfer(now, "", o.id, HashToken(o.from))
	case "handover":
		return r.Handover(now, o.id, tok)
	case "cancel":
		return r.CancelTransfer(now, HashToken(o.from))
	}
	panic("unknown op " + o.op)
}

// holderEventString is eventString with each holdership's term:
// "leader.begin(a/1,)".
func holderEventString(ev []Event) string {
	if len(ev) == 0 {
		return "-"
	}
	s := make([]string, len(ev))
	for i, e := range ev {
		id := e.Candidate.ID
		switch e.Type {
		case EventLeaderBegin, EventLeaderEnd, EventLeaderError:
			id += fmt.Sprintf("/%d", e.Term)
		}
		s[i] = string(e.Type) + "(" + id + "," + e.Reason + ")"
	}
	return strings.Join(s, " ")
}

func lineString(r *Record) string {
	var line []string
	for _, c := range r.Snapshot().Candidates {
		x := c.ID + ":" + string(c.State)
		if c.State == StateLeader {
			x += fmt.Sprintf("/%d", c.Term)
		}
		line = append(line, x)
	}
	return strings.Join(line, " ")
}

// TestRecordHoldersReadsAndStatus: every holder is a leader with its own
// term in its Status; Leader is the longest-standing; Holders lists them
// all, but only with more than one slot.
func TestRecordHoldersReadsAndStatus(t *testing.T) {
	r := NewRecord("e", Settings{Holders: 3})
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := r.Campaign(t0, Candidacy{ID: id, TTL: time.Minute, TokenHash: HashToken(id)}); err != nil {
			t.Fatal(err)
		}
	}
	snap := r.Snapshot()
	if snap.Leader == nil || snap.Leader.ID != "a" || snap.Term != 3 || len(snap.Holders) != 3 || snap.Holders[2].ID != "c" || snap.Holders[2].Term != 3 {
		t.Fatalf("snapshot: leader %+v, term %d, holders %+v", snap.Leader, snap.Term, snap.Holders)
	}
	for i, id := range []string{"a", "b", "c", "d"} {
		st, _ := r.Status(id)
		want, _ := StatusOf(snap, id)
		if st.Position != i || len(st.Holders) != 3 || st.Leader.ID != "a" || st.Term != want.Term || st.Candidate.Term != want.Candidate.Term {
			t.Fatalf("status of %s: %+v; StatusOf %+v", id, st, want)
		}
		if i < 3 && (st.Candidate.State != StateLeader || st.Term != uint64(i+1)) {
			t.Fatalf("holder %s: state %s, term %d; want leader in term %d", id, st.Candidate.State, st.Term, i+1)
		}
	}
	if d, _ := r.Status("d"); d.Candidate.State != StateFollower || d.Term != 3 {
		t.Fatalf("follower d: %+v, want the election's term", d)
	}
	one := NewRecord("e", Settings{})
	one.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: "x"})
	if st, _ := one.Status("a"); st.Holders != nil || one.Snapshot().Holders != nil {
		t.Fatalf("one slot: holders %+v, want none listed", st.Holders)
	}
}

// TestRecordNeverMoreHoldersActingThanTheSetting drives records through
// random operations (campaigns, heartbeats, resigns, error reports,
// verdicts, transfers, handovers, changes of the holders setting) and
// checks the model's safety: whenever a holdership begins, fewer holders
// than the setting of that moment may be acting, counting every open
// holdership and every one the gateway ended (a verdict, a lower setting)
// until the holder's expiry as of that end, which is the latest its
// step-down deadline can be. Terms are unique and increasing.
func TestRecordNeverMoreHoldersActingThanTheSetting(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkRandomHolders(t, rand.New(rand.NewPCG(seed, 26)))
		})
	}
}

func checkRandomHolders(t *testing.T, rnd *rand.Rand) {
	t.Helper()
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	r := NewRecord("e", Settings{Holders: 1 + rnd.IntN(4), ErrorCooldown: time.Duration(rnd.IntN(4)) * time.Second, HandoverDelay: time.Duration(rnd.IntN(3)) * time.Second, Preempt: rnd.IntN(2) == 0})
	type acting struct {
		id    string
		term  uint64
		until time.Time // zero while open
	}
	var act []acting // holderships that may act
	// expires is each candidate's life as the heartbeats accepted give
	// it, kept here apart from the Record: the latest its step-down
	// deadline can be.
	expires := map[string]time.Time{}
	var lastTerm uint64
	now := t0
	// apply checks the events of a step; verdict says whether a
	// leader.end with reason error in them is the gateway's (FailLeader)
	// rather than the holder's own report.
	apply := func(ev []Event, verdict bool) {
		t.Helper()
		for _, e := range ev {
			switch e.Type {
			case EventLeaderBegin:
				if e.Term <= lastTerm {
					t.Fatalf("term %d begins after term %d", e.Term, lastTerm)
				}
				lastTerm = e.Term
				n := 0
				for _, a := range act {
					if a.until.IsZero() || a.until.After(e.Time) {
						n++
					}
				}
				if n >= r.Settings.HolderLimit() {
					t.Fatalf("%s begins term %d at %v while %d may act (%+v), holders %d", e.Candidate.ID, e.Term, e.Time.Sub(t0), n, act, r.Settings.HolderLimit())
				}
				act = append(act, acting{id: e.Candidate.ID, term: e.Term})
			case EventLeaderEnd:
				i := slices.IndexFunc(act, func(a acting) bool { return a.term == e.Term && a.until.IsZero() })
				if i < 0 {
					t.Fatalf("end of term %d, which is not open", e.Term)
				}
				if e.Reason == ReasonHoldersReduced || (e.Reason == ReasonError && verdict) {
					// The holder may not know: it may act until its life
					// as of now runs out.
					act[i].until = expires[e.Candidate.ID]
					continue
				}
				// Its own word (it stopped first), or it expired (its
				// deadline passed), or it handed over (it stopped first).
				act = slices.Delete(act, i, i+1)
			}
		}
	}
	for range 300 {
		now = now.Add(time.Duration(rnd.IntN(1500)) * time.Millisecond)
		id := ids[rnd.IntN(len(ids))]
		tok := HashToken(id)
		var (
			ev  []Event
			err error
		)
		verdict := false
		switch op := rnd.IntN(11); op {
		case 0, 1:
			ttl := time.Duration(1+rnd.IntN(5)) * time.Second
			if ev, err = r.Campaign(now, Candidacy{ID: id, TTL: ttl, Priority: rnd.IntN(3), TokenHash: tok}); err == nil {
				expires[id] = now.Add(ttl)
			}
		case 2, 3:
			if ev, err = r.Heartbeat(now, id, tok); err == nil {
				expires[id] = now.Add(r.Find(id).TTL)
			}
		case 4:
			ev, _ = r.Resign(now, id, tok)
		case 5:
			ev, _ = r.ReportError(now, id, tok, "")
		case 6:
			var term uint64
			if e := r.Find(id); e != nil {
				term = e.Term
			}
			ev, _ = r.FailLeader(now, id, tok, term, "")
			verdict = true
		case 7:
			// What comes due before the change is checked against the
			// setting it came due under.
			apply(r.Advance(now), false)
			s := r.Settings
			s.Holders = 1 + rnd.IntN(4)
			ev = r.Configure(now, s)
		case 8:
			ev, _ = r.Transfer(now, "", id, "")
			if rnd.IntN(2) == 0 && r.Holding() > 0 {
				more, _ := r.Transfer(now, r.Line[rnd.IntN(r.Holding())].ID, id, "")
				ev = append(ev, more...)
			}
		case 9:
			ev, _ = r.Handover(now, id, tok)
		default:
			ev = r.Advance(now)
		}
		apply(ev, verdict)
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		if k := r.Holding(); k > r.Settings.HolderLimit() {
			t.Fatalf("%d hold, above %d", k, r.Settings.HolderLimit())
		}
	}
}
