package soak

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// answer is an operation of candidate id in election "e" from start to
// end (ms) whose answer says state and term, with leader leading term.
func answer(kind bench.Kind, id string, start, end int, state client.State, term uint64, leader string) bench.Op {
	op := bench.Op{Kind: kind, Election: "e", Candidate: id, Start: at(start), End: at(end)}
	op.Status = client.Status{Election: "e", ID: id, State: state, Term: term}
	if leader != "" {
		op.Status.Leader = &client.Leader{ID: leader, Term: term}
	}
	return op
}

func failed(kind bench.Kind, id string, start, end int, err error) bench.Op {
	return bench.Op{Kind: kind, Election: "e", Candidate: id, Start: at(start), End: at(end), Err: err}
}

func ev(sub int, id, typ, candidate string, term uint64) Event {
	return Event{Subscriber: sub, ID: id, Type: typ, Election: "e", Term: term, Candidate: candidate}
}

// evAt is ev received at t0 plus ms milliseconds.
func evAt(ms, sub int, id, typ, candidate string, term uint64) Event {
	e := ev(sub, id, typ, candidate, term)
	e.Received = at(ms)
	return e
}

// dl is a delivery of event id of election "e" the receiver accepted.
func dl(id, typ, candidate string, term uint64) Delivery {
	return Delivery{Endpoint: "e", ID: id, Type: typ, Election: "e", Term: term, Candidate: candidate}
}

// refused is a request for event id of election "e" the receiver refused.
func refused(id, problem string) Delivery {
	return Delivery{Endpoint: "e", ID: id, Problem: problem}
}

// withBody is e carrying body.
func withBody(e Event, body string) Event {
	e.Body = []byte(body)
	return e
}

// withBodyDl is d carrying body.
func withBodyDl(d Delivery, body string) Delivery {
	d.Body = []byte(body)
	return d
}

const (
	begin = client.EventLeaderBegin
	end   = client.EventLeaderEnd
)

