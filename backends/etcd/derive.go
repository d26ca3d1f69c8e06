package etcd

import (
	"slices"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// applyRevision applies the changes of one revision to s and, if derive is
// set, returns the events they cause. Events are derived only from the
// views before and after the revision and from the keys written in it, so
// every replica derives the same events, in the same order, with the same
// ids: "<revision>-<index>", the index counting the revision's events over
// all elections, in election-name order. Their time is the newest "at"
// that elector wrote in the revision, or now when there is none (an expiry,
// a native client's write).
func (s *state) applyRevision(rev int64, changes []*clientv3.Event, now time.Time, derive bool) []gateway.Event {
	var names []string
	if derive {
		for _, c := range changes {
			if pk := s.keys.parse(string(c.Kv.Key)); pk.kind != kindOther && !slices.Contains(names, pk.election) {
				names = append(names, pk.election)
			}
		}
		slices.Sort(names)
	}
	before := make([]view, len(names))
	for i, n := range names {
		before[i] = s.view(n)
		if e := s.elections[n]; e != nil {
			e.at = time.Time{}
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
		at := now
		if e := s.elections[n]; e != nil && !e.at.IsZero() {
			at = e.at
		}
		out = append(out, diff(before[i], s.view(n), rev, at)...)
	}
	for i := range out {
		out[i].ID = eventID(rev, i)
	}
	if len(out) > 0 {
		s.last = out[len(out)-1].ID
	}
	return out
}

// diff returns the events that lead from view a to view b, which differ by
// the changes of revision rev, in the order the gateway's Record emits
// them: the end of a leadership, a transfer cancelled, candidates leaving,
// candidates joining, a transfer requested, the beginning of a leadership.
// A key that moved (deleted and put again on the same lease, see
// moveBack) is the same candidate: it neither leaves nor joins.
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

	if l := a.leader; l != nil && (b.leader == nil || b.leader.create != l.create) {
		reason, detail := why(l.hex)
		if inLine(b, l) {
			// Still in line: it handed over, and the record that names its
			// successor says why (transferred or preempted).
			reason, detail = gateway.ReasonTransferred, ""
			if b.lead != nil && b.lead.Previous != nil && b.lead.Previous.Term == a.term && b.lead.PreviousEnd != "" {
				reason = b.lead.PreviousEnd
			}
		}
		if reason == gateway.ReasonError {
			e := ev(gateway.EventLeaderError, l, a.term, "")
			e.Detail = detail
			out = append(out, e)
		}
		out = append(out, ev(gateway.EventLeaderEnd, l, a.term, reason))
	}
	if t := a.transfer; t != nil && (b.transfer == nil || b.transfer.Key != t.Key) && (b.leader == nil || b.leader.hex != t.Key) {
		// Neither pending any more nor completed: cancelled on request,
		// because its target left the line (why says how) or because the
		// leadership ended otherwise.
		x := a.line[a.target]
		reason := ""
		if b.transfer == nil && b.lead != nil && b.lead.Transfer == nil && b.leader != nil && a.leader != nil && b.leader.create == a.leader.create && inLine(b, x) {
			// The same leadership goes on without it: cancelled on request
			// (CancelTransfer).
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
	if t := b.transfer; t != nil && b.leader != nil && (a.transfer == nil || a.transfer.Key != t.Key) {
		e := ev(gateway.EventLeaderTransfer, b.line[b.target], b.term, t.Reason)
		e.Previous = &gateway.TermRef{ID: b.leader.value.ID, Term: b.term}
		out = append(out, e)
	}
	if l := b.leader; l != nil && (a.leader == nil || a.leader.create != l.create) {
		e := ev(gateway.EventLeaderBegin, l, b.term, b.lead.PreviousEnd)
		e.Previous = b.lead.Previous
		out = append(out, e)
	}
	return out
}

// Event ids and cursors. An event id is "<revision>-<index>"; a snapshot's
// cursor is "<revision>", meaning every event of that revision.
func eventID(rev int64, i int) string {
	return strconv.FormatInt(rev, 10) + "-" + strconv.Itoa(i)
}

func revCursor(rev int64) string { return strconv.FormatInt(rev, 10) }

// parseCursor parses an event id or a snapshot cursor. index is -1 for a
// snapshot cursor.
func parseCursor(s string) (rev int64, index int, ok bool) {
	r, i, hasIndex := cutLast(s, '-')
	rev, err := strconv.ParseInt(r, 10, 64)
	if err != nil || rev < 1 || (len(r) > 1 && r[0] == '0') {
		return 0, 0, false
	}
	if !hasIndex {
		return rev, -1, true
	}
	n, err := strconv.Atoi(i)
	if err != nil || n < 0 {
		return 0, 0, false
	}
	return rev, n, true
}

func cutLast(s string, sep byte) (before, after string, found bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
