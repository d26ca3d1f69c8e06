package backendtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/electorhq/elector/gateway"
)

// terms pairs the Record's terms with the backend's. A backend's terms
// need only be in the same order as the Record's (etcd's are create
// revisions, not counted), so the pairs must form an order-preserving
// one-to-one map, as nextTerm in the transfer tests assumes.
type terms struct {
	toBackend map[uint64]uint64
	toModel   map[uint64]uint64
}

func newTerms() *terms {
	return &terms{toBackend: map[uint64]uint64{0: 0}, toModel: map[uint64]uint64{0: 0}}
}

// match reports whether model term m and backend term b can be the same
// leadership, and records them as such if so.
func (t *terms) match(m, b uint64) bool {
	if x, ok := t.toBackend[m]; ok {
		return x == b
	}
	if _, ok := t.toModel[b]; ok {
		return false
	}
	for xm, xb := range t.toBackend {
		if (xm < m) != (xb < b) {
			return false
		}
	}
	t.toBackend[m], t.toModel[b] = b, m
	return true
}

func (t *terms) clone() *terms {
	return &terms{toBackend: maps.Clone(t.toBackend), toModel: maps.Clone(t.toModel)}
}

// label names a model term as "t<n>".
func label(m uint64) string { return fmt.Sprintf("t%d", m) }

// backendLabel names a backend term by the model term it stands for, or
// by its value when it stands for none yet.
func (t *terms) backendLabel(b uint64) string {
	if m, ok := t.toModel[b]; ok {
		return label(m)
	}
	return fmt.Sprintf("#%d", b)
}

// sentinels are the errors an answer is classified by, most specific
// first.
var sentinels = []struct {
	err  error
	name string
}{
	{gateway.ErrElectionNotFound, "election-not-found"},
	{gateway.ErrCandidacyRevoked, "candidacy-revoked"},
	{gateway.ErrCandidateNotFound, "candidate-not-found"},
	{gateway.ErrCandidateExists, "candidate-exists"},
	{gateway.ErrTokenMismatch, "token-mismatch"},
	{gateway.ErrNoLeader, "no-leader"},
	{gateway.ErrNotLeader, "not-leader"},
	{gateway.ErrNotFollower, "not-follower"},
	{gateway.ErrTransferPending, "transfer-pending"},
	{gateway.ErrNoTransfer, "no-transfer"},
	{gateway.ErrTransferBlocked, "transfer-blocked"},
	{gateway.ErrPreempting, "preempting"},
	{gateway.ErrInvalid, "invalid"},
	{gateway.ErrUnavailable, "unavailable"},
}

// errClass names err by its sentinel ("ok" for nil), with the transfer a
// *gateway.TransferPendingError carries.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			var tp *gateway.TransferPendingError
			if errors.As(err, &tp) {
				return fmt.Sprintf("%s(to %s, %s)", s.name, tp.Transfer.To, tp.Transfer.Reason)
			}
			return s.name
		}
	}
	return "error: " + err.Error()
}

// differ collects the differences between the Record's answer and the
// backend's.
type differ struct {
	t    *terms
	diff []string
	// anyOrder lets the backend order the followers as it likes (see
	// Harness.TransferMovesFollowers): lines are compared as sets, with
	// a pending transfer's target right behind the leader, and with none
	// pending in priority order.
	anyOrder bool
}

func (d *differ) add(format string, args ...any) {
	d.diff = append(d.diff, fmt.Sprintf(format, args...))
}

func (d *differ) String() string { return strings.Join(d.diff, "; ") }

func (d *differ) term(what string, m, b uint64) {
	if !d.t.match(m, b) {
		d.add("%s: record %s, backend %s", what, label(m), d.t.backendLabel(b))
	}
}

func (d *differ) answer(want, got answer) {
	if w, g := errClass(want.err), errClass(got.err); w != g {
		d.add("outcome: record %s, backend %s", w, g)
		return
	}
	if want.status != nil && got.status != nil {
		d.status(*want.status, *got.status)
	}
	if want.election != nil && got.election != nil {
		d.election(*want.election, *got.election)
	}
}

func (d *differ) status(want, got gateway.Status) {
	d.candidate("candidate", want.Candidate, got.Candidate)
	follower := want.Candidate.State == gateway.StateFollower && got.Candidate.State == gateway.StateFollower
	if want.Position != got.Position && !(d.anyOrder && follower) {
		d.add("position: record %d, backend %d", want.Position, got.Position)
	}
	d.term("term", want.Term, got.Term)
	d.leader(want.Leader, got.Leader)
	d.holders(want.Holders, got.Holders)
	d.transfer(want.Transfer, got.Transfer)
}

