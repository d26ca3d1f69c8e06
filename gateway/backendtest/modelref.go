package backendtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/electorhq/elector/gateway"
)

// span is when a transition happened: between lo and hi. A step happens
// while its call runs; a timer's end somewhere in its window.
type span struct{ lo, hi time.Time }

// timing is how far a backend's timers may stray from their lengths.
type timing struct {
	early time.Duration // how much sooner than its length a timer may end
	late  time.Duration // how much later, beyond the uncertainty of its start
}

// horizon separates short timers, which end within a sequence, from long
// ones, which never do.
const horizon = time.Minute

// refCandidate is what the reference knows of a candidate beside the
// Record.
type refCandidate struct {
	ttl  time.Duration
	kept bool // a short-TTL candidate whose background heartbeats run
}

// timer is a running timer of the reference: a candidate's expiry
// ("expire:<id>"), a cooldown ("cooldown:<id>"), the handover delay of a
// slot ("handover:<term>") or the hold of a failed holder's promise
// ("hold:<term>"), by the term of the holdership that ended. mark is
// what it was started from, so that a timer started again is told apart.
type timer struct {
	key  string
	mark time.Time
	w    span
}

// reference is the Record the backend is compared with, and the timers
// running in it.
//
// Its Record is EngineTimed and keeps every Entry.ExpiresAt zero, so that
// the Record itself never ends a timer: every expiry, end of a cooldown,
// of a handover delay or of a hold is a transition the test makes
// (Expire, EndCooldown, EndHandover, EndHold), in an order the timers'
// windows allow. Everything else is the Record's own doing.
type reference struct {
	allow  allowances
	r      *gateway.Record
	exists bool // the election was created (by a campaign or configure)
	now    time.Time
	cands  map[string]refCandidate
	timers map[string]timer
	// known says the Record went where the backend declares it goes
	// otherwise, so that the two can no longer be compared
	// (allowances.targetBlocks); the sequence ends there, passed.
	known string
}

// allowances are the differences from the Record a backend may show,
// each explained where the Harness declares it.
type allowances struct {
	reorders    bool // Harness.TransferMovesFollowers
	expiryHolds bool // Harness.ExpiryHolds
	heldPrev    bool // Harness.BeginSkipsHeldPrevious
	// Harness.TransferTargetBlocksSlots
	targetBlocks bool
}

// blocked notes in m.known a slot the Record filled, in a transition that
// made events ev, from behind the target of a transfer that was pending,
// with its holdership open, before (p, a copy) and still is after, when
// the backend declares it leaves such a slot free
// (allowances.targetBlocks).
func (m *reference) blocked(p *gateway.Transfer, ev []gateway.Event) {
	r := m.r
	if !m.allow.targetBlocks || p == nil || !holds(r, p.From, p.Term) || r.Pending == nil || r.Pending.Term != p.Term {
		return
	}
	for _, e := range ev {
		if e.Type == gateway.EventLeaderBegin && e.Candidate != nil && e.Candidate.ID != p.To {
			m.known = fmt.Sprintf("a known difference (Harness.TransferTargetBlocksSlots): %s took a slot while the transfer to %s waits for %s", e.Candidate.ID, p.To, p.From)
			return
		}
	}
}

// holds reports whether id holds r with term.
func holds(r *gateway.Record, id string, term uint64) bool {
	e := r.Find(id)
	return e != nil && e.Term == term && term != 0
}

// pendingOpen is a copy of r's pending transfer if the holdership it asks
// to hand over is open, else nil.
func pendingOpen(r *gateway.Record) *gateway.Transfer {
	if p := r.Pending; p != nil && holds(r, p.From, p.Term) {
		c := *p
		return &c
	}
	return nil
}

// loosePrevious marks, as its id (the Record's events have none), a
// leader.begin whose previous holdership and reason a backend may name
// otherwise (allowances.heldPrev).
const loosePrevious = "previous-not-compared"