func TestCheckFindsEachKindOfViolation(t *testing.T) {
	t.Parallel()
	notFound := &client.Problem{Type: client.ProblemTypePrefix + "candidate-not-found", Status: 404}
	cleanEvents := []Event{
		ev(0, "10-1", begin, "a", 1), ev(0, "20-1", end, "a", 1), ev(0, "20-2", begin, "b", 2),
		ev(1, "10-1", begin, "a", 1), ev(1, "20-1", end, "a", 1), ev(1, "20-2", begin, "b", 2),
	}
	tests := []struct {
		name   string
		ops    []bench.Op
		events []Event
		// deliveries, when set, are what the webhook of election "e"
		// got; its subscription is then in place from the start.
		deliveries []Delivery
		want       []string // properties, in the checker's order; none for a clean history
	}{
		{
			name: "a resigns and b leads after",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Campaign, "b", 20, 30, client.StateFollower, 1, "a"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 1, "a"),
				{Kind: bench.Resign, Election: "e", Candidate: "a", Start: at(1500), End: at(1510)},
				answer(bench.Heartbeat, "b", 1600, 1610, client.StateLeader, 2, "b"),
			},
			events: cleanEvents,
		},
		{
			name: "a's lease lapses while the gateway is down, then b leads",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				failed(bench.Heartbeat, "a", 1000, 1001, errors.New("connection refused")),
				failed(bench.Heartbeat, "a", 2000, 2001, errors.New("connection refused")),
				answer(bench.Heartbeat, "b", 3100, 3110, client.StateLeader, 2, "b"),
				failed(bench.Heartbeat, "a", 3200, 3210, notFound),
			},
		},
		{
			name: "b is told it leads after a's step-down deadline, before a's promise ran out",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "b", 3600, 3700, client.StateLeader, 2, "b"),
			},
			want: []string{EarlyPromotion},
		},
		{
			name: "a's candidacy is lost early, so it stops in time, and b is promoted early",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 1, "a"),
				failed(bench.Heartbeat, "a", 1500, 1510, notFound),
				answer(bench.Heartbeat, "b", 2000, 2010, client.StateLeader, 2, "b"),
			},
			want: []string{EarlyPromotion},
		},
		{
			name: "b leads while a's lease runs",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "b", 1500, 1510, client.StateLeader, 2, "b"),
			},
			want: []string{Overlap, EarlyPromotion},
		},
		{
			name: "a term names two leaders",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Heartbeat, "b", 5000, 5010, client.StateFollower, 1, "c"),
			},
			want: []string{TermReused},
		},
		{
			name:   "an event arrives twice",
			events: []Event{ev(0, "10-1", begin, "a", 1), ev(0, "10-1", begin, "a", 1)},
			want:   []string{Duplicate},
		},
		{
			name:   "events arrive out of order",
			events: []Event{ev(0, "10-2", client.EventCandidateJoined, "b", 1), ev(0, "10-1", client.EventCandidateJoined, "c", 1)},
			want:   []string{OutOfOrder},
		},
		{
			name:   "an end is missing",
			events: []Event{ev(0, "10-1", begin, "a", 1), ev(0, "30-1", begin, "b", 2)},
			want:   []string{Gap},
		},
		{
			name:   "a begin of a lower term",
			events: []Event{ev(0, "10-1", begin, "a", 2), ev(0, "20-1", end, "a", 2), ev(0, "30-1", begin, "b", 1)},
			want:   []string{TermNotRising},
		},
		{
			name: "one subscriber misses an event the other got",
			events: []Event{
				ev(0, "10-1", client.EventCandidateJoined, "a", 1), ev(0, "20-1", client.EventCandidateJoined, "b", 1), ev(0, "30-1", client.EventCandidateJoined, "c", 1),
				ev(1, "10-1", client.EventCandidateJoined, "a", 1), ev(1, "30-1", client.EventCandidateJoined, "c", 1),
			},
			want: []string{Disagreement},
		},
		{
			name: "campaigns and a leadership the streams show",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Campaign, "b", 20, 30, client.StateFollower, 1, "a"),
			},
			events: []Event{
				evAt(5, 0, "10-1", client.EventCandidateJoined, "a", 1), evAt(5, 0, "10-2", begin, "a", 1),
				evAt(25, 0, "20-1", client.EventCandidateJoined, "b", 1), evAt(5000, 0, "90-1", client.EventCandidateJoined, "c", 1),
			},
		},
		{
			name: "an acknowledged campaign no stream shows",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
				answer(bench.Campaign, "b", 20, 30, client.StateFollower, 1, "a"),
			},
			events: []Event{
				evAt(5, 0, "10-1", client.EventCandidateJoined, "a", 1), evAt(5, 0, "10-2", begin, "a", 1),
				evAt(5000, 0, "90-1", client.EventCandidateJoined, "c", 1),
			},
			want: []string{WriteLost},
		},
		{
			name: "a leadership told that no stream began",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 2, "a"),
			},
			events: []Event{
				evAt(5, 0, "10-1", client.EventCandidateJoined, "a", 1), evAt(5000, 0, "90-1", client.EventCandidateJoined, "c", 1),
			},
			want: []string{WriteLost},
		},
		{
			name: "a write a reset skipped over is not checked",
			ops: []bench.Op{
				answer(bench.Campaign, "b", 20, 30, client.StateFollower, 1, "a"),
			},
			events: []Event{
				{Subscriber: 0, Type: client.EventReset, Election: "e", Received: at(40)},
				evAt(5000, 0, "90-1", client.EventCandidateJoined, "c", 1),
			},
		},
		{
			name:       "every event reaches the webhook, one twice in a row",
			events:     cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), dl("20-1", end, "a", 1), dl("20-1", end, "a", 1), dl("20-2", begin, "b", 2)},
		},
		{
			name:       "an event never reaches the webhook",
			events:     cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), dl("20-2", begin, "b", 2)},
			want:       []string{Undelivered},
		},
		{
			name:       "the webhook gets an event after a later one",
			events:     cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), dl("20-2", begin, "b", 2), dl("20-1", end, "a", 1)},
			want:       []string{DeliveryOutOfOrder},
		},
		{
			name:   "a request the receiver refuses, then the same event signed",
			events: cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), refused("20-1", "no signature matches"),
				dl("20-1", end, "a", 1), dl("20-2", begin, "b", 2)},
			want: []string{DeliveryRefused},
		},
		{
			name:       "the webhook names another leader than the streams",
			events:     cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), dl("20-1", end, "a", 1), dl("20-2", begin, "c", 2)},
			want:       []string{DeliveryDisagrees},
		},
		{
			name: "an event's body differs between two streams and the webhook",
			events: []Event{
				withBody(ev(0, "10-1", begin, "a", 1), `{"type":"leader.begin","timestamp":"2026-11-23T12:00:00.1Z"}`),
				withBody(ev(1, "10-1", begin, "a", 1), `{"type":"leader.begin","timestamp":"2026-11-23T12:00:00.2Z"}`),
			},
			deliveries: []Delivery{withBodyDl(dl("10-1", begin, "a", 1), `{"type":"leader.begin","timestamp":"2026-11-23T12:00:00.1Z"}`),
				withBodyDl(dl("10-1", begin, "a", 1), `{"type":"leader.begin","timestamp":"2026-11-23T12:00:00.3Z"}`)},
			want: []string{BodyMismatch, BodyMismatch},
		},
		{
			name: "an event's body is the same everywhere",
			events: []Event{
				withBody(ev(0, "10-1", begin, "a", 1), `{"type":"leader.begin"}`), withBody(ev(1, "10-1", begin, "a", 1), `{"type":"leader.begin"}`),
			},
			deliveries: []Delivery{withBodyDl(dl("10-1", begin, "a", 1), `{"type":"leader.begin"}`)},
		},
		{
			name:   "a refused request is never sent again",
			events: cleanEvents,
			deliveries: []Delivery{dl("10-1", begin, "a", 1), dl("20-1", end, "a", 1),
				refused("20-2", "election \"f\" is not the endpoint's")},
			want: []string{DeliveryRefused, Undelivered},
		},
	}
	for _, tt := range tests {
		h := &History{}
		for _, op := range tt.ops {
			h.ObserveOp(op)
		}
		h.events = tt.events
		if tt.deliveries != nil {
			h.Subscribe("e")
			for _, d := range tt.deliveries {
				h.ObserveDelivery(d)
			}
		}
		got := Check(h, Rules{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, End: at(10_000)})
		var props []string
		for _, v := range got {
			props = append(props, v.Property)
		}
		if strings.Join(props, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: violations %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLeadershipsFollowTheStepDownRule(t *testing.T) {
	t.Parallel()
	ls := Leaderships([]bench.Op{
		answer(bench.Campaign, "a", 0, 10, client.StateLeader, 1, "a"),
		answer(bench.Heartbeat, "a", 1000, 1010, client.StateLeader, 1, "a"),
		failed(bench.Heartbeat, "a", 2000, 2010, errors.New("timeout")),
		// Back after its lease lapsed (at 1000+3000-500): a new span.
		answer(bench.Heartbeat, "a", 4000, 4020, client.StateLeader, 1, "a"),
		answer(bench.Heartbeat, "a", 5000, 5010, client.StateFollower, 2, "b"),
	}, Rules{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, End: at(10_000)})
	if len(ls) != 2 || !ls[0].From.Equal(at(10)) || !ls[0].To.Equal(at(3500)) || !ls[1].From.Equal(at(4020)) || !ls[1].To.Equal(at(5010)) {
		t.Fatalf("leaderships %+v", ls)
	}
}

func TestLostEarlyCountsCandidaciesGoneBeforeTheirPromise(t *testing.T) {
	t.Parallel()
	notFound := &client.Problem{Type: client.ProblemTypePrefix + "candidate-not-found", Status: 404}
	tests := []struct {
		name    string
		ops     []bench.Op
		want    []int  // when each loss was told (ms)
		revoked []bool // whether each was told it was revoked; none when none was
	}{
		{
			name: "gone a second after its heartbeat",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				answer(bench.Heartbeat, "a", 1000, 1010, client.StateFollower, 1, "z"),
				failed(bench.Heartbeat, "a", 2000, 2010, notFound),
			},
			want: []int{2010},
		},
		{
			name: "gone after its TTL ran out",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				failed(bench.Heartbeat, "a", 1000, 1010, errors.New("timeout")),
				failed(bench.Heartbeat, "a", 2990, 3010, notFound),
			},
		},
		{
			name: "resigned, then not found",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				{Kind: bench.Resign, Election: "e", Candidate: "a", Start: at(500), End: at(510)},
				failed(bench.Heartbeat, "a", 1000, 1010, notFound),
			},
		},
		{
			name: "told it was revoked",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				failed(bench.Heartbeat, "a", 1000, 1010, &client.Problem{Type: client.ProblemTypePrefix + "candidate-not-found", Status: 404,
					Ext: map[string]json.RawMessage{"revoked": json.RawMessage(`{"at":"2026-11-23T12:00:00.5Z"}`)}}),
			},
			want:    []int{1010},
			revoked: []bool{true},
		},
		{
			name: "lost twice: once per candidacy",
			ops: []bench.Op{
				answer(bench.Campaign, "a", 0, 10, client.StateFollower, 1, "z"),
				failed(bench.Heartbeat, "a", 1000, 1010, notFound),
				failed(bench.Heartbeat, "a", 1100, 1110, notFound),
				answer(bench.Campaign, "a", 1200, 1210, client.StateFollower, 1, "z"),
				failed(bench.Heartbeat, "a", 2000, 2010, notFound),
			},
			want: []int{1010, 2010},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				got     []int
				revoked []bool
			)
			for _, l := range LostEarly(tt.ops, 3*time.Second) {
				got = append(got, int(l.Told.Sub(t0)/time.Millisecond))
				revoked = append(revoked, l.Revoked)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("lost early at %v ms, want %v", got, tt.want)
			}
			if tt.revoked == nil {
				tt.revoked = make([]bool, len(tt.want))
			}
			if !slices.Equal(revoked, tt.revoked) {
				t.Fatalf("told revoked %v, want %v", revoked, tt.revoked)
			}
		})
	}
}

