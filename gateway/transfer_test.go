package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// op is one operation of a scripted election with priorities and
// transfers; err is the sentinel the operation must fail with, if any.
type op struct {
	at   time.Duration
	op   string // campaign, heartbeat, resign, error, advance, transfer, leader-transfer, handover, cancel, leader-cancel, configure
	id   string // the candidate, or the transfer's target
	ttl  time.Duration
	prio int
	want string // expected events as in step.want
	err  error
}

func TestRecordTransferScripts(t *testing.T) {
	const long = time.Minute
	tests := []struct {
		name     string
		settings Settings
		ops      []op
		line     string
		term     uint64
	}{
		{
			name: "cooperating leader hands over with the next term",
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{at: time.Second, op: "transfer", id: "c", want: "leader.transfer(c,transferred)"},
				{at: time.Second, op: "transfer", id: "c", want: "-"},
				{at: 2 * time.Second, op: "heartbeat", id: "a", want: "-", err: ErrTransferPending},
				{at: 2 * time.Second, op: "heartbeat", id: "b", want: "-"},
				{at: 3 * time.Second, op: "handover", id: "a", want: "leader.end(a,transferred) leader.begin(c,transferred)"},
				{at: 4 * time.Second, op: "heartbeat", id: "a", want: "-"},
			},
			line: "c:leader b:follower a:follower", term: 2,
		},
		{
			name:     "silent leader keeps the slot until its TTL and the handover delay run out",
			settings: Settings{HandoverDelay: 2 * time.Second},
			ops: []op{
				{op: "campaign", id: "a", ttl: 10 * time.Second, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{at: 5 * time.Second, op: "heartbeat", id: "a", want: "-"},
				{at: 6 * time.Second, op: "transfer", id: "c", want: "leader.transfer(c,transferred)"},
				{at: 9 * time.Second, op: "heartbeat", id: "a", want: "-", err: ErrTransferPending},
				{at: 14 * time.Second, op: "advance", want: "-"},
				{at: 15 * time.Second, op: "advance", want: "leader.end(a,expired) candidate.left(a,expired)"},
				{at: 16 * time.Second, op: "advance", want: "-"},
				{at: 17 * time.Second, op: "advance", want: "leader.begin(c,expired)"},
			},
			line: "c:leader b:follower", term: 2,
		},
		{
			name: "a target that resigns cancels the transfer and the leader heartbeats again",
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{at: time.Second, op: "resign", id: "b", want: "leader.transfer_cancelled(b,resigned) candidate.left(b,resigned)"},
				{at: 2 * time.Second, op: "heartbeat", id: "a", want: "-"},
				{at: 2 * time.Second, op: "handover", id: "a", want: "-", err: ErrNoTransfer},
			},
			line: "a:leader", term: 1,
		},
		{
			name:     "a target that expires or errs cancels the transfer",
			settings: Settings{ErrorCooldown: long},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: 2 * time.Second, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{at: 3 * time.Second, op: "advance", want: "leader.transfer_cancelled(b,expired) candidate.left(b,expired)"},
				{at: 3 * time.Second, op: "transfer", id: "c", want: "leader.transfer(c,transferred)"},
				{at: 4 * time.Second, op: "error", id: "c", want: "leader.transfer_cancelled(c,error)"},
			},
			line: "a:leader c:error", term: 1,
		},
		{
			name: "the leader resigning completes the transfer to its target",
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "leader-transfer", id: "c", want: "leader.transfer(c,transferred)"},
				{at: time.Second, op: "resign", id: "a", want: "leader.end(a,resigned) candidate.left(a,resigned) leader.begin(c,resigned)"},
			},
			line: "c:leader b:follower", term: 2,
		},
		{
			name: "refusals",
			ops: []op{
				{op: "transfer", id: "a", want: "-", err: ErrNoLeader},
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "transfer", id: "a", want: "-", err: ErrNotFollower},
				{op: "transfer", id: "nobody", want: "-", err: ErrNotFollower},
				{op: "bad-token-transfer", id: "b", want: "-", err: ErrNotLeader},
				{op: "handover", id: "b", want: "-", err: ErrNotLeader},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{op: "transfer", id: "c", want: "-", err: ErrTransferPending},
				{op: "handover", id: "b", want: "-", err: ErrNotLeader},
			},
			line: "a:leader b:follower c:follower", term: 1,
		},
		{
			name:     "a cancelled transfer leaves the leader leading, and its heartbeats count again",
			settings: Settings{HandoverDelay: time.Second},
			ops: []op{
				{op: "cancel", want: "-", err: ErrNoTransfer},
				{op: "campaign", id: "a", ttl: 10 * time.Second, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "cancel", want: "-", err: ErrNoTransfer},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{at: time.Second, op: "heartbeat", id: "a", want: "-", err: ErrTransferPending},
				{at: time.Second, op: "bad-token-cancel", want: "-", err: ErrNotLeader},
				{at: 2 * time.Second, op: "cancel", want: "leader.transfer_cancelled(b,cancelled)"},
				{at: 2 * time.Second, op: "cancel", want: "-", err: ErrNoTransfer},
				{at: 3 * time.Second, op: "handover", id: "a", want: "-", err: ErrNoTransfer},
				{at: 9 * time.Second, op: "heartbeat", id: "a", want: "-"},
				{at: 15 * time.Second, op: "advance", want: "-"},
				{at: 15 * time.Second, op: "leader-transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{at: 16 * time.Second, op: "leader-cancel", want: "leader.transfer_cancelled(b,cancelled)"},
			},
			line: "a:leader b:follower", term: 1,
		},
		{
			name:     "a transfer whose leadership has ended cannot be cancelled",
			settings: Settings{HandoverDelay: 5 * time.Second},
			ops: []op{
				{op: "campaign", id: "a", ttl: 2 * time.Second, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, want: "candidate.joined(c,campaign)"},
				{op: "transfer", id: "c", want: "leader.transfer(c,transferred)"},
				{at: 3 * time.Second, op: "cancel", want: "leader.end(a,expired) candidate.left(a,expired)", err: ErrNoTransfer},
				{at: 8 * time.Second, op: "advance", want: "leader.begin(c,expired)"},
			},
			line: "c:leader b:follower", term: 2,
		},
		{
			name:     "a preemption is cancelled only once preempt is off",
			settings: Settings{Preempt: true},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, prio: 2, want: "candidate.joined(b,campaign) leader.transfer(b,preempted)"},
				{op: "cancel", want: "-", err: ErrPreempting},
				{op: "configure-no-preempt", want: "-"},
				{op: "cancel", want: "leader.transfer_cancelled(b,cancelled)"},
				{at: time.Second, op: "heartbeat", id: "a", want: "-"},
			},
			line: "a:leader b:follower", term: 1,
		},
		{
			name:     "priorities order the line and rejoin at the back of their priority",
			settings: Settings{ErrorCooldown: time.Second},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, prio: 1, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, prio: 5, want: "candidate.joined(c,campaign)"},
				{op: "campaign", id: "d", ttl: long, prio: 1, want: "candidate.joined(d,campaign)"},
				{op: "campaign", id: "e", ttl: long, prio: -1, want: "candidate.joined(e,campaign)"},
				{op: "error", id: "b", want: "-"},
				{at: 2 * time.Second, op: "campaign", id: "f", ttl: long, prio: 1, want: "candidate.joined(b,rejoined) candidate.joined(f,campaign)"},
				{at: 3 * time.Second, op: "resign", id: "a", want: "leader.end(a,resigned) candidate.left(a,resigned) leader.begin(c,resigned)"},
			},
			line: "c:leader d:follower b:follower f:follower e:follower", term: 2,
		},
		{
			name:     "preempt transfers to a follower of higher priority",
			settings: Settings{Preempt: true},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, prio: 1, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, prio: 1, want: "candidate.joined(b,campaign)"},
				{op: "campaign", id: "c", ttl: long, prio: 3, want: "candidate.joined(c,campaign) leader.transfer(c,preempted)"},
				{at: time.Second, op: "handover", id: "a", want: "leader.end(a,preempted) leader.begin(c,preempted)"},
				{at: 2 * time.Second, op: "campaign", id: "d", ttl: long, prio: 9, want: "candidate.joined(d,campaign) leader.transfer(d,preempted)"},
				{at: 2 * time.Second, op: "heartbeat", id: "c", want: "-", err: ErrTransferPending},
				{at: 3 * time.Second, op: "handover", id: "c", want: "leader.end(c,preempted) leader.begin(d,preempted)"},
			},
			line: "d:leader c:follower b:follower a:follower", term: 3,
		},
		{
			name:     "preempt moves a pending preemption to a follower of higher priority",
			settings: Settings{Preempt: true},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, prio: 1, want: "candidate.joined(b,campaign) leader.transfer(b,preempted)"},
				{op: "campaign", id: "c", ttl: long, prio: 5, want: "candidate.joined(c,campaign) leader.transfer(c,preempted)"},
				{op: "handover", id: "a", want: "leader.end(a,preempted) leader.begin(c,preempted)"},
			},
			line: "c:leader b:follower a:follower", term: 2,
		},
		{
			name:     "preempt leaves an operator's transfer alone",
			settings: Settings{Preempt: true},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{op: "campaign", id: "c", ttl: long, prio: 5, want: "candidate.joined(c,campaign)"},
				{op: "handover", id: "a", want: "leader.end(a,transferred) leader.begin(b,transferred) leader.transfer(c,preempted)"},
			},
			line: "b:leader c:follower a:follower", term: 2,
		},
		{
			name:     "cancelling an operator's transfer starts the preemption it held back",
			settings: Settings{Preempt: true},
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{op: "campaign", id: "c", ttl: long, prio: 5, want: "candidate.joined(c,campaign)"},
				{op: "cancel", want: "leader.transfer_cancelled(b,cancelled) leader.transfer(c,preempted)"},
				{op: "advance", want: "-"},
			},
			line: "a:leader c:follower b:follower", term: 1,
		},
		{
			name: "cancelling a transfer lets its target take a slot it waited beside",
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, want: "candidate.joined(b,campaign)"},
				{op: "transfer", id: "b", want: "leader.transfer(b,transferred)"},
				{op: "configure-holders-3", want: "-"},
				{op: "cancel", want: "leader.transfer_cancelled(b,cancelled) leader.begin(b,)"},
			},
			line: "a:leader b:leader", term: 2,
		},
		{
			name: "turning preempt on starts the transfer",
			ops: []op{
				{op: "campaign", id: "a", ttl: long, want: "candidate.joined(a,campaign) leader.begin(a,)"},
				{op: "campaign", id: "b", ttl: long, prio: 2, want: "candidate.joined(b,campaign)"},
				{op: "configure", want: "leader.transfer(b,preempted)"},
			},
			line: "a:leader b:follower", term: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecord("e", tt.settings)
			tok := HashToken("t")
			for i, s := range tt.ops {
				now := t0.Add(s.at)
				var (
					ev  []Event
					err error
				)
				switch s.op {
				case "campaign":
					ev, err = r.Campaign(now, Candidacy{ID: s.id, TTL: s.ttl, Priority: s.prio, TokenHash: tok})
				case "heartbeat":
					ev, err = r.Heartbeat(now, s.id, tok)
				case "resign":
					ev, err = r.Resign(now, s.id, tok)
				case "error":
					ev, err = r.ReportError(now, s.id, tok, "boom")
				case "advance":
					ev = r.Advance(now)
				case "transfer":
					ev, err = r.Transfer(now, "", s.id, "")
				case "leader-transfer":
					ev, err = r.Transfer(now, "", s.id, tok)
				case "bad-token-transfer":
					ev, err = r.Transfer(now, "", s.id, HashToken("other"))
				case "handover":
					ev, err = r.Handover(now, s.id, tok)
				case "configure", "configure-no-preempt":
					st := r.Settings
					st.Preempt = s.op == "configure"
					ev = r.Configure(now, st)
				case "configure-holders-3":
					st := r.Settings
					st.Holders = 3
					ev = r.Configure(now, st)
				case "cancel":
					ev, err = r.CancelTransfer(now, "")
				case "leader-cancel":
					ev, err = r.CancelTransfer(now, tok)
				case "bad-token-cancel":
					ev, err = r.CancelTransfer(now, HashToken("other"))
				default:
					t.Fatalf("unknown op %q", s.op)
				}
				if (s.err == nil && err != nil) || (s.err != nil && !errors.Is(err, s.err)) {
					t.Fatalf("op %d %s %s: err %v, want %v", i, s.op, s.id, err, s.err)
				}
				if got := eventString(ev); got != s.want {
					t.Fatalf("op %d %s %s:\n got %s\nwant %s", i, s.op, s.id, got, s.want)
				}
				if err := r.Check(); err != nil {
					t.Fatalf("op %d: %v", i, err)
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

// TestRecordTransferNeverOverlaps drives a transfer with a silent leader
// through time in small steps: the target's leadership never begins before
// the old leader's frozen expiry plus the handover delay, which is the
// latest moment a client obeying the step-down rule stops acting.
func TestRecordTransferNeverOverlaps(t *testing.T) {
	const ttl, delay = 10 * time.Second, 3 * time.Second
	r := NewRecord("e", Settings{HandoverDelay: delay})
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: ttl, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "b", TTL: time.Hour, TokenHash: tok})
	lastOK := t0.Add(4 * time.Second)
	if _, err := r.Heartbeat(lastOK, "a", tok); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Transfer(lastOK.Add(time.Second), "", "b", ""); err != nil {
		t.Fatal(err)
	}
	for now := lastOK.Add(time.Second); now.Before(lastOK.Add(ttl + delay + 2*time.Second)); now = now.Add(100 * time.Millisecond) {
		_, err := r.Heartbeat(now, "a", tok) // refused: never extends a's life
		for _, e := range r.Advance(now) {
			if e.Type == EventLeaderBegin && e.Time.Before(lastOK.Add(ttl+delay)) {
				t.Fatalf("b begins at %v, before a's expiry plus the delay %v", e.Time, lastOK.Add(ttl+delay))
			}
		}
		if r.holder("a") >= 0 && !errors.Is(err, ErrTransferPending) {
			t.Fatalf("heartbeat of a at %v: %v, want a refusal", now, err)
		}
	}
	if l := r.leader(); l == nil || l.ID != "b" || l.Term != 2 {
		t.Fatalf("leader %+v, want b in term 2", l)
	}
}

func TestRecordTransferSurvivesJSON(t *testing.T) {
	r := NewRecord("e", Settings{Preempt: true})
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "b", TTL: time.Minute, Priority: 2, TokenHash: tok})
	b, err := jsonRoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	if b.Pending == nil || b.Pending.To != "b" || b.Pending.Reason != ReasonPreempted || b.Line[1].Priority != 2 || !b.Settings.Preempt {
		t.Fatalf("after a JSON round trip: %+v", b)
	}
	plain := NewRecord("e", Settings{})
	plain.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok})
	if s, _ := jsonString(plain); strings.Contains(s, "priority") || strings.Contains(s, "transfer") || strings.Contains(s, "preempt") {
		t.Fatalf("a record without priorities or transfers carries their members: %s", s)
	}
}

