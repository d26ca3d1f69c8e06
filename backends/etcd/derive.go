package etcd

import (
	"math"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// applyRevision applies the changes of one revision to s and, if derive is
// set, returns the events they cause. Events are derived only from the
// states before and after the revision and from the keys written in it, so
// every replica derives the same events, in the same order, with the same
// ids: "<revision>-<index>", the index counting the revision's events over
// all elections, in election-name order, and with the same bodies, their
// time included (see eventTime). With s.departed set it also collects the
// elector candidacies that left without elector removing them (etcd
// expired or revoked their lease, or somebody deleted their keys).
func (s *state) applyRevision(rev int64, changes []*clientv3.Event, derive bool) []gateway.Event {
	var names []string
	if derive {
		for _, c := range changes {
			pk := s.keys.parse(string(c.Kv.Key))
			if pk.kind == kindOther || pk.kind == kindPromise || pk.kind == kindRevoked || pk.kind == kindSession {
				continue // a promise, a record of a revocation or a session changes no view
			}
			if !slices.Contains(names, pk.election) {
				names = append(names, pk.election)
			}
		}
		slices.Sort(names)
	}
	before := make([]view, len(names))
	newest := make([]time.Time, len(names))
	for i, n := range names {
		before[i] = s.eventView(n, true)
		if e := s.elections[n]; e != nil {
			e.at, newest[i] = time.Time{}, e.newest()
		}
	}
	for _, c := range changes {
		if c.Type == mvccpb.DELETE {
			s.del(c.Kv.Key)
		} else {
			s.put(c.Kv)
		}
	}
	s.rev = rev
	var out []gateway.Event
	for i, n := range names {
		after := s.eventView(n, false)
		var at time.Time
		if e := s.elections[n]; e != nil {
			at = e.at
		}
		if at.IsZero() {
			at = s.eventTime(before[i], after, rev, newest[i])
		}
		out = append(out, diff(before[i], after, rev, at)...)
		if s.departed != nil {
			*s.departed = append(*s.departed, departures(before[i], after, rev)...)
		}
	}
	for i := range out {
		out[i].ID = eventID(rev, i)
	}
	if len(out) > 0 {
		s.last = out[len(out)-1].ID
	}
	return out
}

// eventTime is the time of the events of revision rev, which changed the
// election from view a to view b without elector writing an "at" in it: a
// lease that etcd expired or revoked, a native client's write. etcd keeps
// no time, so it is taken from what elector wrote before, which every
// replica holds alike: the newest "at" in the election (newest, from the
// state before the revision), or, when a holder's key went, the end of
// its promise if that is later (the acknowledgement or its last promise,
// plus its TTL: when its holdership ended as elector promised it). An
// election elector never wrote in takes the newest "at" of all.
//
// How far this is from the real time: while an elector candidate holds,
// its heartbeats rewrite its promise, so the newest "at" is at most its
// heartbeat interval (at most its TTL) old; a holder's own expiry is
// stamped with its promised end, which an early revocation (the key goes
// before it) puts after the event's revision. Elsewhere (a native holder,
// only candidates in cooldown) it is the age of elector's last write in
// the election. Every stamp is a writer's clock, as every "at" is.
func (s *state) eventTime(a, b view, rev int64, newest time.Time) time.Time {
	at := newest
	for i, l := range a.holders {
		if slices.ContainsFunc(b.line, func(y *entry) bool { return y.hex == l.hex }) ||
			(b.mark != nil && b.markMod == rev && b.mark.Key == l.hex) {
			continue
		}
		if end, ok := a.promisedEnd(a.held[i]); ok && end.After(at) {
			at = end
		}
	}
	if at.IsZero() {
		for _, e := range s.elections {
			if t := e.newest(); t.After(at) {
				at = t
			}
		}
	}
	return at
}

// departure is an elector candidacy that left the line (or its cooldown)
// in revision rev without a mark naming it: etcd expired or revoked its
// lease, or somebody deleted its keys.
type departure struct {
	election string
	x        *entry
	rev      int64
}

// departures lists the departures between views a and b of revision rev.
func departures(a, b view, rev int64) []departure {
	var out []departure
	for _, x := range slices.Concat(a.line, a.cooling) {
		if x.native {
			continue
		}
		stays := func(y *entry) bool { return y.hex == x.hex }
		if slices.ContainsFunc(b.line, stays) || slices.ContainsFunc(b.cooling, stays) {
			continue
		}
		if b.mark != nil && b.markMod == rev && b.mark.Key == x.hex {
			continue // elector removed it
		}
		out = append(out, departure{election: b.name, x: x, rev: rev})
	}
	return out
}

// diff returns the events that lead from view a to view b, which differ by
// the changes of revision rev, in the order the gateway's Record emits
// them: the ends of holderships (the newest first), a transfer cancelled,
// candidates leaving, candidates joining, a transfer requested, the
// beginnings of holderships (the oldest first). A key that moved (deleted
// and put again on the same lease, see moveBack) is the same candidate:
// it neither leaves nor joins.
func diff(a, b view, rev int64, at time.Time) []gateway.Event {
	var out []gateway.Event
	ev := func(t gateway.EventType, x *entry, term uint64, reason string) gateway.Event {
		return gateway.Event{Type: t, Time: at, Election: b.name, Term: term, Reason: reason,
			Candidate: &gateway.CandidateRef{ID: x.value.ID, Metadata: x.value.Metadata}}
	}
	// why reports why key hex went away in this revision.
	why := func(hex string) (string, string) {
		if b.mark != nil && b.markMod == rev && b.mark.Key == hex {
			return b.mark.Reason, b.mark.Detail
		}
		return gateway.ReasonExpired, ""
	}
	inLine := func(v view, x *entry) bool {
		return slices.ContainsFunc(v.line, func(y *entry) bool { return y.hex == x.hex })
	}
	inCooling := func(v view, x *entry) bool {
		return slices.ContainsFunc(v.cooling, func(y *entry) bool { return y.hex == x.hex })
	}

	for i := len(a.holders) - 1; i >= 0; i-- {
		l, term := a.holders[i], a.held[i].Term
		if b.holds(term) {
			continue
		}
		reason, detail := why(l.hex)
		if inLine(b, l) {
			// Still in line: its holdership was ended by lowering the
			// holders, or it handed over, and the record that names its
			// successor says why (transferred or preempted).
			reason, detail = gateway.ReasonTransferred, ""
			switch s := b.lead.slot(term); {
			case s != nil && s.Ended == gateway.ReasonHoldersReduced:
				reason = gateway.ReasonHoldersReduced
			case b.lead != nil && b.lead.Previous != nil && b.lead.Previous.Term == term && b.lead.PreviousEnd != "":
				reason = b.lead.PreviousEnd
			}
		}
		if reason == gateway.ReasonError {
			e := ev(gateway.EventLeaderError, l, term, "")
			e.Detail = detail
			out = append(out, e)
		}
		out = append(out, ev(gateway.EventLeaderEnd, l, term, reason))
	}
	holdsKey := func(v view, hex string) bool {
		return slices.ContainsFunc(v.holders, func(y *entry) bool { return y.hex == hex })
	}
	// moved reports whether a pending preemption moved to a follower that
	// outranks its target, from the same holdership (preempt): one
	// leader.transfer for the new target, the old one still in line, and
	// no leader.transfer_cancelled, as gateway.Record's preempt.
	moved := func(t *leadTransfer) bool {
		n := b.transfer
		return n != nil && b.from >= 0 && n.Reason == gateway.ReasonPreempted && t.Reason == gateway.ReasonPreempted &&
			n.FromTerm == t.FromTerm && inLine(b, a.line[a.target])
	}
	if t := a.transfer; t != nil && (b.transfer == nil || b.transfer.Key != t.Key) && !holdsKey(b, t.Key) && !moved(t) {
		// Neither pending any more nor completed: cancelled on request,
		// because its target left the line (why says how) or because the
		// holdership ended otherwise.
		x := a.line[a.target]
		reason := ""
		if b.transfer == nil && b.lead != nil && b.lead.Transfer == nil && a.from >= 0 && b.holds(a.held[a.from].Term) && inLine(b, x) {
			// The same holdership goes on without it: cancelled on
			// request (CancelTransfer).
			reason = gateway.ReasonCancelled
		}
		if !inLine(b, x) {
			reason, _ = why(x.hex)
			if inCooling(b, x) {
				reason = gateway.ReasonError
			}
		}
		out = append(out, ev(gateway.EventTransferCancelled, x, a.term, reason))
	}
	for _, x := range slices.Concat(a.line, a.cooling) {
		if !inLine(b, x) && !inCooling(b, x) {
			reason, _ := why(x.hex)
			out = append(out, ev(gateway.EventCandidateLeft, x, a.term, reason))
		}
	}
	for _, x := range b.line {
		if !inLine(a, x) {
			reason := gateway.ReasonCampaign
			if inCooling(a, x) {
				reason = gateway.ReasonRejoined
			}
			out = append(out, ev(gateway.EventCandidateJoined, x, a.term, reason))
		}
	}
	if t := b.transfer; t != nil && b.from >= 0 && (a.transfer == nil || a.transfer.Key != t.Key) {
		e := ev(gateway.EventLeaderTransfer, b.line[b.target], b.term, t.Reason)
		e.Previous = &gateway.TermRef{ID: b.holders[b.from].value.ID, Term: b.held[b.from].Term}
		out = append(out, e)
	}
	for i, l := range b.holders {
		if term := b.held[i].Term; !a.holds(term) {
			e := ev(gateway.EventLeaderBegin, l, term, b.lead.PreviousEnd)
			e.Previous = b.lead.Previous
			out = append(out, e)
		}
	}
	return out
}

// Event ids and cursors, in the forms of gateway.Position with etcd's
// revision as rev. An event id is "<revision>-<index>"; a snapshot's
// cursor is "<revision>", meaning every event of that revision.
func eventID(rev int64, i int) string {
	return gateway.Position{Rev: uint64(rev), Index: i}.String()
}

func revCursor(rev int64) string { return gateway.After(uint64(rev)).String() }

// parseCursor parses an event id or a snapshot cursor with
// gateway.ParsePosition; etcd's revisions are from 1 to math.MaxInt64.
// index is -1 for a snapshot cursor.
func parseCursor(s string) (rev int64, index int, ok bool) {
	p, ok := gateway.ParsePosition(s)
	if !ok || p.Rev < 1 || p.Rev > math.MaxInt64 {
		return 0, 0, false
	}
	if p.Index == math.MaxInt {
		return int64(p.Rev), -1, true
	}
	return int64(p.Rev), p.Index, true
}