// loosen marks the leader.begin events of ev that name as previous a
// holdership whose slot a handover delay or a hold still keeps, when the
// backend may name another there (allowances.heldPrev).
func (m *reference) loosen(ev []gateway.Event) {
	if !m.allow.heldPrev {
		return
	}
	for i, e := range ev {
		if e.Type != gateway.EventLeaderBegin || e.Previous == nil {
			continue
		}
		t := e.Previous.Term
		if slices.ContainsFunc(m.r.Delays, func(d gateway.Delay) bool { return d.Term == t }) ||
			slices.ContainsFunc(m.r.Held, func(h gateway.Hold) bool { return h.Term == t && h.Reason == gateway.ReasonExpired }) {
			ev[i].ID = loosePrevious
		}
	}
}

func newReference(election string, allow allowances) *reference {
	r := gateway.NewRecord(election, modelDefaults)
	r.EngineTimed = true
	return &reference{allow: allow, r: r, cands: map[string]refCandidate{}, timers: map[string]timer{}}
}

// answer is what one side answered a step.
type answer struct {
	err      error
	status   *gateway.Status   // campaign, heartbeat, report error, fail leader, handover
	election *gateway.Election // transfer, cancel transfer, configure
}

// args are a step's arguments resolved to tokens and terms.
type args struct {
	tokenHash   string
	from        string // transfer: the holder named
	term        uint64 // fail leader: the model's term
	backendTerm uint64 // and the backend's
	metadata    json.RawMessage
}

// details the steps report errors with.
const (
	errorDetail = "begin hook exited 1"
	failDetail  = "leader.begin was not acknowledged"
)

// apply makes step o in the reference, as it happened during at; beat
// says when a candidate's last accepted heartbeat was sent (see
// modelRun.beat). It returns the answer and the events.
func (m *reference) apply(o op, x args, at span, beat func(string, time.Time) time.Time) (answer, []gateway.Event) {
	m.now = maxTime(m.now, at.lo)
	now, r := m.now, m.r
	open := pendingOpen(r)
	var (
		ev  []gateway.Event
		err error
		a   answer
	)
	status := func(id string) {
		if err == nil {
			st, _ := r.Status(id)
			a.status = &st
		}
	}
	snapshot := func() {
		if err == nil {
			e := r.Snapshot()
			a.election = &e
		}
	}
	missing := func(err error) bool {
		if !m.exists {
			a.err = err
		}
		return !m.exists
	}
	switch o.kind {
	case opCampaign:
		m.exists = true
		ev, err = r.Campaign(now, gateway.Candidacy{ID: o.id, Metadata: x.metadata, TTL: o.ttlDuration(), TokenHash: x.tokenHash, Priority: o.priority})
		if err == nil {
			m.cands[o.id] = refCandidate{ttl: o.ttlDuration(), kept: o.ttl == durShort}
		}
		status(o.id)
	case opHeartbeat:
		if missing(gateway.ErrCandidateNotFound) {
			break
		}
		ev, err = r.Heartbeat(now, o.id, x.tokenHash)
		status(o.id)
	case opResign:
		if missing(gateway.ErrCandidateNotFound) {
			break
		}
		ev, err = r.Resign(now, o.id, x.tokenHash)
	case opReportError:
		if missing(gateway.ErrCandidateNotFound) {
			break
		}
		ev, err = r.ReportError(now, o.id, x.tokenHash, errorDetail)
		status(o.id)
	case opFailLeader:
		if missing(gateway.ErrCandidateNotFound) {
			break
		}
		ev, err = r.FailLeader(now, o.id, x.tokenHash, x.term, failDetail)
		status(o.id)
	case opTransfer:
		if missing(gateway.ErrElectionNotFound) {
			break
		}
		ev, err = r.Transfer(now, x.from, o.id, x.tokenHash)
		snapshot()
	case opHandover:
		if missing(gateway.ErrCandidateNotFound) {
			break
		}
		ev, err = r.Handover(now, o.id, x.tokenHash)
		status(o.id)
	case opCancelTransfer:
		if missing(gateway.ErrElectionNotFound) {
			break
		}
		ev, err = r.CancelTransfer(now, x.tokenHash)
		snapshot()
	case opConfigure:
		m.exists = true
		ev = r.Configure(now, o.settings())
		snapshot()
	case opSilence:
		if c, ok := m.cands[o.id]; ok {
			c.kept = false
			m.cands[o.id] = c
		}
	}
	if a.err == nil {
		a.err = err
	}
	m.settled(at, beat)
	m.loosen(ev)
	m.blocked(open, ev)
	return a, ev
}