// election compares snapshots.
func (d *differ) election(want, got gateway.Election) {
	if want.Settings != got.Settings {
		d.add("settings: record %+v, backend %+v", want.Settings, got.Settings)
	}
	d.term("term", want.Term, got.Term)
	d.leader(want.Leader, got.Leader)
	d.holders(want.Holders, got.Holders)
	// A promotion held back with no follower to promote is not
	// compared: etcd shows none (backends/etcd's snapshot), the Record
	// shows the delay or hold running.
	waiting := slices.ContainsFunc(want.Candidates, func(c gateway.Candidate) bool { return c.State == gateway.StateFollower })
	if w, g := !want.HandoverUntil.IsZero(), !got.HandoverUntil.IsZero(); w != g && waiting {
		d.add("promotion held back: record %v, backend %v", w, g)
	}
	d.transfer(want.Transfer, got.Transfer)
	if w, g := describeLine(want.Candidates), describeLine(got.Candidates); w != g && !(d.anyOrder && d.sameFollowers(want, got)) {
		d.add("line: record [%s], backend [%s]", w, g)
		return
	}
	byID := map[string]gateway.Candidate{}
	for _, c := range got.Candidates {
		byID[c.ID] = c
	}
	for _, w := range want.Candidates {
		d.candidate(w.ID, w, byID[w.ID])
	}
}

// sameFollowers reports whether two lines differ only in an order of the
// followers that a backend moving them for transfers may show: the same
// candidates in the same states, the holders and the candidates in error
// where they were, and a pending transfer's target first among the
// followers. With no transfer pending any more the followers may stay as
// the transfer left them (etcd: a cancelled transfer moves no key back);
// adopt then takes the backend's order into the Record.
func (d *differ) sameFollowers(want, got gateway.Election) bool {
	w, g := slices.Clone(want.Candidates), slices.Clone(got.Candidates)
	if len(w) != len(g) {
		return false
	}
	from := 0 // the first follower: behind the holders, which lead the line
	for from < len(w) && w[from].State == gateway.StateLeader {
		if w[from].ID != g[from].ID || g[from].State != gateway.StateLeader {
			return false
		}
		from++
	}
	to := from + slices.IndexFunc(w[from:], func(c gateway.Candidate) bool { return c.State != gateway.StateFollower })
	if to < from {
		to = len(w)
	}
	f := g[from:to]
	if !slices.Equal(ids(w[to:]), ids(g[to:])) || slices.ContainsFunc(f, func(c gateway.Candidate) bool { return c.State != gateway.StateFollower }) {
		return false
	}
	if t := want.Transfer; t != nil && len(f) > 0 && f[0].ID != t.To {
		return false
	}
	less := func(a, b gateway.Candidate) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(w[from:to], less)
	slices.SortFunc(f, less)
	return slices.Equal(ids(w), ids(g))
}

func (d *differ) candidate(what string, want, got gateway.Candidate) {
	if want.ID != got.ID || want.State != got.State || want.Priority != got.Priority {
		d.add("%s: record %s %s priority %d, backend %s %s priority %d", what, want.ID, want.State, want.Priority, got.ID, got.State, got.Priority)
	}
	if !sameJSON(want.Metadata, got.Metadata) {
		d.add("%s metadata: record %s, backend %s", what, want.Metadata, got.Metadata)
	}
	d.term(what+" term", want.Term, got.Term)
}

func (d *differ) leader(want, got *gateway.Leader) {
	switch {
	case want == nil && got == nil:
	case want == nil || got == nil:
		d.add("leader: record %s, backend %s", d.leaderString(want, false), d.leaderString(got, true))
	case want.ID != got.ID:
		d.add("leader: record %s, backend %s", d.leaderString(want, false), d.leaderString(got, true))
	default:
		d.term("leader term", want.Term, got.Term)
	}
}

// holders compares the holders of an election of several, in order.
func (d *differ) holders(want, got []gateway.Leader) {
	ws, gs := make([]string, len(want)), make([]string, len(got))
	for i := range want {
		ws[i] = d.leaderString(&want[i], false)
	}
	for i := range got {
		gs[i] = d.leaderString(&got[i], true)
	}
	if len(want) != len(got) || slices.ContainsFunc(want, func(l gateway.Leader) bool {
		return !slices.ContainsFunc(got, func(g gateway.Leader) bool { return g.ID == l.ID })
	}) {
		d.add("holders: record [%s], backend [%s]", strings.Join(ws, ", "), strings.Join(gs, ", "))
		return
	}
	for i := range want {
		if want[i].ID != got[i].ID {
			d.add("holders' order: record [%s], backend [%s]", strings.Join(ws, ", "), strings.Join(gs, ", "))
			return
		}
		d.term("holder "+want[i].ID+" term", want[i].Term, got[i].Term)
	}
}

