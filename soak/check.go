package soak

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

// The properties a Violation can breach.
const (
	Overlap       = "overlapping leaderships"
	TermReused    = "term reused"
	TermNotRising = "term not increasing"
	Duplicate     = "duplicate event"
	OutOfOrder    = "event out of order"
	Gap           = "gap in the event stream"
	Disagreement  = "subscribers disagree"
)

// Violation is one breach of a safety property.
type Violation struct {
	Property string
	Election string
	Detail   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s in %s: %s", v.Property, v.Election, v.Detail)
}

// Rules are what the checker needs to know of the run.
type Rules struct {
	// TTL is the candidates' TTL, Margin the safety margin of the
	// step-down rule: a leader stops acting TTL-Margin after the start of
	// its last successful heartbeat.
	TTL, Margin time.Duration
	// End is when the history ends; a leadership still running ends there.
	End time.Time
	// Holders is the elections' holders setting N: how many candidates
	// may act as holders at once (0 means 1). Its changes during a run are
	// not followed: set the largest.
	Holders int
}

// holders is r.Holders, 0 read as 1.
func (r Rules) holders() int { return max(r.Holders, 1) }

// Check returns every violation of h.
func Check(h *History, r Rules) []Violation {
	ops, events := h.Ops(), h.Events()
	var v []Violation
	ls := Leaderships(ops, r)
	v = append(v, checkLeaderships(ls, r.holders())...)
	v = append(v, checkPromotions(ls, r.TTL, r.holders())...)
	v = append(v, checkTerms(ops, events)...)
	v = append(v, checkStreams(events, r.holders())...)
	v = append(v, checkAgreement(events)...)
	v = append(v, checkDurable(ops, events)...)
	v = append(v, checkDeliveries(h.Subscribed(), events, h.Deliveries())...)
	v = append(v, checkBodies(events, h.Deliveries())...)
	return v
}

// Leadership is a span during which a candidate, following the step-down
// rule, acted as the leader of Election with Term.
type Leadership struct {
	Election, Candidate string
	Term                uint64
	From, To            time.Time
	// LastAck is the start of the last operation whose answer told the
	// candidate it leads: elector promised it the leadership until
	// LastAck plus the TTL.
	LastAck time.Time
	// Resigned is set when the leadership ended with the candidate's
	// resignation, at To.
	Resigned bool
}

// Leaderships derives from ops when each candidate acted as leader: from
// the end of an answer saying it leads, until the start of its
// resignation, the end of an answer saying it does not (another state, a
// new term, or candidate-not-found), or the step-down deadline, whichever
// comes first. An operation without an answer tells nothing: the deadline
// runs on.
func Leaderships(ops []bench.Op, r Rules) []Leadership {
	byCandidate := map[[2]string][]bench.Op{}
	for _, op := range ops {
		switch op.Kind {
		case bench.Campaign, bench.Heartbeat, bench.Resign:
			k := [2]string{op.Election, op.Candidate}
			byCandidate[k] = append(byCandidate[k], op)
		}
	}
	var out []Leadership
	for k, ops := range byCandidate {
		sort.Slice(ops, func(i, j int) bool { return ops[i].Start.Before(ops[j].Start) })
		var cur *Leadership
		var deadline time.Time
		end := func(at time.Time) {
			if cur == nil {
				return
			}
			cur.To = at
			if deadline.Before(at) {
				cur.To = deadline
			}
			out = append(out, *cur)
			cur = nil
		}
		for _, op := range ops {
			if cur != nil && deadline.Before(op.End) {
				end(deadline) // the lease lapsed before this answer came
			}
			leads := op.Err == nil && op.Kind != bench.Resign && op.Status.State == client.StateLeader
			switch {
			case op.Kind == bench.Resign:
				if cur != nil {
					cur.Resigned = true
				}
				end(op.Start)
			case leads:
				if cur != nil && cur.Term != op.Status.Term {
					end(op.End)
				}
				if cur == nil {
					cur = &Leadership{Election: k[0], Candidate: k[1], Term: op.Status.Term, From: op.End}
				}
				cur.LastAck = op.Start
				deadline = op.Start.Add(r.TTL - r.Margin)
			case op.Err == nil || errors.Is(op.Err, client.ErrCandidateNotFound):
				end(op.End)
			}
		}
		end(r.End)
	}
	return out
}