func (o op) ttlDuration() time.Duration {
	if o.ttl == durLong {
		return longTTL
	}
	return shortTTL
}

// settled brings the reference's bookkeeping up to date after a
// transition that happened during at: liveness stays outside the Record,
// candidates that left are forgotten, and the timers are those running
// now.
func (m *reference) settled(at span, beat func(string, time.Time) time.Time) {
	for _, l := range [][]gateway.Entry{m.r.Line, m.r.Cooling} {
		for i := range l {
			l[i].ExpiresAt = time.Time{}
		}
	}
	for id := range m.cands {
		if m.r.Find(id) == nil {
			delete(m.cands, id)
		}
	}
	m.retime(at, beat)
}

// retime recomputes the running timers. A timer already running keeps
// its window; one started during at gets a window from its length, with
// the uncertainty of at and the backend's timing added by the caller
// (windows here are exact; see widen).
func (m *reference) retime(at span, beat func(string, time.Time) time.Time) {
	next := map[string]timer{}
	add := func(key string, mark time.Time, w func() span) {
		if old, ok := m.timers[key]; ok && old.mark.Equal(mark) {
			next[key] = old
			return
		}
		next[key] = timer{key: key, mark: mark, w: w()}
	}
	for _, e := range slices.Concat(m.r.Line, m.r.Cooling) {
		c := m.cands[e.ID]
		if c.ttl == shortTTL && (!c.kept || m.r.HandoverDue(e.ID) != nil) {
			// Its heartbeats stopped counting at the latest during at,
			// and its last one that counted was sent at beat.
			add("expire:"+e.ID, time.Time{}, func() span {
				return span{beat(e.ID, time.Time{}).Add(c.ttl), at.hi.Add(c.ttl)}
			})
		}
	}
	uncertain := at.hi.Sub(m.now)
	for _, e := range m.r.Cooling {
		add("cooldown:"+e.ID, e.CooldownUntil, func() span {
			return span{e.CooldownUntil, e.CooldownUntil.Add(uncertain)}
		})
	}
	for _, d := range m.r.Delays {
		add(fmt.Sprintf("handover:%d", d.Term), d.Until, func() span { return span{d.Until, d.Until.Add(uncertain)} })
	}
	for _, h := range m.r.Held {
		// The failed holder may act until a TTL after its last heartbeat
		// the backend took before the verdict, which surely includes those
		// answered before at began (modelRun.beat); no backend holds less,
		// none more than a TTL after the verdict.
		add(fmt.Sprintf("hold:%d", h.Term), h.Until, func() span { return span{beat(h.ID, at.lo).Add(h.TTL), at.hi.Add(h.TTL)} })
	}
	m.timers = next
}

// due returns the short timers running, those that end within a
// sequence, by key.
func (m *reference) due() []timer {
	var out []timer
	for _, t := range m.timers {
		if t.w.lo.Before(m.now.Add(horizon)) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b timer) int { return strings.Compare(a.key, b.key) })
	return out
}