func (d *differ) leaderString(l *gateway.Leader, backend bool) string {
	if l == nil {
		return "none"
	}
	if backend {
		return l.ID + " " + d.t.backendLabel(l.Term)
	}
	return l.ID + " " + label(l.Term)
}

func (d *differ) transfer(want, got *gateway.Transfer) {
	if transferString(want) != transferString(got) {
		d.add("transfer: record %s, backend %s", transferString(want), transferString(got))
	}
}

func transferString(t *gateway.Transfer) string {
	if t == nil {
		return "none"
	}
	return "to " + t.To + " (" + t.Reason + ")"
}

// event compares two events: what happened, to whom, why, in which term
// and after which leadership; not ids or times.
func (d *differ) event(i int, want, got gateway.Event) {
	w, g := eventString(want, label), eventString(got, d.t.backendLabel)
	if want.ID == loosePrevious {
		// Allowed (Harness.BeginSkipsHeldPrevious): compared without
		// the previous holdership and its reason.
		want.Previous, want.Reason, got.Previous, got.Reason = nil, "", nil, ""
	}
	if want.Type != got.Type || refID(want.Candidate) != refID(got.Candidate) || want.Reason != got.Reason || want.Detail != got.Detail ||
		(want.Previous == nil) != (got.Previous == nil) || (want.Previous != nil && want.Previous.ID != got.Previous.ID) {
		d.add("event %d: record %s, backend %s", i+1, w, g)
		return
	}
	if want.Candidate != nil && !sameJSON(want.Candidate.Metadata, got.Candidate.Metadata) {
		d.add("event %d metadata: record %s, backend %s", i+1, want.Candidate.Metadata, got.Candidate.Metadata)
	}
	d.term(fmt.Sprintf("event %d (%s) term", i+1, want.Type), want.Term, got.Term)
	if want.Previous != nil {
		d.term(fmt.Sprintf("event %d (%s) previous term", i+1, want.Type), want.Previous.Term, got.Previous.Term)
	}
}

func refID(c *gateway.CandidateRef) string {
	if c == nil {
		return ""
	}
	return c.ID
}

// eventString is an event as the report prints it, its terms named by
// name.
func eventString(e gateway.Event, name func(uint64) string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(string(e.Type), "leader."), "candidate.")
	s += "(" + refID(e.Candidate)
	if e.Reason != "" {
		s += ", " + e.Reason
	}
	s += ", " + name(e.Term)
	if e.Previous != nil {
		s += ", after " + e.Previous.ID + " " + name(e.Previous.Term)
	}
	return s + ")"
}

func eventsString(events []gateway.Event, name func(uint64) string) string {
	s := make([]string, len(events))
	for i, e := range events {
		s[i] = eventString(e, name)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// describeLine is the line as "a:leader b:follower c:error".
func describeLine(cands []gateway.Candidate) string {
	return strings.Join(ids(cands), " ")
}

// answerString is an answer as the report prints it, its terms named by
// name.
func answerString(a answer, name func(uint64) string) string {
	if a.err != nil {
		return errClass(a.err)
	}
	switch {
	case a.status != nil:
		st := a.status
		s := fmt.Sprintf("%s %s at %d, term %s", st.Candidate.ID, st.Candidate.State, st.Position, name(st.Term))
		if st.Leader != nil {
			s += ", leader " + st.Leader.ID + " " + name(st.Leader.Term)
		}
		if st.Transfer != nil {
			s += ", transfer " + transferString(st.Transfer)
		}
		return s
	case a.election != nil:
		return electionString(*a.election, name)
	}
	return "ok"
}

func electionString(e gateway.Election, name func(uint64) string) string {
	s := "[" + describeLine(e.Candidates) + "] term " + name(e.Term)
	if e.Transfer != nil {
		s += ", transfer " + transferString(e.Transfer)
	}
	if !e.HandoverUntil.IsZero() {
		s += ", held back"
	}
	return s
}

// sameJSON reports whether two JSON values (or two absent ones) are the
// same, whatever their spacing.
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
