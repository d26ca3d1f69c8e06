package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Record is the whole state of one election as a value: the state machine
// that backends storing an election as one record share (backends/memory
// holds it under a mutex; a networked backend can store it as one key and
// write it with compare-and-set). Its methods make every transition of the
// model and return the events it causes, without ids; the caller assigns
// ids and persists the Record.
//
// Why there is never more than one leader: a Record has exactly one leader
// slot (Leading with Line[0]); promote fills it only when it is empty, and
// every path that removes Line[0] while Leading empties it first. Term is
// incremented in the same step that fills the slot, so successive
// leaderships get strictly increasing terms as long as each new Record is
// written only over the one it was computed from (the caller's mutex or
// compare-and-set guarantees that).
//
// Transfers keep that argument and add one of their own; see Transfer.
//
// Time: a leader may act until its step-down deadline, a TTL after it sent
// the last heartbeat that kept it alive, whatever ended its leadership in
// the Record. A leadership that ends because the leader asked (Resign,
// ReportError, Handover) or because it expired (its deadline has passed:
// see Advance) lets the next begin at once; one that the gateway ends by
// its verdict (FailLeader) holds the next back until the failed leader's
// deadline (Held); see FailLeader.
//
// A method that fails may still have advanced time (expiries, cooldowns,
// handovers): the caller persists the Record whenever err is nil or events
// is not empty.
type Record struct {
	Name     string   `json:"name"`
	Settings Settings `json:"settings"`
	// Term is the current or last leadership's term.
	Term uint64 `json:"term"`
	// Leading says Line[0] is the leader, since LeaderSince.
	Leading     bool      `json:"leading,omitempty"`
	LeaderSince time.Time `json:"leader_since,omitzero"`
	// Previous is the last leadership that ended, and PreviousEnd its reason.
	Previous    *TermRef `json:"previous,omitempty"`
	PreviousEnd string   `json:"previous_end,omitempty"`
	// HandoverUntil holds back promotion after a leader expired.
	HandoverUntil time.Time `json:"handover_until,omitzero"`
	// Held holds back promotion after the gateway failed a leader, until
	// the failed leader's promise has lapsed; see FailLeader.
	Held *Hold `json:"held,omitempty"`
	// Pending is the transfer of leadership waiting for the leader to hand
	// over or to expire; see Transfer.
	Pending *Transfer `json:"transfer,omitempty"`
	// Line is the line: Line[0] the leader (or next leader), then the
	// followers by priority, higher first, then in campaign order; Cooling
	// the candidates in error.
	Line    []Entry `json:"line,omitempty"`
	Cooling []Entry `json:"cooling,omitempty"`

	// EngineTimed says that the ends of handover delays, holds and error
	// cooldowns are decided outside the Record, by a TTL that the
	// backend's engine keeps, and not by the clock of whichever replica
	// applies a transition: Advance and NextDeadline then leave them
	// alone, and the backend calls EndHandover, EndHold and EndCooldown
	// when its engine says the time is up. HandoverUntil, Held.Until and
	// CooldownUntil are still set, as the times shown to users. Not
	// stored.
	EngineTimed bool `json:"-"`
}

