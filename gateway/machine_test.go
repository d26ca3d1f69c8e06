package gateway

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// step is one operation of a scripted election, at an offset from t0.
type step struct {
	at   time.Duration
	op   string // campaign, heartbeat, resign, error, advance
	id   string
	ttl  time.Duration
	want string // expected events, as "type(id,reason)" joined by spaces; "-" for none
}

func eventString(ev []Event) string {
	if len(ev) == 0 {
		return "-"
	}
	s := make([]string, len(ev))
	for i, e := range ev {
		s[i] = string(e.Type) + "(" + e.Candidate.ID + "," + e.Reason + ")"
	}
	return strings.Join(s, " ")
}

func TestRecordScripts(t *testing.T) {
	tests := []struct {
		name     string
		settings Settings
		steps    []step
		line     string // final line, "id:state" joined by spaces
		term     uint64
	}{
		{
			name: "resign hands over",
			steps: []step{
				{0, "campaign", "a", 10 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{0, "campaign", "b", 10 * time.Second, "candidate.joined(b,campaign)"},
				{time.Second, "resign", "a", 0, "leader.end(a,resigned) candidate.left(a,resigned) leader.begin(b,resigned)"},
			},
			line: "b:leader", term: 2,
		},
		{
			name: "expiry hands over in time order",
			steps: []step{
				{0, "campaign", "a", 2 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{0, "campaign", "b", 3 * time.Second, "candidate.joined(b,campaign)"},
				{0, "campaign", "c", 9 * time.Second, "candidate.joined(c,campaign)"},
				{5 * time.Second, "advance", "", 0, "leader.end(a,expired) candidate.left(a,expired) leader.begin(b,expired) leader.end(b,expired) candidate.left(b,expired) leader.begin(c,expired)"},
			},
			line: "c:leader", term: 3,
		},
		{
			name:     "handover delay after expiry only",
			settings: Settings{HandoverDelay: 4 * time.Second},
			steps: []step{
				{0, "campaign", "a", 2 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{0, "campaign", "b", 60 * time.Second, "candidate.joined(b,campaign)"},
				{3 * time.Second, "advance", "", 0, "leader.end(a,expired) candidate.left(a,expired)"},
				{5 * time.Second, "campaign", "c", 60 * time.Second, "candidate.joined(c,campaign)"},
				{6 * time.Second, "advance", "", 0, "leader.begin(b,expired)"},
				{7 * time.Second, "resign", "b", 0, "leader.end(b,resigned) candidate.left(b,resigned) leader.begin(c,resigned)"},
			},
			line: "c:leader", term: 3,
		},
		{
			name:     "error cooldown and rejoin at the back",
			settings: Settings{ErrorCooldown: 5 * time.Second},
			steps: []step{
				{0, "campaign", "a", 60 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{0, "campaign", "b", 60 * time.Second, "candidate.joined(b,campaign)"},
				{0, "campaign", "c", 60 * time.Second, "candidate.joined(c,campaign)"},
				{time.Second, "error", "a", 0, "leader.error(a,) leader.end(a,error) leader.begin(b,error)"},
				{2 * time.Second, "error", "c", 0, "-"},
				{6 * time.Second, "advance", "", 0, "candidate.joined(a,rejoined)"},
				{7 * time.Second, "advance", "", 0, "candidate.joined(c,rejoined)"},
			},
			line: "b:leader a:follower c:follower", term: 2,
		},
		{
			name:     "expiry in cooldown wins over rejoin",
			settings: Settings{ErrorCooldown: 5 * time.Second},
			steps: []step{
				{0, "campaign", "a", 3 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{time.Second, "error", "a", 0, "leader.error(a,) leader.end(a,error)"},
				{10 * time.Second, "advance", "", 0, "candidate.left(a,expired)"},
			},
			line: "", term: 1,
		},
		{
			name: "heartbeat keeps a candidate",
			steps: []step{
				{0, "campaign", "a", 2 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{1500 * time.Millisecond, "heartbeat", "a", 0, "-"},
				{3 * time.Second, "heartbeat", "a", 0, "-"},
				{4 * time.Second, "advance", "", 0, "-"},
			},
			line: "a:leader", term: 1,
		},
		{
			name: "term survives an empty election",
			steps: []step{
				{0, "campaign", "a", 2 * time.Second, "candidate.joined(a,campaign) leader.begin(a,)"},
				{5 * time.Second, "campaign", "b", 2 * time.Second, "leader.end(a,expired) candidate.left(a,expired) candidate.joined(b,campaign) leader.begin(b,expired)"},
			},
			line: "b:leader", term: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecord("e", tt.settings)
			tok := HashToken("t")
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				var (
					ev  []Event
					err error
				)
				switch s.op {
				case "campaign":
					ev, err = r.Campaign(now, Candidacy{ID: s.id, TTL: s.ttl, TokenHash: tok})
				case "heartbeat":
					ev, err = r.Heartbeat(now, s.id, tok)
				case "resign":
					ev, err = r.Resign(now, s.id, tok)
				case "error":
					ev, err = r.ReportError(now, s.id, tok, "boom")
				case "advance":
					ev = r.Advance(now)
				}
				if err != nil {
					t.Fatalf("step %d %s %s: %v", i, s.op, s.id, err)
				}
				if got := eventString(ev); got != s.want {
					t.Fatalf("step %d %s %s:\n got %s\nwant %s", i, s.op, s.id, got, s.want)
				}
				if err := r.Check(); err != nil {
					t.Fatalf("step %d: %v", i, err)
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

func TestRecordBeginCarriesPreviousLeadership(t *testing.T) {
	r := NewRecord("e", Settings{})
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "b", TTL: time.Minute, TokenHash: tok})
	ev, err := r.Resign(t0.Add(time.Second), "a", tok)
	if err != nil {
		t.Fatal(err)
	}
	begin := ev[len(ev)-1]
	if begin.Type != EventLeaderBegin || begin.Previous == nil || *begin.Previous != (TermRef{ID: "a", Term: 1}) || begin.Term != 2 {
		t.Fatalf("begin = %+v, previous %+v", begin, begin.Previous)
	}
}

func TestRecordRefusalsLeaveStateUnchanged(t *testing.T) {
	r := NewRecord("e", Settings{})
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok})
	before := r.Snapshot()
	now := t0.Add(time.Second)
	if _, err := r.Campaign(now, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok}); err == nil {
		t.Error("duplicate campaign accepted")
	}
	for _, op := range []func() ([]Event, error){
		func() ([]Event, error) { return r.Heartbeat(now, "a", HashToken("wrong")) },
		func() ([]Event, error) { return r.Resign(now, "a", HashToken("wrong")) },
		func() ([]Event, error) { return r.ReportError(now, "a", HashToken("wrong"), "") },
		func() ([]Event, error) { return r.Resign(now, "nobody", tok) },
	} {
		if ev, err := op(); err == nil || len(ev) != 0 {
			t.Errorf("refused op: events %v, err %v", ev, err)
		}
	}
	after := r.Snapshot()
	if !slices.EqualFunc(before.Candidates, after.Candidates, func(x, y Candidate) bool { return x.ID == y.ID && x.State == y.State && x.ExpiresAt.Equal(y.ExpiresAt) }) || before.Term != after.Term {
		t.Fatalf("state changed: %+v -> %+v", before, after)
	}
}

func TestNextDeadlineIsTheEarliest(t *testing.T) {
	r := NewRecord("e", Settings{ErrorCooldown: time.Second})
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("empty record has a deadline")
	}
	tok := HashToken("t")
	r.Campaign(t0, Candidacy{ID: "a", TTL: time.Minute, TokenHash: tok})
	r.Campaign(t0, Candidacy{ID: "b", TTL: 30 * time.Second, TokenHash: tok})
	if at, _ := r.NextDeadline(); !at.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("deadline %v, want b's expiry", at)
	}
	r.ReportError(t0.Add(time.Second), "a", tok, "")
	if at, _ := r.NextDeadline(); !at.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("deadline %v, want a's cooldown end", at)
	}
}

func TestRecordStatusAgreesWithStatusOf(t *testing.T) {
	r := NewRecord("e", Settings{ErrorCooldown: time.Minute})
	tok := HashToken("t")
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		r.Campaign(t0, Candidacy{ID: id, TTL: time.Hour, TokenHash: tok})
	}
	r.ReportError(t0.Add(time.Second), "a", tok, "")
	r.ReportError(t0.Add(2*time.Second), "c", tok, "")
	snap := r.Snapshot()
	for _, id := range append(ids, "nobody") {
		got, ok1 := r.Status(id)
		want, ok2 := StatusOf(snap, id)
		if ok1 != ok2 || !reflect.DeepEqual(got, want) {
			t.Errorf("Status(%q) = %+v, %v; StatusOf = %+v, %v", id, got, ok1, want, ok2)
		}
	}
}

// TestEngineTimedRecordWaitsForItsEngine: in an EngineTimed Record no
// clock, however far ahead, ends a handover delay or a cooldown; only
// EndHandover and EndCooldown do, and then as Advance would have.
func TestEngineTimedRecordWaitsForItsEngine(t *testing.T) {
	r := NewRecord("e", Settings{ErrorCooldown: time.Second, HandoverDelay: time.Second})
	r.EngineTimed = true
	late := t0.Add(24 * time.Hour)
	if _, err := r.Campaign(t0, Candidacy{ID: "a", TTL: time.Second, TokenHash: "ha"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c"} {
		if _, err := r.Campaign(t0, Candidacy{ID: id, TTL: time.Hour, TokenHash: "h" + id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range r.Line {
		r.Line[i].ExpiresAt = time.Time{} // liveness decided outside, as in the backends that use EngineTimed
	}
	r.Expire(t0.Add(time.Second), "a")
	if _, err := r.ReportError(t0.Add(time.Second), "c", "hc", ""); err != nil {
		t.Fatal(err)
	}
	if at, ok := r.NextDeadline(); ok {
		t.Fatalf("NextDeadline %s: want none for engine-timed steps", at)
	}
	if got := eventString(r.Advance(late)); got != "-" || r.Holding() != 0 || len(r.Delays) != 1 || len(r.Cooling) != 1 {
		t.Fatalf("Advance a day later: %s, %d holding, delays %+v, cooling %d: want nothing ended", got, r.Holding(), r.Delays, len(r.Cooling))
	}
	if got := eventString(r.EndCooldown(late, "b")); got != "-" {
		t.Fatalf("EndCooldown of a candidate not cooling: %s, want no events", got)
	}
	if got, want := eventString(r.EndHandover(late, 1)), "leader.begin(b,expired)"; got != want {
		t.Fatalf("EndHandover: %s, want %s", got, want)
	}
	if got, want := eventString(r.EndCooldown(late, "c")), "candidate.joined(c,rejoined)"; got != want {
		t.Fatalf("EndCooldown: %s, want %s", got, want)
	}
	if got := eventString(r.EndHandover(late, 1)); got != "-" {
		t.Fatalf("EndHandover without a delay: %s, want no events", got)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
}