// checkLeaderships reports the instants at which more than n candidates
// of one election acted as holders (with n = 1: leaderships that
// overlap), once per leadership that began while n others ran.
func checkLeaderships(ls []Leadership, n int) []Violation {
	byElection := map[string][]Leadership{}
	for _, l := range ls {
		byElection[l.Election] = append(byElection[l.Election], l)
	}
	var v []Violation
	for election, ls := range byElection {
		sort.Slice(ls, func(i, j int) bool { return ls[i].From.Before(ls[j].From) })
		var acting []Leadership // those running at the current From
		for _, l := range ls {
			acting = slices.DeleteFunc(acting, func(a Leadership) bool { return !l.From.Before(a.To) })
			if len(acting) >= n {
				last := acting[0] // the one that ends last
				for _, a := range acting[1:] {
					if a.To.After(last.To) {
						last = a
					}
				}
				if n == 1 {
					v = append(v, Violation{Overlap, election, fmt.Sprintf("%s (term %d) acted as leader from %s while %s (term %d) did until %s",
						l.Candidate, l.Term, stamp(l.From), last.Candidate, last.Term, stamp(last.To))})
				} else {
					v = append(v, Violation{Overlap, election, fmt.Sprintf("%s (term %d) acted as holder from %s while %d others did (of %d holders): %s",
						l.Candidate, l.Term, stamp(l.From), len(acting), n, describeActing(acting))})
				}
			}
			acting = append(acting, l)
		}
	}
	return v
}

// MostActing is the largest number of ls's leaderships of one election
// that ran at one instant: what the runs reached of their holders.
func MostActing(ls []Leadership) int {
	type edge struct {
		at    time.Time
		delta int
	}
	byElection := map[string][]edge{}
	for _, l := range ls {
		byElection[l.Election] = append(byElection[l.Election], edge{l.From, 1}, edge{l.To, -1})
	}
	most := 0
	for _, es := range byElection {
		// Ends before begins at one instant: a span is [From, To).
		sort.Slice(es, func(i, j int) bool {
			return es[i].at.Before(es[j].at) || es[i].at.Equal(es[j].at) && es[i].delta < es[j].delta
		})
		n := 0
		for _, e := range es {
			n += e.delta
			most = max(most, n)
		}
	}
	return most
}

// describeActing lists leaderships as "a (term 3) until 12:00:01.000".
func describeActing(ls []Leadership) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s (term %d) until %s", l.Candidate, l.Term, stamp(l.To))
	}
	return strings.Join(parts, ", ")
}

// checkTerms reports a term that named two candidates, in answers or in
// events.
func checkTerms(ops []bench.Op, events []Event) []Violation {
	type key struct {
		election string
		term     uint64
	}
	holder := map[key]string{}
	var v []Violation
	see := func(election string, term uint64, id, where string) {
		if term == 0 || id == "" {
			return
		}
		k := key{election, term}
		if h, ok := holder[k]; ok && h != id {
			v = append(v, Violation{TermReused, election, fmt.Sprintf("term %d named %s and, in %s, %s", term, h, where, id)})
			return
		}
		holder[k] = id
	}
	for _, op := range ops {
		if op.Err != nil {
			continue
		}
		if l := op.Status.Leader; l != nil {
			see(op.Election, l.Term, l.ID, "an answer to "+op.Candidate)
		}
		for _, l := range op.Status.Holders {
			see(op.Election, l.Term, l.ID, "an answer to "+op.Candidate)
		}
		if op.Status.State == client.StateLeader {
			see(op.Election, op.Status.Term, op.Status.ID, "an answer to "+op.Candidate)
		}
	}
	for _, e := range events {
		switch e.Type {
		case client.EventLeaderBegin, client.EventLeaderEnd, client.EventLeaderError:
			see(e.Election, e.Term, e.Candidate, "event "+e.ID)
		case client.EventReset:
			see(e.Election, e.LeaderTerm, e.Leader, "a reset")
			for _, h := range e.Holders {
				see(e.Election, h.Term, h.ID, "a reset")
			}
		}
	}
	return v
}