func TestLongestOutageIsTheLongestTimeWithoutAnAnsweredHeartbeat(t *testing.T) {
	down := errors.New("unavailable")
	tests := []struct {
		name string
		ops  []bench.Op
		want time.Duration
	}{
		{name: "none", want: 0},
		{name: "one answered", ops: []bench.Op{answer(bench.Heartbeat, "a", 0, 10, client.StateFollower, 1, "b")}, want: 0},
		{
			name: "failures and other operations do not count",
			ops: []bench.Op{
				answer(bench.Heartbeat, "a", 0, 10, client.StateFollower, 1, "b"),
				failed(bench.Heartbeat, "a", 100, 2000, down),
				answer(bench.Campaign, "c", 500, 600, client.StateFollower, 1, "b"),
				answer(bench.Heartbeat, "b", 1500, 3010, client.StateLeader, 1, "b"),
				answer(bench.Heartbeat, "a", 3000, 3100, client.StateFollower, 1, "b"),
			},
			want: 3000 * time.Millisecond,
		},
		{
			name: "out of order",
			ops: []bench.Op{
				answer(bench.Heartbeat, "a", 900, 1000, client.StateFollower, 1, "b"),
				answer(bench.Heartbeat, "b", 0, 10, client.StateLeader, 1, "b"),
				answer(bench.Heartbeat, "a", 1100, 1200, client.StateFollower, 1, "b"),
			},
			want: 990 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if from, to := LongestOutage(tt.ops); to.Sub(from) != tt.want {
				t.Fatalf("LongestOutage = %s to %s, want %s long", from, to, tt.want)
			}
		})
	}
}