func jsonRoundTrip(r *Record) (*Record, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var out Record
	return &out, json.Unmarshal(b, &out)
}

func jsonString(r *Record) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

func TestRecordTargetIsNextDuringTheHandoverDelay(t *testing.T) {
	r := NewRecord("e", Settings{HandoverDelay: 5 * time.Second})
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: 2 * time.Second, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "b", TTL: time.Hour, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "c", TTL: time.Hour, TokenHash: tok})
	if _, err := r.Transfer(t0, "", "c", ""); err != nil {
		t.Fatal(err)
	}
	r.Advance(t0.Add(3 * time.Second)) // a expired; the delay runs
	r.Campaign(t0.Add(3*time.Second), Candidacy{ID: "d", TTL: time.Hour, Priority: 9, TokenHash: tok})
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	st, _ := r.Status("c")
	if st.Position != 0 || st.Leader != nil || st.Transfer == nil || st.Transfer.To != "c" {
		t.Fatalf("c during the delay: %+v, want next (position 0) with the transfer pending", st)
	}
	if d, _ := r.Status("d"); d.Position != 1 {
		t.Fatalf("d (priority 9) during the delay at %d, want 1: behind the target", d.Position)
	}
	r.Advance(t0.Add(8 * time.Second))
	if l := r.leader(); l == nil || l.ID != "c" || l.Term != 2 || r.Pending != nil {
		t.Fatalf("after the delay: leader %+v, pending %+v", l, r.Pending)
	}
}