// streamState is what one subscriber knows of one election.
type streamState struct {
	known     bool              // whether open is known
	open      map[uint64]string // the open holderships: term → holder
	lastBegin uint64
}

// checkStreams reports, per subscriber, duplicate and out-of-order event
// ids, and gaps: a begin while n holderships had not ended (with n = 1:
// another leadership), or an end of a holdership that was not open.
func checkStreams(events []Event, n int) []Violation {
	var v []Violation
	last := map[int]eventID{}
	seen := map[int]map[string]bool{}
	states := map[[2]any]*streamState{}
	for _, e := range events {
		st := states[[2]any{e.Subscriber, e.Election}]
		if st == nil {
			st = &streamState{open: map[uint64]string{}}
			states[[2]any{e.Subscriber, e.Election}] = st
		}
		if e.Type == client.EventReset {
			*st = streamState{known: true, open: map[uint64]string{}, lastBegin: max(st.lastBegin, e.LeaderTerm)}
			for _, h := range e.Holders {
				st.open[h.Term] = h.ID
				st.lastBegin = max(st.lastBegin, h.Term)
			}
			continue
		}
		if seen[e.Subscriber] == nil {
			seen[e.Subscriber] = map[string]bool{}
		}
		id := parseID(e.ID)
		switch prev, ok := last[e.Subscriber]; {
		case seen[e.Subscriber][e.ID]:
			v = append(v, Violation{Duplicate, e.Election, fmt.Sprintf("subscriber %d got event %s (%s) twice", e.Subscriber, e.ID, e.Type)})
			continue
		case ok && !prev.less(id):
			v = append(v, Violation{OutOfOrder, e.Election, fmt.Sprintf("subscriber %d got event %s after %s", e.Subscriber, e.ID, prev.raw)})
		}
		seen[e.Subscriber][e.ID] = true
		last[e.Subscriber] = id
		switch e.Type {
		case client.EventLeaderBegin:
			if st.known && len(st.open) >= n {
				v = append(v, Violation{Gap, e.Election, fmt.Sprintf("subscriber %d got the begin of %s (term %d) at %s while %s had not ended",
					e.Subscriber, e.Candidate, e.Term, e.ID, describeOpen(st.open))})
			}
			if st.lastBegin != 0 && e.Term <= st.lastBegin {
				v = append(v, Violation{TermNotRising, e.Election, fmt.Sprintf("subscriber %d got the begin of term %d at %s after term %d",
					e.Subscriber, e.Term, e.ID, st.lastBegin)})
			}
			if n == 1 {
				clear(st.open) // reported above: the stream goes on from this leadership
			}
			st.known, st.lastBegin = true, max(st.lastBegin, e.Term)
			st.open[e.Term] = e.Candidate
		case client.EventLeaderEnd:
			if id, ok := st.open[e.Term]; st.known && (!ok || id != e.Candidate) {
				v = append(v, Violation{Gap, e.Election, fmt.Sprintf("subscriber %d got the end of %s (term %d) at %s, but its stream's open holderships were %s",
					e.Subscriber, e.Candidate, e.Term, e.ID, describeOpen(st.open))})
			}
			if n == 1 {
				clear(st.open)
			}
			delete(st.open, e.Term)
			st.known = true
		case client.EventCandidateJoined, client.EventCandidateLeft:
			if !st.known && e.Term == 0 {
				st.known = true // a new election: nobody has led it yet
			}
		}
	}
	return v
}