func TestLongestAnswerLeavesOutGatewaysFaultedMeanwhile(t *testing.T) {
	t.Parallel()
	gws := []string{"http://g0", "http://g1"}
	op := func(gw, start, end int) bench.Op {
		o := answer(bench.Heartbeat, "a", start, end, client.StateFollower, 1, "b")
		o.Gateway = gw
		return o
	}
	faults := []Fault{
		{Kind: "stop follower", Target: "etcd m1", Start: at(1000), End: at(5000)},
		{Kind: "kill gateway", Target: "http://g1", Start: at(2000), End: at(3000)},
	}
	ops := []bench.Op{
		op(0, 500, 2500),  // started before the fault
		op(0, 1000, 1800), // counted: 800ms
		op(1, 1500, 3500), // its gateway was killed meanwhile
		op(1, 4000, 4600), // counted: 600ms
		op(0, 5100, 9000), // after the fault
	}
	longest, in, n := LongestAnswer(ops, faults, "stop follower", gws)
	if longest != 800*time.Millisecond || in.Target != "etcd m1" || n != 2 {
		t.Fatalf("LongestAnswer = %s in %+v over %d operations, want 800ms in the stop of m1 over 2", longest, in, n)
	}
}

func TestDuringListsTheFaultsOverlappingAWindow(t *testing.T) {
	faults := []Fault{
		{Kind: "kill", Target: "a", Start: at(0), End: at(100)},
		{Kind: "cut", Target: "b", Start: at(50), End: at(300)},
		{Kind: "stop", Target: "c", Start: at(300), End: at(400)},
	}
	got := During(faults, at(100), at(300))
	if want := []string{"cut (b)"}; !slices.Equal(got, want) {
		t.Fatalf("During = %q, want %q", got, want)
	}
}

