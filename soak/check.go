package soak

import (
	"errors"
	"fmt"
	"sort"
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
}

// Check returns every violation of h.
func Check(h *History, r Rules) []Violation {
	ops, events := h.Ops(), h.Events()
	var v []Violation
	ls := Leaderships(ops, r)
	v = append(v, checkLeaderships(ls)...)
	v = append(v, checkPromotions(ls, r.TTL)...)
	v = append(v, checkTerms(ops, events)...)
	v = append(v, checkStreams(events)...)
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

// checkLeaderships reports leaderships of one election that overlap.
func checkLeaderships(ls []Leadership) []Violation {
	byElection := map[string][]Leadership{}
	for _, l := range ls {
		byElection[l.Election] = append(byElection[l.Election], l)
	}
	var v []Violation
	for election, ls := range byElection {
		sort.Slice(ls, func(i, j int) bool { return ls[i].From.Before(ls[j].From) })
		var last Leadership // the one that ends last so far
		for i, l := range ls {
			if i > 0 && l.From.Before(last.To) {
				v = append(v, Violation{Overlap, election, fmt.Sprintf("%s (term %d) acted as leader from %s while %s (term %d) did until %s",
					l.Candidate, l.Term, stamp(l.From), last.Candidate, last.Term, stamp(last.To))})
			}
			if i == 0 || l.To.After(last.To) {
				last = l
			}
		}
	}
	return v
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
		}
	}
	return v
}

// streamState is what one subscriber knows of one election.
type streamState struct {
	known     bool // whether leader is known
	leader    string
	term      uint64
	lastBegin uint64
}

// checkStreams reports, per subscriber, duplicate and out-of-order event
// ids, and gaps: a begin while another leadership had not ended, or an end
// of a leadership that was not the current one.
func checkStreams(events []Event) []Violation {
	var v []Violation
	last := map[int]eventID{}
	seen := map[int]map[string]bool{}
	states := map[[2]any]*streamState{}
	for _, e := range events {
		st := states[[2]any{e.Subscriber, e.Election}]
		if st == nil {
			st = &streamState{}
			states[[2]any{e.Subscriber, e.Election}] = st
		}
		if e.Type == client.EventReset {
			*st = streamState{known: true, leader: e.Leader, term: e.LeaderTerm, lastBegin: max(st.lastBegin, e.LeaderTerm)}
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
			if st.known && st.leader != "" {
				v = append(v, Violation{Gap, e.Election, fmt.Sprintf("subscriber %d got the begin of %s (term %d) at %s while %s (term %d) had not ended",
					e.Subscriber, e.Candidate, e.Term, e.ID, st.leader, st.term)})
			}
			if st.lastBegin != 0 && e.Term <= st.lastBegin {
				v = append(v, Violation{TermNotRising, e.Election, fmt.Sprintf("subscriber %d got the begin of term %d at %s after term %d",
					e.Subscriber, e.Term, e.ID, st.lastBegin)})
			}
			*st = streamState{known: true, leader: e.Candidate, term: e.Term, lastBegin: max(st.lastBegin, e.Term)}
		case client.EventLeaderEnd:
			if st.known && (st.leader != e.Candidate || st.term != e.Term) {
				v = append(v, Violation{Gap, e.Election, fmt.Sprintf("subscriber %d got the end of %s (term %d) at %s, but its stream's leader was %q (term %d)",
					e.Subscriber, e.Candidate, e.Term, e.ID, st.leader, st.term)})
			}
			st.known, st.leader, st.term = true, "", e.Term
		case client.EventCandidateJoined, client.EventCandidateLeft:
			if !st.known && e.Term == 0 {
				st.known = true // a new election: nobody has led it yet
			}
		}
	}
	return v
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