// Entry is one candidate inside a Record.
type Entry struct {
	ID            string          `json:"id"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	TTL           time.Duration   `json:"ttl"`
	Priority      int             `json:"priority,omitempty"`
	TokenHash     string          `json:"token_hash"`
	JoinedAt      time.Time       `json:"joined_at"`
	ExpiresAt     time.Time       `json:"expires_at,omitzero"` // zero: see Expire
	CooldownUntil time.Time       `json:"cooldown_until,omitzero"`
}

// Hold is the promise of a leadership that the gateway ended by its
// verdict (FailLeader) while the leader may still believe that it leads:
// no leadership begins before Until, the failed leader's expiry when it
// was failed. TTL is the failed leader's, the longest the hold can be (a
// backend whose engine times the hold starts it with that length).
type Hold struct {
	ID    string        `json:"id"`
	Term  uint64        `json:"term"`
	Until time.Time     `json:"until"`
	TTL   time.Duration `json:"ttl"`
}

// NewRecord returns an empty election.
func NewRecord(name string, s Settings) *Record {
	return &Record{Name: name, Settings: s}
}

// Campaign puts a candidate in line behind every follower of its priority
// or higher. Errors: ErrCandidateExists.
func (r *Record) Campaign(now time.Time, c Candidacy) ([]Event, error) {
	ev := r.Advance(now)
	if r.Find(c.ID) != nil {
		return ev, fmt.Errorf("%q in %q: %w", c.ID, r.Name, ErrCandidateExists)
	}
	e := Entry{ID: c.ID, Metadata: c.Metadata, TTL: c.TTL, Priority: c.Priority, TokenHash: c.TokenHash, JoinedAt: now, ExpiresAt: now.Add(c.TTL)}
	r.insert(e)
	ev = append(ev, r.event(now, EventCandidateJoined, &e, ReasonCampaign))
	return r.promote(now, ev), nil
}

// Heartbeat extends a candidate's life by its TTL. A leader asked to hand
// over is refused with a *TransferPendingError and its life is not
// extended (see Transfer). Errors: ErrCandidateNotFound, ErrTokenMismatch,
// ErrTransferPending.
func (r *Record) Heartbeat(now time.Time, id, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	e, err := r.owned(id, tokenHash)
	if err != nil {
		return ev, err
	}
	if err := r.HandoverDue(id); err != nil {
		return ev, err
	}
	e.ExpiresAt = now.Add(e.TTL)
	return ev, nil
}

// Resign removes a candidate; a leader's successor is promoted at once.
// Errors as Heartbeat.
func (r *Record) Resign(now time.Time, id, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if _, err := r.owned(id, tokenHash); err != nil {
		return ev, err
	}
	ev = r.remove(now, id, ReasonResigned, ev)
	return r.promote(now, ev), nil
}

// ReportError moves a candidate out of line until the error cooldown has
// passed; a leader ends its leadership with reason error and its successor
// is promoted at once. A candidate already in error restarts its cooldown.
// Errors as Heartbeat.
func (r *Record) ReportError(now time.Time, id, tokenHash, reason string) ([]Event, error) {
	return r.reportError(now, id, tokenHash, reason, false)
}

// reportError is ReportError; with verdict, a leader's end holds the next
// leadership back until its promise has lapsed (see FailLeader).
func (r *Record) reportError(now time.Time, id, tokenHash, reason string, verdict bool) ([]Event, error) {
	ev := r.Advance(now)
	e, err := r.owned(id, tokenHash)
	if err != nil {
		return ev, err
	}
	until := now.Add(r.Settings.ErrorCooldown)
	if i := r.cooling(id); i >= 0 {
		e.CooldownUntil = until
		return ev, nil
	}
	moved := *e
	moved.CooldownUntil = until
	if r.Leading && r.Line[0].ID == id {
		lead := r.event(now, EventLeaderError, e, "")
		lead.Detail = reason
		ev = append(ev, lead)
		ev = r.endLeadership(now, ReasonError, ev)
		if verdict {
			r.hold(now, e)
		}
	}
	ev = r.cancelTransfer(now, id, ReasonError, ev)
	r.Line = slices.DeleteFunc(r.Line, func(x Entry) bool { return x.ID == id })
	r.Cooling = append(r.Cooling, moved)
	return r.promote(now, ev), nil
}

// FailLeader is ReportError of the leader of term: it changes nothing and
// returns ErrNotLeader unless candidate id leads in term. Checking and
// reporting in one step on one Record is what keeps a verdict on an old
// leadership from ending a newer one. Errors also as ReportError.
//
// Unlike ReportError, FailLeader is not the leader saying that it has
// stopped: it is the gateway's verdict (its begin webhook went
// unacknowledged), and the leader may not know of it yet. It may have
// been told that it leads, by its campaign's or a heartbeat's answer, by
// an event or by the begin webhook itself (which may have arrived, only
// its acknowledgement not), and under the step-down rule it may act until
// a TTL after it sent its last heartbeat that was answered. So the
// leadership ends at once (events, state error, cooldown), but the next
// does not begin before the failed leader's expiry as of now (Held): no
// heartbeat answers "leader", no leader.begin is sent, reads show no
// leader and HandoverUntil. That expiry is never before its deadline,
// since the Record extends a candidate's life from when it handles the
// heartbeat, after the candidate sent it; with liveness kept outside the
// Record (Entry.ExpiresAt zero) it is taken as a TTL from now, and the
// backend's engine ends the hold (EngineTimed, EndHold) no sooner. No
// answer can be proved never to have said "leader" (the begin webhook
// says it), so every verdict holds. The failed leader's later heartbeats
// are answered "error" and extend its life, not the hold.
//
// While a hold runs nobody leads, so nothing hands leadership on: promote
// waits for it as for a handover delay (which cannot start meanwhile, as
// only a leader's expiry starts one; should both run, promotion waits for
// the later end, they do not add); the next in line, a pending transfer's
// target, a newcomer to an empty line and the failed leader itself back
// from its cooldown all wait; Transfer and preemption need a leader.
func (r *Record) FailLeader(now time.Time, id, tokenHash string, term uint64, reason string) ([]Event, error) {
	ev := r.Advance(now)
	if !r.Leading || r.Line[0].ID != id || r.Term != term {
		return ev, fmt.Errorf("%q in %q, term %d: %w", id, r.Name, term, ErrNotLeader)
	}
	more, err := r.reportError(now, id, tokenHash, reason, true)
	return append(ev, more...), err
}

// hold starts the hold of leader e's promise, failed at now; the caller
// has just ended its leadership (Term is still its term).
func (r *Record) hold(now time.Time, e *Entry) {
	until := e.ExpiresAt
	if until.IsZero() {
		until = now.Add(e.TTL) // liveness kept outside the Record: renewed before now, if at all
	}
	if until.Before(now) {
		until = now // cannot be: Advance(now) would have expired it
	}
	r.Held = &Hold{ID: e.ID, Term: r.Term, Until: until, TTL: e.TTL}
}

// EndHold ends a running hold of a failed leader's promise, as Advance
// does when Held.Until passes, and promotes the head of the line. A
// backend whose Record is EngineTimed calls it when its engine's TTL for
// the hold ends. Without a hold running it changes nothing and returns no
// events.
func (r *Record) EndHold(now time.Time) []Event {
	ev := r.Advance(now)
	if r.Held == nil {
		return ev
	}
	r.Held = nil
	return r.promote(now, ev)
}

// Expire removes a candidate whose liveness ended, as Advance does when its
// ExpiresAt passes. Backends that track liveness outside the Record (a key
// with its own TTL, a lease) leave Entry.ExpiresAt zero and call Expire when
// the liveness ends. An unknown id is not an error: another replica may
// have expired it already.
func (r *Record) Expire(now time.Time, id string) []Event {
	ev := r.Advance(now)
	ev = r.remove(now, id, ReasonExpired, ev)
	return r.promote(now, ev)
}

// Configure replaces the settings. They apply to cooldowns and handovers
// that start afterwards; turning preempt on may start a transfer at once.
func (r *Record) Configure(now time.Time, s Settings) []Event {
	ev := r.Advance(now)
	r.Settings = s
	return r.promote(now, ev)
}

// Advance applies, in time order, every expiry, end of cooldown and end of
// handover delay due at or before now, and promotes the head of the line
// when the leader slot is free. Events carry the time each step was due.
func (r *Record) Advance(now time.Time) []Event {
	var ev []Event
	for {
		st := r.nextStep()
		if st.kind == stepNone || st.at.After(now) {
			break
		}
		switch st.kind {
		case stepExpire:
			ev = r.remove(st.at, st.id, ReasonExpired, ev)
		case stepRejoin:
			ev = r.rejoin(st.at, st.id, ev)
		case stepHandover:
			r.HandoverUntil = time.Time{}
		case stepHold:
			r.Held = nil
		}
		ev = r.promote(st.at, ev)
	}
	return r.promote(now, ev)
}

// EndHandover ends a running handover delay, as Advance does when
// HandoverUntil passes, and promotes the head of the line. A backend whose
// Record is EngineTimed calls it when its engine's TTL for the delay ends.
// Without a delay running it changes nothing and returns no events.
func (r *Record) EndHandover(now time.Time) []Event {
	ev := r.Advance(now)
	if r.HandoverUntil.IsZero() {
		return ev
	}
	r.HandoverUntil = time.Time{}
	return r.promote(now, ev)
}

// EndCooldown puts candidate id, cooling in error, back in line, as
// Advance does when its CooldownUntil passes, and promotes the head of the
// line if the slot is free. A backend whose Record is EngineTimed calls it
// when its engine's TTL for the cooldown ends. For a candidate not cooling
// it changes nothing.
func (r *Record) EndCooldown(now time.Time, id string) []Event {
	ev := r.Advance(now)
	if r.cooling(id) < 0 {
		return ev
	}
	ev = r.rejoin(now, id, ev)
	return r.promote(now, ev)
}

// NextDeadline is when Advance next has work, or ok false if never.
func (r *Record) NextDeadline() (at time.Time, ok bool) {
	st := r.nextStep()
	return st.at, st.kind != stepNone
}

type pendingKind int

const (
	stepNone     pendingKind = iota
	stepExpire               // a candidate's ExpiresAt passed
	stepRejoin               // a candidate's cooldown ended
	stepHandover             // the handover delay ended
	stepHold                 // a failed leader's promise lapsed
)

// pendingStep is one pending time-driven transition.
type pendingStep struct {
	at   time.Time
	kind pendingKind
	id   string
}

// nextStep finds the earliest pending deadline. Of two due at once, the
// one found first wins: an expiry before a rejoin of the same candidate, so
// that an expired candidate never rejoins.
func (r *Record) nextStep() pendingStep {
	var next pendingStep
	consider := func(at time.Time, kind pendingKind, id string) {
		if next.kind == stepNone || at.Before(next.at) {
			next = pendingStep{at: at, kind: kind, id: id}
		}
	}
	for i := range r.Line {
		if e := &r.Line[i]; !e.ExpiresAt.IsZero() { // zero: liveness tracked outside the Record; see Expire
			consider(e.ExpiresAt, stepExpire, e.ID)
		}
	}
	for i := range r.Cooling {
		e := &r.Cooling[i]
		if !e.ExpiresAt.IsZero() {
			consider(e.ExpiresAt, stepExpire, e.ID)
		}
		if !r.EngineTimed {
			consider(e.CooldownUntil, stepRejoin, e.ID)
		}
	}
	if !r.HandoverUntil.IsZero() && !r.EngineTimed {
		consider(r.HandoverUntil, stepHandover, "")
	}
	if r.Held != nil && !r.EngineTimed {
		consider(r.Held.Until, stepHold, "")
	}
	return next
}

// remove takes a candidate out of the election for good.
func (r *Record) remove(now time.Time, id, reason string, ev []Event) []Event {
	if i := r.cooling(id); i >= 0 {
		e := r.Cooling[i]
		r.Cooling = slices.Delete(r.Cooling, i, i+1)
		return append(ev, r.event(now, EventCandidateLeft, &e, reason))
	}
	i := slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == id })
	if i < 0 {
		return ev
	}
	e := r.Line[i]
	ev = r.cancelTransfer(now, id, reason, ev)
	if i == 0 && r.Leading {
		ev = r.endLeadership(now, reason, ev)
		if reason == ReasonExpired && r.Settings.HandoverDelay > 0 {
			r.HandoverUntil = now.Add(r.Settings.HandoverDelay)
		}
	}
	r.Line = slices.Delete(r.Line, i, i+1)
	return append(ev, r.event(now, EventCandidateLeft, &e, reason))
}

// endLeadership empties the leader slot; Line[0] stays until the caller
// removes or moves it.
func (r *Record) endLeadership(now time.Time, reason string, ev []Event) []Event {
	lead := r.Line[0]
	ev = append(ev, r.event(now, EventLeaderEnd, &lead, reason))
	r.Leading = false
	r.LeaderSince = time.Time{}
	r.Previous = &TermRef{ID: lead.ID, Term: r.Term}
	r.PreviousEnd = reason
	return ev
}

// rejoin puts a candidate whose cooldown ended at the back of its
// priority in line.
func (r *Record) rejoin(now time.Time, id string, ev []Event) []Event {
	i := r.cooling(id)
	e := r.Cooling[i]
	r.Cooling = slices.Delete(r.Cooling, i, i+1)
	e.CooldownUntil = time.Time{}
	e.JoinedAt = now
	r.insert(e)
	return append(ev, r.event(now, EventCandidateJoined, &e, ReasonRejoined))
}

// insert puts e in line behind every candidate of its priority or higher.
// A leader keeps Line[0] whatever its priority, and so does the target of
// a pending transfer while the slot is empty: insert never moves them.
func (r *Record) insert(e Entry) {
	from := 0
	if r.Leading || r.Pending != nil {
		from = 1
	}
	r.insertFrom(from, e)
}

// insertFrom puts e in Line[from:] behind every candidate of its priority
// or higher.
func (r *Record) insertFrom(from int, e Entry) {
	i := from
	for i < len(r.Line) && r.Line[i].Priority >= e.Priority {
		i++
	}
	r.Line = slices.Insert(r.Line, i, e)
}

// promote fills an empty leader slot with the head of the line (with the
// target of a pending transfer moved there first), unless a handover delay
// or a failed leader's hold is running; then it starts a preemption if one
// is due. This is the only place a leadership begins.
func (r *Record) promote(now time.Time, ev []Event) []Event {
	if !r.Leading && r.Pending != nil {
		// The slot is empty: the target is next, during a handover delay
		// too, and the line says so.
		if i := slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == r.Pending.To }); i > 0 {
			e := r.Line[i]
			r.Line = slices.Insert(slices.Delete(r.Line, i, i+1), 0, e)
		}
	}
	if r.Leading || len(r.Line) == 0 || !r.HandoverUntil.IsZero() || r.Held != nil {
		return r.preempt(now, ev)
	}
	r.Pending = nil
	r.Leading = true
	r.Term++
	r.LeaderSince = now
	begin := r.event(now, EventLeaderBegin, &r.Line[0], r.PreviousEnd)
	begin.Previous = r.Previous
	return r.preempt(now, append(ev, begin))
}

func (r *Record) event(now time.Time, t EventType, e *Entry, reason string) Event {
	return Event{
		Type: t, Time: now, Election: r.Name, Term: r.Term, Reason: reason,
		Candidate: &CandidateRef{ID: e.ID, Metadata: e.Metadata},
	}
}

// Find returns the candidate with id, in line or cooling, or nil. The
// Entry points into r: changing it changes the Record.
func (r *Record) Find(id string) *Entry {
	for i := range r.Line {
		if r.Line[i].ID == id {
			return &r.Line[i]
		}
	}
	if i := r.cooling(id); i >= 0 {
		return &r.Cooling[i]
	}
	return nil
}

func (r *Record) cooling(id string) int {
	return slices.IndexFunc(r.Cooling, func(x Entry) bool { return x.ID == id })
}

// owned finds a candidate and checks its token.
func (r *Record) owned(id, tokenHash string) (*Entry, error) {
	e := r.Find(id)
	if e == nil {
		return nil, fmt.Errorf("%q in %q: %w", id, r.Name, ErrCandidateNotFound)
	}
	if !TokenMatches(e.TokenHash, tokenHash) {
		return nil, fmt.Errorf("%q in %q: %w", id, r.Name, ErrTokenMismatch)
	}
	return e, nil
}

// Snapshot returns the election as the API shows it. Cursor is left empty
// for the caller to fill.
func (r *Record) Snapshot() Election {
	e := Election{Name: r.Name, Settings: r.Settings, Term: r.Term, HandoverUntil: r.heldUntil(), Transfer: r.pending()}
	e.Candidates = make([]Candidate, 0, len(r.Line)+len(r.Cooling))
	for i, x := range r.Line {
		c := x.candidate(StateFollower)
		if i == 0 && r.Leading {
			c.State, c.Term = StateLeader, r.Term
			e.Leader = r.leader()
		}
		e.Candidates = append(e.Candidates, c)
	}
	cooling := slices.Clone(r.Cooling)
	slices.SortStableFunc(cooling, func(a, b Entry) int { return a.CooldownUntil.Compare(b.CooldownUntil) })
	for _, x := range cooling {
		e.Candidates = append(e.Candidates, x.candidate(StateError))
	}
	return e
}

// LeaderSnapshot returns Snapshot without its Candidates: what a read of
// the leader needs, in time independent of the number of candidates.
func (r *Record) LeaderSnapshot() Election {
	return Election{Name: r.Name, Settings: r.Settings, Term: r.Term, Leader: r.leader(), HandoverUntil: r.heldUntil(), Transfer: r.pending()}
}

// heldUntil is when the promotion held back by a handover delay or by a
// failed leader's promise is due, the later of the two, or zero: what
// reads show as HandoverUntil.
func (r *Record) heldUntil() time.Time {
	t := r.HandoverUntil
	if r.Held != nil && r.Held.Until.After(t) {
		t = r.Held.Until
	}
	return t
}

// Status returns one candidate's Status, as StatusOf(r.Snapshot(), id)
// would, without building the whole snapshot: a heartbeat in an election
// of a thousand candidates costs one scan, not a thousand copies.
func (r *Record) Status(id string) (Status, bool) {
	st := Status{Election: r.Name, Term: r.Term, Leader: r.leader(), Transfer: r.pending()}
	for i, x := range r.Line {
		if x.ID == id {
			st.Candidate, st.Position = x.candidate(StateFollower), i
			if i == 0 && r.Leading {
				st.Candidate.State, st.Candidate.Term = StateLeader, r.Term
			}
			return st, true
		}
	}
	if i := r.cooling(id); i >= 0 {
		st.Candidate, st.Position = r.Cooling[i].candidate(StateError), -1
		return st, true
	}
	return Status{}, false
}

// leader returns the current leadership, or nil when the slot is empty.
func (r *Record) leader() *Leader {
	if !r.Leading {
		return nil
	}
	x := &r.Line[0]
	return &Leader{ID: x.ID, Metadata: x.Metadata, Term: r.Term, Since: r.LeaderSince, ExpiresAt: x.ExpiresAt}
}

func (x Entry) candidate(s State) Candidate {
	return Candidate{ID: x.ID, Metadata: x.Metadata, TTL: x.TTL, Priority: x.Priority, State: s, JoinedAt: x.JoinedAt, ExpiresAt: x.ExpiresAt, CooldownUntil: x.CooldownUntil}
}

// Check verifies the Record's invariants; tests and backends that load a
// Record from storage call it.
func (r *Record) Check() error {
	seen := map[string]bool{}
	for _, e := range append(slices.Clone(r.Line), r.Cooling...) {
		if seen[e.ID] {
			return fmt.Errorf("gateway: record %q: candidate %q appears twice", r.Name, e.ID)
		}
		seen[e.ID] = true
	}
	if r.Leading && len(r.Line) == 0 {
		return fmt.Errorf("gateway: record %q: leading with an empty line", r.Name)
	}
	if r.Leading && r.Term == 0 {
		return fmt.Errorf("gateway: record %q: leading with term 0", r.Name)
	}
	if r.Leading && !r.HandoverUntil.IsZero() {
		return fmt.Errorf("gateway: record %q: leading during a handover delay", r.Name)
	}
	if r.Leading && r.Held != nil {
		return fmt.Errorf("gateway: record %q: leading while the promise of failed term %d holds", r.Name, r.Held.Term)
	}
	return r.checkTransfer()
}
