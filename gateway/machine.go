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
// Holders. An election has N = Settings.HolderLimit() slots (1 by
// default): the first candidates in line hold them, Line[:Holding()], the
// oldest holdership first. A slot is taken by a holder, or kept empty by a
// running handover delay (Delays) or by the hold of a promise (Held), or
// free. With N = 1 the one holder is the leader and everything reads as
// for a single leader.
//
// Why there are never more than N holders acting at once (the safety
// argument). A holder may act until its step-down deadline, a TTL after it
// sent the last heartbeat that kept it alive, whatever ended its
// holdership in the Record. Count as acting, at any moment, the open
// holderships and the ended ones whose holder may not know yet: those the
// gateway ended by its verdict (FailLeader: the begin webhook went
// unacknowledged) and those ended by lowering N (Configure). Every such
// ended holdership keeps its slot held (a Hold) until the holder's expiry
// as of the verdict, which is never before its step-down deadline. A
// holdership that ends on the holder's own word (Resign, ReportError,
// Handover: its client stopped acting first) or because it expired (its
// deadline has passed: see Advance) needs no hold; an expiry starts the
// handover delay, which keeps the slot empty for a margin more. So the
// acting holders are at most Holding() + len(Held), and promote, the only
// place a holdership begins, begins one only while Holding() + len(Delays)
// + len(Held) < N, one at a time, counting the one it begins before the
// next. Hence no holdership begins while N or more may act. Raising N
// lets promote fill the new slots at once; lowering it begins nothing and
// ends the newest holderships, which stay counted through their holds, so
// raising N again soon after fills no slot whose previous holder may
// still act. The bound that holds across a change of N: no holdership
// begins while as many holders as the setting of that moment may act.
//
// Terms: Term is incremented in the same step that fills a slot, and every
// holdership takes the new value, so successive holderships (of every
// slot) get strictly increasing, unique terms as long as each new Record
// is written only over the one it was computed from (the caller's mutex or
// compare-and-set guarantees that).
//
// Transfers keep that argument and add one of their own; see Transfer.
//
// A method that fails may still have advanced time (expiries, cooldowns,
// handovers): the caller persists the Record whenever err is nil or events
// is not empty.
type Record struct {
	Name     string   `json:"name"`
	Settings Settings `json:"settings"`
	// Term is the last term handed out: the newest holdership's, open or
	// ended (0 before the first). With one holder, the current or last
	// leadership's.
	Term uint64 `json:"term"`
	// Previous is the last holdership that ended, and PreviousEnd its
	// reason; the next leader.begin names them.
	Previous    *TermRef `json:"previous,omitempty"`
	PreviousEnd string   `json:"previous_end,omitempty"`
	// Delays are the running handover delays: each keeps the slot of a
	// holdership that expired empty until its end; see remove.
	Delays []Delay `json:"delays,omitempty"`
	// Held are the running holds: each keeps the slot of a holdership
	// that the gateway ended by its verdict (FailLeader) or by lowering
	// the holders (Configure) empty until the holder's promise has lapsed.
	Held []Hold `json:"holds,omitempty"`
	// Pending is the transfer of a holdership waiting for its holder to
	// hand over or to expire; see Transfer.
	Pending *Transfer `json:"transfer,omitempty"`
	// Line is the line: Line[:Holding()] the holders, the oldest
	// holdership first (each with its Term and Since), then the followers
	// by priority, higher first, then in campaign order (the target of a
	// pending transfer whose holdership ended first of all); Cooling the
	// candidates in error.
	Line    []Entry `json:"line,omitempty"`
	Cooling []Entry `json:"cooling,omitempty"`

	// EngineTimed says that the ends of handover delays, holds and error
	// cooldowns are decided outside the Record, by a TTL that the
	// backend's engine keeps, and not by the clock of whichever replica
	// applies a transition: Advance and NextDeadline then leave them
	// alone, and the backend calls EndHandover, EndHold and EndCooldown
	// when its engine says the time is up. Delay.Until, Hold.Until and
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
	// Term and Since are the holdership's term and beginning while the
	// entry holds, else zero.
	Term  uint64    `json:"term,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// Delay is a running handover delay: the slot of holdership Term, held
// by ID until it expired, is not filled before Until.
type Delay struct {
	ID    string    `json:"id"`
	Term  uint64    `json:"term"`
	Until time.Time `json:"until"`
}

// Hold is the promise of a holdership that the gateway ended by its
// verdict while the holder may still believe that it holds (FailLeader:
// Reason error; Configure lowering the holders: Reason holders_reduced):
// its slot is not filled before Until, the holder's expiry when it was
// ended. TTL is the holder's, the longest the hold can be (a backend
// whose engine times the hold starts it with that length).
type Hold struct {
	ID     string        `json:"id"`
	Term   uint64        `json:"term"`
	Until  time.Time     `json:"until"`
	TTL    time.Duration `json:"ttl"`
	Reason string        `json:"reason,omitempty"`
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

// Heartbeat extends a candidate's life by its TTL. A holder asked to hand
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

// Resign removes a candidate; a holder's slot goes to the next in line at
// once. Errors as Heartbeat.
func (r *Record) Resign(now time.Time, id, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if _, err := r.owned(id, tokenHash); err != nil {
		return ev, err
	}
	ev = r.remove(now, id, ReasonResigned, ev)
	return r.promote(now, ev), nil
}

// ReportError moves a candidate out of line until the error cooldown has
// passed; a holder ends its holdership with reason error and its slot goes
// to the next in line at once. A candidate already in error restarts its
// cooldown. Errors as Heartbeat.
func (r *Record) ReportError(now time.Time, id, tokenHash, reason string) ([]Event, error) {
	return r.reportError(now, id, tokenHash, reason, false)
}

// reportError is ReportError; with verdict, a holder's slot is held until
// its promise has lapsed (see FailLeader).
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
	i := r.inLine(id)
	var moved Entry
	if i < r.Holding() {
		lead := r.holderEvent(now, EventLeaderError, &r.Line[i], "")
		lead.Detail = reason
		ev = append(ev, lead)
		var term uint64
		moved, term, ev = r.endHolding(now, i, ReasonError, ev)
		if verdict {
			r.hold(now, moved, term, ReasonError)
		}
	} else {
		ev = r.cancelTransfer(now, id, ReasonError, ev) // a follower may be a transfer's target
		moved = r.Line[i]
		r.Line = slices.Delete(r.Line, i, i+1)
	}
	moved.CooldownUntil = until
	r.Cooling = append(r.Cooling, moved)
	return r.promote(now, ev), nil
}

// FailLeader is ReportError of the holder of term: it changes nothing and
// returns ErrNotLeader unless candidate id holds term. Checking and
// reporting in one step on one Record is what keeps a verdict on an old
// holdership from ending a newer one. Errors also as ReportError.
//
// Unlike ReportError, FailLeader is not the holder saying that it has
// stopped: it is the gateway's verdict (its begin webhook went
// unacknowledged), and the holder may not know of it yet. It may have
// been told that it leads, by its campaign's or a heartbeat's answer, by
// an event or by the begin webhook itself (which may have arrived, only
// its acknowledgement not), and under the step-down rule it may act until
// a TTL after it sent its last heartbeat that was answered. So the
// holdership ends at once (events, state error, cooldown), but its slot
// is not filled before the failed holder's expiry as of now (a Hold in
// Held): with one holder, no heartbeat answers "leader", no leader.begin
// is sent, reads show no leader and HandoverUntil; with more, the other
// slots are unaffected. That expiry is never before its deadline,
// since the Record extends a candidate's life from when it handles the
// heartbeat, after the candidate sent it; with liveness kept outside the
// Record (Entry.ExpiresAt zero) it is taken as a TTL from now, and the
// backend's engine ends the hold (EngineTimed, EndHold) no sooner. No
// answer can be proved never to have said "leader" (the begin webhook
// says it), so every verdict holds. The failed holder's later heartbeats
// are answered "error" and extend its life, not the hold.
//
// While a hold runs its slot is taken, so nothing hands it on: promote
// counts it as it counts a handover delay (should both run for one slot's
// worth of time, they do not add: each is its own slot); the next in line,
// a pending transfer's target, a newcomer to an empty line and the failed
// holder itself back from its cooldown all wait for a free slot; with one
// holder, Transfer and preemption need a leader.
func (r *Record) FailLeader(now time.Time, id, tokenHash string, term uint64, reason string) ([]Event, error) {
	ev := r.Advance(now)
	if i := r.holder(id); i < 0 || r.Line[i].Term != term {
		return ev, fmt.Errorf("%q in %q, term %d: %w", id, r.Name, term, ErrNotLeader)
	}
	more, err := r.reportError(now, id, tokenHash, reason, true)
	return append(ev, more...), err
}

// hold keeps the slot of holdership term, held by e until the gateway
// ended it at now for reason, until e's promise has lapsed.
func (r *Record) hold(now time.Time, e Entry, term uint64, reason string) {
	until := e.ExpiresAt
	if until.IsZero() {
		until = now.Add(e.TTL) // liveness kept outside the Record: renewed before now, if at all
	}
	if until.Before(now) {
		until = now // cannot be: Advance(now) would have expired it
	}
	r.Held = append(r.Held, Hold{ID: e.ID, Term: term, Until: until, TTL: e.TTL, Reason: reason})
}

// EndHold ends the running hold of holdership term, as Advance does when
// its Until passes, and fills the slot from the line. A backend whose
// Record is EngineTimed calls it when its engine's TTL for the hold ends.
// Without that hold running it changes nothing and returns no events but
// Advance's.
func (r *Record) EndHold(now time.Time, term uint64) []Event {
	ev := r.Advance(now)
	i := slices.IndexFunc(r.Held, func(h Hold) bool { return h.Term == term })
	if i < 0 {
		return ev
	}
	r.Held = slices.Delete(r.Held, i, i+1)
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
// Raising the holders fills the new slots from the line at once. Lowering
// them ends the newest holderships first (leader.end, reason
// holders_reduced): the holders stay in line as followers, ahead of the
// followers of their priority, and each one's slot is held until its
// promise has lapsed, as after FailLeader, since it may not know yet.
// Lowering begins no holdership.
func (r *Record) Configure(now time.Time, s Settings) []Event {
	ev := r.Advance(now)
	r.Settings = s
	for k := r.Holding(); k > s.HolderLimit(); k-- {
		var (
			e    Entry
			term uint64
		)
		e, term, ev = r.endHolding(now, k-1, ReasonHoldersReduced, ev)
		r.hold(now, e, term, ReasonHoldersReduced)
		r.insertAhead(e)
	}
	return r.promote(now, ev)
}

// Advance applies, in time order, every expiry, end of cooldown, end of
// handover delay and end of hold due at or before now, and fills free
// slots from the line after each. Events carry the time each step was due.
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
			r.Delays = slices.DeleteFunc(r.Delays, func(d Delay) bool { return d.Term == st.term })
		case stepHold:
			r.Held = slices.DeleteFunc(r.Held, func(h Hold) bool { return h.Term == st.term })
		}
		ev = r.promote(st.at, ev)
	}
	return r.promote(now, ev)
}

// EndHandover ends the running handover delay of the slot of holdership
// term, as Advance does when its Until passes, and fills the slot from the
// line. A backend whose Record is EngineTimed calls it when its engine's
// TTL for the delay ends. Without that delay running it changes nothing
// and returns no events but Advance's.
func (r *Record) EndHandover(now time.Time, term uint64) []Event {
	ev := r.Advance(now)
	i := slices.IndexFunc(r.Delays, func(d Delay) bool { return d.Term == term })
	if i < 0 {
		return ev
	}
	r.Delays = slices.Delete(r.Delays, i, i+1)
	return r.promote(now, ev)
}

// EndCooldown puts candidate id, cooling in error, back in line, as
// Advance does when its CooldownUntil passes, and fills a free slot. A
// backend whose Record is EngineTimed calls it
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
	stepHandover             // a handover delay ended
	stepHold                 // a hold's promise lapsed
)

// pendingStep is one pending time-driven transition.
type pendingStep struct {
	at   time.Time
	kind pendingKind
	id   string
	term uint64 // of the delay or hold
}

// nextStep finds the earliest pending deadline. Of two due at once, the
// one found first wins: an expiry before a rejoin of the same candidate, so
// that an expired candidate never rejoins.
func (r *Record) nextStep() pendingStep {
	var next pendingStep
	consider := func(at time.Time, kind pendingKind, id string, term uint64) {
		if next.kind == stepNone || at.Before(next.at) {
			next = pendingStep{at: at, kind: kind, id: id, term: term}
		}
	}
	for i := range r.Line {
		if e := &r.Line[i]; !e.ExpiresAt.IsZero() { // zero: liveness tracked outside the Record; see Expire
			consider(e.ExpiresAt, stepExpire, e.ID, 0)
		}
	}
	for i := range r.Cooling {
		e := &r.Cooling[i]
		if !e.ExpiresAt.IsZero() {
			consider(e.ExpiresAt, stepExpire, e.ID, 0)
		}
		if !r.EngineTimed {
			consider(e.CooldownUntil, stepRejoin, e.ID, 0)
		}
	}
	if !r.EngineTimed {
		for _, d := range r.Delays {
			consider(d.Until, stepHandover, "", d.Term)
		}
		for _, h := range r.Held {
			consider(h.Until, stepHold, "", h.Term)
		}
	}
	return next
}

// remove takes a candidate out of the election for good. A holder's
// expiry keeps its slot empty for the handover delay.
func (r *Record) remove(now time.Time, id, reason string, ev []Event) []Event {
	if i := r.cooling(id); i >= 0 {
		e := r.Cooling[i]
		r.Cooling = slices.Delete(r.Cooling, i, i+1)
		return append(ev, r.event(now, EventCandidateLeft, &e, reason))
	}
	i := r.inLine(id)
	if i < 0 {
		return ev
	}
	ev = r.cancelTransfer(now, id, reason, ev)
	var e Entry
	if i < r.Holding() {
		var term uint64
		e, term, ev = r.endHolding(now, i, reason, ev)
		if reason == ReasonExpired && r.Settings.HandoverDelay > 0 {
			r.Delays = append(r.Delays, Delay{ID: id, Term: term, Until: now.Add(r.Settings.HandoverDelay)})
		}
	} else {
		e = r.Line[i]
		r.Line = slices.Delete(r.Line, i, i+1)
	}
	return append(ev, r.event(now, EventCandidateLeft, &e, reason))
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

// event is an event about candidate e, with the election's term.
func (r *Record) event(now time.Time, t EventType, e *Entry, reason string) Event {
	return Event{
		Type: t, Time: now, Election: r.Name, Term: r.Term, Reason: reason,
		Candidate: &CandidateRef{ID: e.ID, Metadata: e.Metadata},
	}
}

// holderEvent is an event about holder e, with its holdership's term.
func (r *Record) holderEvent(now time.Time, t EventType, e *Entry, reason string) Event {
	ev := r.event(now, t, e, reason)
	ev.Term = e.Term
	return ev
}

// Find returns the candidate with id, in line or cooling, or nil. The
// Entry points into r: changing it changes the Record.
func (r *Record) Find(id string) *Entry {
	if i := r.inLine(id); i >= 0 {
		return &r.Line[i]
	}
	if i := r.cooling(id); i >= 0 {
		return &r.Cooling[i]
	}
	return nil
}

func (r *Record) inLine(id string) int {
	return slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == id })
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
	e := r.LeaderSnapshot()
	e.Candidates = make([]Candidate, 0, len(r.Line)+len(r.Cooling))
	for _, x := range r.Line {
		c := x.candidate(StateFollower)
		if x.Term != 0 {
			c.State, c.Term = StateLeader, x.Term
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
	return Election{Name: r.Name, Settings: r.Settings, Term: r.Term, Leader: r.leader(), Holders: r.holders(), HandoverUntil: r.heldUntil(), Transfer: r.pending()}
}

// Status returns one candidate's Status, as StatusOf(r.Snapshot(), id)
// would, without building the whole snapshot: a heartbeat in an election
// of a thousand candidates costs one scan, not a thousand copies.
func (r *Record) Status(id string) (Status, bool) {
	st := Status{Election: r.Name, Term: r.Term, Leader: r.leader(), Holders: r.holders(), Transfer: r.pending()}
	if i := r.inLine(id); i >= 0 {
		x := r.Line[i]
		st.Candidate, st.Position = x.candidate(StateFollower), i
		if x.Term != 0 {
			st.Candidate.State, st.Candidate.Term, st.Term = StateLeader, x.Term, x.Term
		}
		return st, true
	}
	if i := r.cooling(id); i >= 0 {
		st.Candidate, st.Position = r.Cooling[i].candidate(StateError), -1
		return st, true
	}
	return Status{}, false
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
	if err := r.checkHolders(); err != nil {
		return err
	}
	return r.checkTransfer()
}