// fire ends timer t (widened by tm) in the reference and returns the
// events.
func (m *reference) fire(t timer, tm timing, beat func(string, time.Time) time.Time) []gateway.Event {
	w := tm.widen(t.w)
	m.now = maxTime(m.now, w.lo)
	open := pendingOpen(m.r)
	var ev []gateway.Event
	kind, id, _ := strings.Cut(t.key, ":")
	term, _ := strconv.ParseUint(id, 10, 64)
	switch kind {
	case "expire":
		r := m.r
		i := slices.IndexFunc(r.Line[:r.Holding()], func(e gateway.Entry) bool { return e.ID == id })
		var held uint64
		if i >= 0 {
			held = r.Line[i].Term
		}
		if m.allow.expiryHolds && i >= 0 && r.Settings.HandoverDelay == 0 {
			// Allowed: the expired holder's promise keeps its slot until
			// it lapses, a TTL after its last heartbeat, which its expiry
			// is too; so by the end of the expiry's window. (A handover
			// delay, longer, keeps the slot anyway.)
			ttl := m.cands[id].ttl
			r.Held = append(r.Held, gateway.Hold{ID: id, Term: held, Until: m.now, TTL: ttl, Reason: gateway.ReasonExpired})
			key := fmt.Sprintf("hold:%d", held)
			m.timers[key] = timer{key: key, mark: m.now, w: span{beat(id, time.Time{}).Add(ttl), t.w.hi}}
		}
		ev = r.Expire(m.now, id)
	case "cooldown":
		ev = m.r.EndCooldown(m.now, id)
	case "handover":
		ev = m.r.EndHandover(m.now, term)
	case "hold":
		ev = m.r.EndHold(m.now, term)
	}
	delete(m.timers, t.key)
	m.settled(span{m.now, w.hi}, beat)
	m.loosen(ev)
	m.blocked(open, ev)
	return ev
}

// widen is w as the backend may keep it.
func (tm timing) widen(w span) span {
	return span{w.lo.Add(-tm.early), w.hi.Add(tm.late)}
}

// outcome is one way the short timers running can end: the reference
// after them, and the events on the way.
type outcome struct {
	ref    *reference
	events []gateway.Event
	order  []string // the timers, in the order they ended
	// quiet is when the last timer that ended without a trace (no event;
	// a delay or hold with nobody in line, which no snapshot shows) must
	// have ended: the outcome cannot be told from the state before it
	// until then.
	quiet time.Time
}

// maxOutcomes bounds the orders settle considers.
const maxOutcomes = 256

// outcomes returns every way the short timers running can end, one timer
// after another: first any timer whose window opens before every other
// running timer's closes, then, from each resulting state, the same
// again, until no short timer runs.
func (m *reference) outcomes(tm timing, beat func(string, time.Time) time.Time) []outcome {
	due := m.due()
	if len(due) == 0 {
		return []outcome{{ref: m}}
	}
	closes := tm.widen(due[0].w).hi
	for _, t := range due[1:] {
		if hi := tm.widen(t.w).hi; hi.Before(closes) {
			closes = hi
		}
	}
	var out []outcome
	for _, t := range due {
		if tm.widen(t.w).lo.After(closes) {
			continue
		}
		c := m.clone()
		ev := c.fire(t, tm, beat)
		var quiet time.Time
		if len(ev) == 0 {
			quiet = tm.widen(t.w).hi
		}
		for _, o := range c.outcomes(tm, beat) {
			out = append(out, outcome{ref: o.ref, events: slices.Concat(ev, o.events), order: append([]string{t.key}, o.order...),
				quiet: maxTime(quiet, o.quiet)})
			if len(out) >= maxOutcomes {
				return out
			}
		}
	}
	return out
}

// clone is a deep copy of m.
func (m *reference) clone() *reference {
	data, err := json.Marshal(m.r)
	if err != nil {
		panic(err)
	}
	r := &gateway.Record{}
	if err := json.Unmarshal(data, r); err != nil {
		panic(err)
	}
	r.EngineTimed = true
	c := *m
	c.r = r
	c.cands = maps.Clone(m.cands)
	c.timers = maps.Clone(m.timers)
	return &c
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
