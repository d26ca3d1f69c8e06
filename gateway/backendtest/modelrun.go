package backendtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/electorhq/elector/gateway"
)

// modelWait bounds how long a step waits for the backend to show what the
// Record says it should (events, a snapshot after the reconcilers
// moved), beyond the windows of the timers it waits for. Reaching it is a
// disagreement: the backend never showed it.
const modelWait = 15 * time.Second

// Tokens that are nobody's: one presented as a wrong token, one for ids
// that never campaigned.
var (
	wrongToken   = gateway.HashToken("wrong")
	unknownToken = gateway.HashToken("never campaigned")
)

// sentinel is the last step of every sequence: a campaign whose events
// follow every event the backend sent before it, so that an event the
// Record does not have, sent late, shows too.
var sentinel = op{kind: opCampaign, id: "zz", ttl: durLong}

// disagreement is where a sequence showed the backend and the Record
// disagree.
type disagreement struct {
	step int // index in the sequence; len(sequence) for the sentinel
	what string
}

// modelRun runs one sequence in a fresh election of b and the Record.
type modelRun struct {
	ctx      context.Context
	b        gateway.Backend
	tm       timing
	election string
	events   <-chan gateway.Event
	ref      *reference
	terms    *terms
	tokens   map[string]string // id → token hash of its last campaign
	log      []string          // what happened, step by step, for the report

	mu      sync.Mutex
	beats   map[string][]beat // id → its last accepted heartbeats, oldest first
	keepers map[string]*keeper
	refused []string // background heartbeats refused, for the report
}

// keeper heartbeats one candidacy in the background.
type keeper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// sequence says the steps of a run: next returns step i, given the
// Record as it is, or false when there are no more.
type sequence func(i int, r *gateway.Record) (op, bool)

// fixed is the sequence of ops.
func fixed(ops []op) sequence {
	return func(i int, _ *gateway.Record) (op, bool) {
		if i < len(ops) {
			return ops[i], true
		}
		return op{}, false
	}
}

// runSequence runs the steps of seq, then the sentinel, in a fresh
// election of b and in the Record, and returns the steps taken and the
// first disagreement, or nil. The log says what each side answered. An
// error is no disagreement: the backend failed (was unavailable).
func runSequence(b gateway.Backend, tm timing, allow allowances, seq sequence) (ops []op, d *disagreement, log []string, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := name("model")
	events, err := b.Watch(ctx, e, "")
	if err != nil {
		return nil, nil, nil, err
	}
	m := &modelRun{ctx: ctx, b: b, tm: tm, election: e, events: events, ref: newReference(e, allow), terms: newTerms(),
		tokens: map[string]string{}, beats: map[string][]beat{}, keepers: map[string]*keeper{}}
	defer m.stopKeepers()
	for i := 0; ; i++ {
		o, ok := seq(i, m.ref.r)
		last := !ok
		if last {
			o = sentinel
		} else {
			ops = append(ops, o)
		}
		m.logf("%3d. %s", i+1, o)
		what := m.step(o)
		if what == "" && len(m.ref.due()) > 0 {
			what = m.settle()
		}
		if what == known {
			// The rest is not compared: see reference.known.
			m.logf("     %s: the sequence ends here", m.ref.known)
			return ops, nil, m.log, nil
		}
		if what != "" {
			m.mu.Lock()
			if len(m.refused) > 0 {
				m.logf("     background heartbeats refused:\n       %s", strings.Join(m.refused, "\n       "))
			}
			m.mu.Unlock()
		}
		switch {
		case strings.HasPrefix(what, unavailable):
			return ops, nil, m.log, errors.New(what)
		case what != "":
			return ops, &disagreement{step: i, what: what}, m.log, nil
		case last:
			return ops, nil, m.log, nil
		}
	}
}

// unavailable begins what a step returns when the backend failed.
const unavailable = "the backend was unavailable: "

// known is what a step returns when the Record went where the backend
// declares it goes otherwise (reference.known).
const known = "a known difference"

func (m *modelRun) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// step takes one step on both sides and compares the answers, the events
// and then the snapshots; it returns what differs, or "".
func (m *modelRun) step(o op) string {
	x := m.resolve(o)
	if o.kind == opSilence {
		m.stopKeeper(o.id)
	}
	owner := m.ownership(o, x)
	at := span{lo: time.Now()}
	got := m.call(o, x)
	at.hi = time.Now()
	if o.kind == opCampaign && got.err == nil {
		m.tokens[o.id] = x.tokenHash
		m.noteBeat(o.id, beat{sent: at.lo, step: true})
		if o.ttl == durShort {
			m.keep(o.id, x.tokenHash)
		}
	}
	if o.kind == opHeartbeat && got.err == nil {
		m.noteBeat(o.id, beat{sent: at.lo, step: true})
	}
	if errors.Is(got.err, gateway.ErrUnavailable) {
		m.logf("     backend: %v", got.err)
		return unavailable + got.err.Error()
	}
	want, ev := m.ref.apply(o, x, at, m.beat)
	if m.ref.known != "" {
		return known
	}
	if o.kind == opFailLeader && errors.Is(want.err, gateway.ErrNotLeader) && owner != nil && errClass(got.err) == errClass(owner) {
		// Allowed: a backend may check the candidate and its token before
		// its leadership (etcd and NATS do; both refusals change nothing,
		// and Gateway.FailBegin takes both as "no longer leads").
		want.err = owner
	}
	m.logf("     record:  %s", answerString(want, label))
	m.logf("     backend: %s", answerString(got, m.terms.backendLabel))
	if got.err != nil && errClass(got.err) != errClass(want.err) {
		m.logf("              (%v)", got.err)
	}
	d := m.differ(m.terms, m.ref)
	d.answer(want, got)
	if len(d.diff) > 0 {
		return d.String()
	}
	if what := m.expectEvents(ev); what != "" {
		return what
	}
	m.forgetGone()
	if due := m.ref.due(); len(due) > 0 {
		// Timers run: the snapshot of now is there only until the first
		// may end.
		opens := m.tm.widen(due[0].w).lo
		for _, t := range due[1:] {
			if lo := m.tm.widen(t.w).lo; lo.Before(opens) {
				opens = lo
			}
		}
		return m.expectSnapshotUntil(m.ref, opens.Add(-m.tm.late/4))
	}
	return m.expectSnapshot(m.ref)
}

// ownership is the error the Record would answer step o with if it
// checked the candidate and its token first, or nil.
func (m *modelRun) ownership(o op, x args) error {
	e := m.ref.r.Find(o.id)
	switch {
	case !m.ref.exists || e == nil:
		return gateway.ErrCandidateNotFound
	case !gateway.TokenMatches(e.TokenHash, x.tokenHash):
		return gateway.ErrTokenMismatch
	}
	return nil
}

// differ compares with ref: the followers in any order only while a
// transfer is pending in ref on a backend whose transfers move them
// (allowances.reorders). Once it has ended, the backend's line must be
// back in the Record's order.
func (m *modelRun) differ(t *terms, ref *reference) *differ {
	return &differ{t: t, anyOrder: m.ref.allow.reorders && ref.r.Pending != nil}
}

// resolve turns the names of step o into tokens and terms.
func (m *modelRun) resolve(o op) args {
	x := args{tokenHash: m.tokens[o.id]}
	if x.tokenHash == "" {
		x.tokenHash = unknownToken
	}
	r := m.ref.r
	switch o.kind {
	case opCampaign:
		x.tokenHash = token()
		if o.metadata {
			x.metadata = json.RawMessage(`{"zone":"z` + o.id + `"}`)
		}
	case opTransfer:
		// The holder's own token: the named holder's, else the first's.
		x.tokenHash, x.from = wrongToken, o.from
		if k := r.Holding(); o.token == tokenOwn && k > 0 {
			x.tokenHash = m.tokens[r.Line[0].ID]
			if e := r.Find(o.from); e != nil && e.Term != 0 {
				x.tokenHash = m.tokens[o.from]
			}
		}
	case opCancelTransfer:
		// The holder's own token: the one asked to hand over.
		x.tokenHash = wrongToken
		if p := r.Pending; o.token == tokenOwn && p != nil {
			x.tokenHash = m.tokens[p.From]
		}
	case opFailLeader:
		// The candidate's term if it holds, else the last one.
		x.term = r.Term
		if e := r.Find(o.id); e != nil && e.Term != 0 {
			x.term = e.Term
		}
		if o.stale && x.term > 0 {
			x.term--
		}
		x.backendTerm = m.terms.toBackend[x.term]
	}
	switch {
	case o.kind == opCampaign: // always a fresh token, as the Gateway issues
	case o.token == tokenWrong:
		x.tokenHash = wrongToken
	case o.token == tokenOperator:
		x.tokenHash = ""
	}
	return x
}

// call takes step o on the backend.
func (m *modelRun) call(o op, x args) answer {
	ctx, b, e := m.ctx, m.b, m.election
	var (
		st  gateway.Status
		el  gateway.Election
		err error
	)
	switch o.kind {
	case opCampaign:
		st, err = b.Campaign(ctx, e, gateway.Candidacy{ID: o.id, Metadata: x.metadata, TTL: o.ttlDuration(), TokenHash: x.tokenHash, Priority: o.priority}, modelDefaults)
	case opHeartbeat:
		st, err = b.Heartbeat(ctx, e, o.id, x.tokenHash)
	case opResign:
		return answer{err: b.Resign(ctx, e, o.id, x.tokenHash)}
	case opReportError:
		st, err = b.ReportError(ctx, e, o.id, x.tokenHash, errorDetail)
	case opFailLeader:
		st, err = b.FailLeader(ctx, e, o.id, x.tokenHash, x.backendTerm, failDetail)
	case opTransfer:
		el, err = b.TransferFrom(ctx, e, x.from, o.id, x.tokenHash)
		return answer{err: err, election: &el}
	case opHandover:
		st, err = b.Handover(ctx, e, o.id, x.tokenHash)
	case opCancelTransfer:
		el, err = b.CancelTransfer(ctx, e, x.tokenHash)
		return answer{err: err, election: &el}
	case opConfigure:
		el, err = b.Configure(ctx, e, o.settings())
		return answer{err: err, election: &el}
	case opSilence:
		return answer{}
	}
	return answer{err: err, status: &st}
}

// expectEvents waits for the events the Record caused, comparing each as
// it arrives.
func (m *modelRun) expectEvents(want []gateway.Event) string {
	var got []gateway.Event
	defer func() {
		if len(want) > 0 || len(got) > 0 {
			m.logf("     record events:  %s", eventsString(want, label))
			m.logf("     backend events: %s", eventsString(got, m.terms.backendLabel))
		}
	}()
	timeout := time.After(modelWait)
	for len(got) < len(want) {
		select {
		case e, ok := <-m.events:
			if !ok {
				return "the backend closed the watch"
			}
			got = append(got, e)
			d := &differ{t: m.terms}
			d.event(len(got)-1, want[len(got)-1], e)
			if len(d.diff) > 0 {
				return d.String()
			}
		case <-timeout:
			return fmt.Sprintf("after %s the backend sent %d of the %d events the record did", modelWait, len(got), len(want))
		}
	}
	return ""
}

// expectSnapshot waits until the backend's snapshot of the election is
// the reference's (a backend may show some of a step's effects only after
// its reconcilers acted), and returns the last difference if it never is.
func (m *modelRun) expectSnapshot(ref *reference) string {
	return m.expectSnapshotUntil(ref, time.Now().Add(modelWait))
}

// expectSnapshotUntil is expectSnapshot until deadline. A deadline too
// close to have given the backend a fair chance (timers may end) only
// logs that the snapshot was not confirmed.
func (m *modelRun) expectSnapshotUntil(ref *reference, deadline time.Time) string {
	fair := time.Until(deadline) >= time.Second
	for {
		diff, _ := m.diffSnapshot(ref, m.terms.clone())
		if diff == "" {
			m.diffSnapshot(ref, m.terms) // records the terms
			return ""
		}
		if time.Now().After(deadline) {
			if !fair {
				m.logf("     (snapshot not confirmed before the timers could end: %s)", diff)
				return ""
			}
			return "snapshot: " + diff
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diffSnapshot compares the backend's snapshot with ref's, and returns
// the backend's.
func (m *modelRun) diffSnapshot(ref *reference, t *terms) (string, gateway.Election) {
	got, err := m.b.Election(m.ctx, m.election)
	if !ref.exists {
		if !errors.Is(err, gateway.ErrElectionNotFound) {
			return fmt.Sprintf("the record has no election, the backend answers %s", errClass(err)), got
		}
		return "", got
	}
	if err != nil {
		return "reading the election: " + errClass(err), got
	}
	d := m.differ(t, ref)
	d.election(ref.r.Snapshot(), got)
	return d.String(), got
}

// settle waits until every short timer running in the reference has
// ended on the backend, in one of the orders their windows allow (see
// reference.outcomes), and adopts the reference of that order.
func (m *modelRun) settle() string {
	began := time.Now()
	outs := m.ref.outcomes(m.tm, m.beat)
	if len(outs) == 0 {
		// A checker's fault, not the backend's: some window closes before
		// it opens, so the reference's clock ran ahead of the steps'.
		return "the reference allows no order of its timers, a window closing before it opens (the model's fault): " + m.describeWindows()
	}
	for _, o := range outs {
		if o.ref.known != "" {
			m.ref.known = o.ref.known
			return known
		}
	}
	var got []gateway.Event
	deadline := time.Now().Add(modelWait)
	for _, t := range m.ref.due() {
		deadline = maxTime(deadline, m.tm.widen(t.w).hi.Add(modelWait))
	}
	for _, o := range outs {
		deadline = maxTime(deadline, o.quiet.Add(modelWait))
	}
	m.logf("     timers: %s", describeTimers(m.ref.due()))
	for {
		var live []outcome
		for _, o := range outs {
			if m.prefixOf(got, o.events) {
				live = append(live, o)
			}
		}
		if len(live) == 0 {
			m.logf("     backend events: %s", eventsString(got, m.terms.backendLabel))
			return "the backend's events after the timers fit no order of them the record allows:\n" + describeOutcomes(outs)
		}
		for _, o := range live {
			if len(o.events) != len(got) || time.Now().Before(o.quiet) {
				continue
			}
			if diff, snap := m.diffSnapshot(o.ref, m.matched(got, o.events)); diff == "" && !stillHeld(o.ref, snap) {
				m.terms = m.matched(got, o.events)
				m.diffSnapshot(o.ref, m.terms)
				m.ref = o.ref
				m.logf("     timers ended: %s (after %s)", strings.Join(o.order, ", "), time.Since(began).Round(10*time.Millisecond))
				if len(got) > 0 {
					m.logf("     events: %s", eventsString(got, m.terms.backendLabel))
				}
				m.forgetGone()
				return ""
			}
		}
		if time.Now().After(deadline) {
			m.logf("     backend events: %s", eventsString(got, m.terms.backendLabel))
			diff, snap := m.diffSnapshot(live[0].ref, m.matched(got, live[0].events))
			if diff == "" && stillHeld(live[0].ref, snap) {
				diff = fmt.Sprintf("the backend still holds a promotion back (until %s), the record holds none", snap.HandoverUntil.Format(time.RFC3339Nano))
			}
			return fmt.Sprintf("the timers did not end as the record allows: %s\n%s", diff, describeOutcomes(live))
		}
		select {
		case e, ok := <-m.events:
			if !ok {
				return "the backend closed the watch"
			}
			got = append(got, e)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stillHeld reports whether the backend's snapshot got shows a promotion
// held back that ref's does not: a handover delay or hold that ended in
// the reference without a trace (nobody in line to promote, so the
// snapshots' comparison leaves HandoverUntil out) but has not ended on
// the backend yet. Past the quiet time a backend whose engine ends such a
// timer late (the NATS server expires its marker on a coarse clock, and a
// loaded machine delays it further) would otherwise be taken as settled,
// and the next campaign would find the slot still kept. A backend that
// never shows a held promotion with nobody in line (etcd) is unaffected.
func stillHeld(ref *reference, got gateway.Election) bool {
	return ref.r.Snapshot().HandoverUntil.IsZero() && !got.HandoverUntil.IsZero()
}

// prefixOf reports whether got begins want, terms paired as so far.
func (m *modelRun) prefixOf(got, want []gateway.Event) bool {
	if len(got) > len(want) {
		return false
	}
	d := m.differ(m.terms.clone(), m.ref)
	for i := range got {
		d.event(i, want[i], got[i])
	}
	return len(d.diff) == 0
}

// matched is the terms paired as so far and by got matching want.
func (m *modelRun) matched(got, want []gateway.Event) *terms {
	t := m.terms.clone()
	d := &differ{t: t}
	for i := range got {
		d.event(i, want[i], got[i])
	}
	return t
}

func describeTimers(ts []timer) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.key
	}
	return strings.Join(s, ", ")
}

// describeWindows lists the running timers' windows, as the backend may
// keep them, against the reference's clock.
func (m *modelRun) describeWindows() string {
	var s strings.Builder
	fmt.Fprintf(&s, "reference at %s;", m.ref.now.Format("15:04:05.000"))
	for _, t := range m.ref.due() {
		w := m.tm.widen(t.w)
		fmt.Fprintf(&s, " %s %s..%s", t.key, w.lo.Format("15:04:05.000"), w.hi.Format("15:04:05.000"))
	}
	return s.String()
}

// describeOutcomes lists the first ways timers could end.
func describeOutcomes(outs []outcome) string {
	var s strings.Builder
	for i, o := range outs {
		if i == 8 {
			fmt.Fprintf(&s, "       and %d more\n", len(outs)-i)
			break
		}
		fmt.Fprintf(&s, "       after %s: %s, then [%s]\n", strings.Join(o.order, ", "), eventsString(o.events, label), describeLine(o.ref.r.Snapshot().Candidates))
	}
	return s.String()
}

// keep starts heartbeating candidate id every quarter of the short TTL.
func (m *modelRun) keep(id, tokenHash string) {
	m.stopKeeper(id)
	ctx, cancel := context.WithCancel(m.ctx)
	k := &keeper{cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.keepers[id] = k
	m.mu.Unlock()
	go func() {
		defer close(k.done)
		tick := time.NewTicker(shortTTL / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sent := time.Now()
				_, err := m.b.Heartbeat(ctx, m.election, id, tokenHash)
				switch {
				case err == nil:
					m.noteBeat(id, beat{sent: sent, answered: time.Now()})
				case ctx.Err() == nil:
					m.mu.Lock()
					m.refused = append(m.refused, fmt.Sprintf("%s %s: %v", sent.Format("15:04:05.000"), id, err))
					m.mu.Unlock()
				}
			}
		}
	}()
}

// stopKeeper stops the heartbeats of id and waits until none is in flight.
func (m *modelRun) stopKeeper(id string) {
	m.mu.Lock()
	k := m.keepers[id]
	delete(m.keepers, id)
	m.mu.Unlock()
	if k != nil {
		k.cancel()
		<-k.done
	}
}

func (m *modelRun) stopKeepers() {
	m.mu.Lock()
	ids := make([]string, 0, len(m.keepers))
	for id := range m.keepers {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		m.stopKeeper(id)
	}
}

// forgetGone stops the heartbeats of candidates the reference no longer
// has.
func (m *modelRun) forgetGone() {
	m.mu.Lock()
	var gone []string
	for id := range m.keepers {
		if _, ok := m.ref.cands[id]; !ok {
			gone = append(gone, id)
		}
	}
	m.mu.Unlock()
	for _, id := range gone {
		m.stopKeeper(id)
	}
}

// beat is an accepted heartbeat (or campaign): when it was sent, and
// either when its answer came (a background heartbeat) or that it was a
// step's, answered before any later step began.
type beat struct {
	sent, answered time.Time
	step           bool
}

// keptBeats bounds the heartbeats kept per candidate: a step lasts a few
// heartbeat intervals, and only the last few before it are asked for.
const keptBeats = 16

func (m *modelRun) noteBeat(id string, b1 beat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := append(m.beats[id], b1)
	if len(b) > keptBeats {
		b = slices.Delete(b, 0, len(b)-keptBeats)
	}
	m.beats[id] = b
}

// beat is when the last accepted heartbeat (or the campaign) of id was
// sent, among those surely taken before a step that began at before (all
// if before is zero): a step's own, and background ones answered before
// it. A verdict (FailLeader, lowered holders) keeps the slot until a TTL
// after the holder's last heartbeat the backend took before it, while one
// sent as the verdict was made may have been taken after it, answered as
// no longer holding, and extend no promise. (In a synctest bubble both
// come at the same instant, in either order.)
func (m *modelRun) beat(id string, before time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var last time.Time
	for _, b := range m.beats[id] {
		if (before.IsZero() || b.step || b.answered.Before(before)) && b.sent.After(last) {
			last = b.sent
		}
	}
	return last
}