// TestCheckCountsHolders: with N holders the checker allows N candidates
// acting at once, and reports the N+1st: acting, promised, or begun on a
// stream.
func TestCheckCountsHolders(t *testing.T) {
	t.Parallel()
	// held is an answer telling id it holds term, under a (term 1), the
	// longest-standing holder.
	held := func(kind bench.Kind, id string, start, end int, term uint64) bench.Op {
		op := answer(kind, id, start, end, client.StateLeader, term, "")
		op.Status.Leader = &client.Leader{ID: "a", Term: 1}
		return op
	}
	// a and b hold at once (terms 1 and 2); c is told it holds term 3 at
	// 1500, while both still act and were promised.
	three := []bench.Op{
		held(bench.Campaign, "a", 0, 10, 1),
		held(bench.Campaign, "b", 20, 30, 2),
		held(bench.Heartbeat, "a", 1000, 1010, 1),
		held(bench.Heartbeat, "b", 1000, 1010, 2),
		held(bench.Heartbeat, "c", 1500, 1510, 3),
	}
	// b resigns at 1200; then c takes its slot.
	replaced := []bench.Op{
		held(bench.Campaign, "a", 0, 10, 1),
		held(bench.Campaign, "b", 20, 30, 2),
		held(bench.Heartbeat, "a", 1000, 1010, 1),
		{Kind: bench.Resign, Election: "e", Candidate: "b", Start: at(1200), End: at(1210)},
		held(bench.Heartbeat, "c", 1500, 1510, 3),
	}
	stream := []Event{
		ev(0, "10-1", begin, "a", 1), ev(0, "11-1", begin, "b", 2), ev(0, "12-1", end, "b", 2), ev(0, "12-2", begin, "c", 3),
	}
	overfull := []Event{
		ev(0, "10-1", begin, "a", 1), ev(0, "11-1", begin, "b", 2), ev(0, "12-1", begin, "c", 3),
	}
	reset := []Event{
		{Subscriber: 0, ID: "9", Type: client.EventReset, Election: "e", Term: 2, Leader: "a", LeaderTerm: 1, Holders: []Holding{{"a", 1}, {"b", 2}}},
		ev(0, "12-1", end, "b", 2), ev(0, "12-2", begin, "c", 3),
	}
	tests := []struct {
		name    string
		holders int
		ops     []bench.Op
		events  []Event
		want    []string
	}{
		{"three act at once, of three holders", 3, three, nil, nil},
		{"three act at once, of two holders", 2, three, nil, []string{Overlap, EarlyPromotion}},
		{"three act at once, of one holder", 1, three, nil, []string{Overlap, Overlap, EarlyPromotion, EarlyPromotion}},
		{"a resigned holder's slot is taken, of two holders", 2, replaced, nil, nil},
		{"a stream of two holders", 2, nil, stream, nil},
		{"a stream with a third begin, of two holders", 2, nil, overfull, []string{Gap}},
		{"a stream from a reset of two holders", 2, nil, reset, nil},
		{"a stream of two holders, checked as one", 1, nil, stream, []string{Gap}},
	}
	for _, tt := range tests {
		h := &History{}
		for _, op := range tt.ops {
			h.ObserveOp(op)
		}
		h.events = tt.events
		got := Check(h, Rules{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, End: at(10_000), Holders: tt.holders})
		var props []string
		for _, v := range got {
			props = append(props, v.Property)
		}
		if strings.Join(props, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: violations %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMostActing(t *testing.T) {
	t.Parallel()
	l := func(election, id string, from, to int) Leadership {
		return Leadership{Election: election, Candidate: id, From: at(from), To: at(to)}
	}
	tests := []struct {
		name string
		ls   []Leadership
		want int
	}{
		{"none", nil, 0},
		{"one after another", []Leadership{l("e", "a", 0, 10), l("e", "b", 10, 20)}, 1},
		{"two at once", []Leadership{l("e", "a", 0, 10), l("e", "b", 5, 20), l("e", "c", 20, 30)}, 2},
		{"elections apart", []Leadership{l("e", "a", 0, 10), l("f", "b", 0, 10)}, 1},
	}
	for _, tt := range tests {
		if got := MostActing(tt.ls); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