// describeOpen lists open holderships as `"a" (term 3)`, by term, or
// "none".
func describeOpen(open map[uint64]string) string {
	if len(open) == 0 {
		return "none"
	}
	terms := make([]uint64, 0, len(open))
	for t := range open {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = fmt.Sprintf("%q (term %d)", open[t], t)
	}
	return strings.Join(parts, ", ")
}

// checkAgreement reports events of an election that one subscriber got
// and another did not, over the span both followed it, and ids whose
// events differ. A subscriber that fell back to a snapshot (a reset after
// its first event of the election) is left out for that election: it was
// told it missed events.
func checkAgreement(events []Event) []Violation {
	type stream struct {
		ids      []eventID
		byID     map[string]Event
		fellBack bool
	}
	streams := map[string]map[int]*stream{}
	for _, e := range events {
		if streams[e.Election] == nil {
			streams[e.Election] = map[int]*stream{}
		}
		s := streams[e.Election][e.Subscriber]
		if s == nil {
			s = &stream{byID: map[string]Event{}}
			streams[e.Election][e.Subscriber] = s
		}
		if e.Type == client.EventReset {
			s.fellBack = s.fellBack || len(s.ids) > 0
			continue
		}
		if _, dup := s.byID[e.ID]; !dup {
			s.ids = append(s.ids, parseID(e.ID))
			s.byID[e.ID] = e
		}
	}
	var v []Violation
	for election, subs := range streams {
		var ref *stream
		refSub := 0
		for sub, s := range subs {
			if !s.fellBack && len(s.ids) > 0 && (ref == nil || sub < refSub) {
				ref, refSub = s, sub
			}
		}
		if ref == nil {
			continue
		}
		for sub, s := range subs {
			if s == ref || s.fellBack || len(s.ids) == 0 {
				continue
			}
			from, to := maxID(ref.ids[0], s.ids[0]), minID(ref.ids[len(ref.ids)-1], s.ids[len(s.ids)-1])
			type side struct {
				s   *stream
				sub int
			}
			for _, pair := range [][2]side{{{ref, refSub}, {s, sub}}, {{s, sub}, {ref, refSub}}} {
				a, b := pair[0], pair[1]
				for _, id := range a.s.ids {
					if id.less(from) || to.less(id) {
						continue
					}
					ea := a.s.byID[id.raw]
					eb, ok := b.s.byID[id.raw]
					switch {
					case !ok:
						v = append(v, Violation{Disagreement, election, fmt.Sprintf("event %s (%s) reached subscriber %d but not %d",
							id.raw, ea.Type, a.sub, b.sub)})
					case a.s == ref && (ea.Type != eb.Type || ea.Term != eb.Term || ea.Candidate != eb.Candidate):
						v = append(v, Violation{Disagreement, election, fmt.Sprintf("event %s is %s/%d/%s to subscriber %d and %s/%d/%s to %d",
							id.raw, ea.Type, ea.Term, ea.Candidate, a.sub, eb.Type, eb.Term, eb.Candidate, b.sub)})
					}
				}
			}
		}
	}
	return v
}

// eventID is an event id in its order: "seq-i" from the NATS backend, a
// plain number from the others.
type eventID struct {
	seq uint64
	i   int
	raw string
}

func parseID(s string) eventID {
	id := eventID{raw: s}
	var a, b uint64
	if n, _ := fmt.Sscanf(s, "%d-%d", &a, &b); n == 2 {
		id.seq, id.i = a, int(b)
	} else if n == 1 {
		id.seq = a
	}
	return id
}

func (a eventID) less(b eventID) bool {
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	if a.i != b.i {
		return a.i < b.i
	}
	return a.raw < b.raw
}

func maxID(a, b eventID) eventID {
	if a.less(b) {
		return b
	}
	return a
}

func minID(a, b eventID) eventID {
	if a.less(b) {
		return a
	}
	return b
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }
