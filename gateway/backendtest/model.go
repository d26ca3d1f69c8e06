package backendtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/electorhq/elector/gateway"
)

// The model test (AgreesWithTheRecord) runs random sequences of steps
// through gateway.Record, the reference state machine, and through the
// backend, and compares after every step what can be compared: the
// outcome (success or which sentinel error), the status or snapshot
// answered, the events (types, candidates, reasons, details, terms and
// previous leaderships, in order; not ids or times), the line (ids,
// states, priorities, metadata, in order), the leader, the pending
// transfer and whether a promotion is held back. Terms are compared by
// order and equality, never by value: a backend's terms only have to
// strictly increase (etcd's are create revisions), so the test pairs the
// Record's terms with the backend's, one to one and in the same order.
//
// Steps: campaigns (ids from a small pool, priorities, metadata, a short
// or a long TTL), heartbeats, resignations, error reports, FailLeader in
// the current or the previous term, transfers, handovers and
// cancellations (by the leader, an operator or a wrong token), changes of
// settings (error cooldown, handover delay, preempt), and silences: a
// candidate stops heartbeating, and its TTL runs out. Some steps are
// refused, on purpose: wrong tokens, unknown candidates, no transfer.
//
// Time. The Record takes the time as an argument; a backend keeps its
// own. The test never asks a backend to be on time; it asks it to do the
// right thing in the right order. Short timers (a candidate's TTL, an
// error cooldown, a handover delay, the hold of a failed leader's
// promise) last seconds; long ones last minutes and never end during a
// sequence. A candidate with a short TTL is kept alive by a background
// heartbeat until a step silences it. After every step that leaves a
// short timer running (a silenced candidate, an error cooldown, a leader
// whose heartbeats a pending transfer refuses, a handover delay, a hold),
// the test waits on the backend's events and snapshots until they show
// every short timer ended, in an order the timers' windows allow (see
// modelRun.settle), and only then takes the next step: no step races a
// timer. Each timer has a window of times at which it may end: its length
// from when it started, widened by how late its start may have been and
// by the backend's lateness; of several running at once, any one whose
// window opens before every other one's closes may end first, and the
// Record is run in each such order. In a testing/synctest bubble
// (Harness.Synctest) windows are exact, and nothing waits.
//
// A disagreement is shrunk (steps deleted, ids made smaller, arguments
// made plainer) while it still shows, and reported as the shortest
// sequence found, step by step, with both sides' answers and events.
// EnvModelSeed replays a seed (on real clocks a backend may end two
// timers of overlapping windows in another order, and the sequence then
// goes another way), EnvModelOps sets the number of steps, EnvModelLog
// logs passing sequences too.
//
// What a backend may do otherwise than the Record is declared by its
// Harness (TransferMovesFollowers, ExpiryHolds, and others) and
// allowed where the comparison would catch it, each with its reason; two
// allowances hold for every backend: FailLeader may refuse a candidate it
// does not know, or a wrong token, before asking whether it leads (see
// modelRun.step), and a promotion held back with nobody in line is not
// compared (see differ.election).
//
// Holders: a configure step sets one, two or three holders (where the
// backend's MaxHolders allows), so transfers name the holder asked to
// hand over, failures and handovers pick one of the holders, and the
// snapshots compare every holder and its term.

// opKind is one kind of step.
type opKind int

const (
	opCampaign opKind = iota
	opHeartbeat
	opResign
	opReportError
	opFailLeader
	opTransfer
	opHandover
	opCancelTransfer
	opConfigure
	opSilence // the candidate's background heartbeats stop: its TTL runs out
)

// tokenKind says which token hash a step presents.
type tokenKind int

const (
	tokenOwn      tokenKind = iota // the candidate's own (or, for transfers, the leader's)
	tokenWrong                     // one nobody holds
	tokenOperator                  // "": an operator's transfer or cancellation
)

// durationKind picks a timer's length: none, short (seconds, ends within
// a sequence) or long (never ends within one).
type durationKind int

const (
	durNone durationKind = iota
	durShort
	durLong
)

// The lengths of timers. Whole seconds, at least two: NATS rounds TTLs
// up to whole seconds, etcd raises leases below two seconds to two.
const (
	shortTTL      = 3 * time.Second
	longTTL       = 10 * time.Minute
	shortCooldown = 2 * time.Second
	longCooldown  = 10 * time.Minute
	shortDelay    = 2 * time.Second
	longDelay     = 10 * time.Minute
)

// op is one step of a sequence. It names candidates, not tokens or terms,
// so any subsequence is a sequence too (which shrinking relies on); the
// run resolves tokens and terms when it takes the step.
type op struct {
	kind     opKind
	id       string    // the candidate, or the transfer's target
	from     string    // transfer: the holder named ("": none named)
	token    tokenKind // campaign: unused
	priority int       // campaign
	metadata bool      // campaign: with metadata
	ttl      durationKind
	stale    bool // fail leader: the term before the current one
	cooldown durationKind
	delay    durationKind
	preempt  bool
	holders  int // configure: 0 (one) or more
}

func (o op) String() string {
	tok := ""
	switch o.token {
	case tokenWrong:
		tok = " with a wrong token"
	case tokenOperator:
		tok = " by an operator"
	}
	switch o.kind {
	case opCampaign:
		s := fmt.Sprintf("campaign %s (%s ttl", o.id, durName(o.ttl))
		if o.priority != 0 {
			s += fmt.Sprintf(", priority %d", o.priority)
		}
		if o.metadata {
			s += ", metadata"
		}
		return s + ")"
	case opHeartbeat:
		return "heartbeat " + o.id + tok
	case opResign:
		return "resign " + o.id + tok
	case opReportError:
		return "report error of " + o.id + tok
	case opFailLeader:
		if o.stale {
			return "fail leader " + o.id + " in the previous term" + tok
		}
		return "fail leader " + o.id + " in the current term" + tok
	case opTransfer:
		if o.token == tokenOwn {
			tok = " by the holder"
		}
		s := "transfer to " + o.id
		if o.from != "" {
			s = "transfer from " + o.from + " to " + o.id
		}
		return s + tok
	case opHandover:
		return "handover by " + o.id + tok
	case opCancelTransfer:
		if o.token == tokenOwn {
			tok = " by the holder"
		}
		return "cancel transfer" + tok
	case opConfigure:
		return fmt.Sprintf("configure cooldown %s, handover delay %s, preempt %v, holders %d", durName(o.cooldown), durName(o.delay), o.preempt, max(o.holders, 1))
	case opSilence:
		return o.id + " stops heartbeating"
	}
	return fmt.Sprintf("op %d", o.kind)
}

func durName(d durationKind) string {
	return [...]string{"none", "short", "long"}[d]
}

// settings are the election settings a configure step asks for.
func (o op) settings() gateway.Settings {
	s := gateway.Settings{Preempt: o.preempt, Holders: o.holders}
	switch o.cooldown {
	case durShort:
		s.ErrorCooldown = shortCooldown
	case durLong:
		s.ErrorCooldown = longCooldown
	}
	switch o.delay {
	case durShort:
		s.HandoverDelay = shortDelay
	case durLong:
		s.HandoverDelay = longDelay
	}
	return s
}

// modelDefaults are the settings an election of the model test starts
// with: a short error cooldown, no handover delay.
var modelDefaults = gateway.Settings{ErrorCooldown: shortCooldown}

// candidateIDs is the pool the steps draw ids from; shrinking moves ids
// towards its start.
var candidateIDs = []string{"a", "b", "c", "d", "e"}

// abilities are what a backend's MaxHolders allows, which decides the
// steps generated.
type abilities struct {
	holders bool // holders above one
}

// generator draws steps, guided by the reference's state so that most
// steps act on candidates that exist, and some on ones that do not.
type generator struct {
	rng *rand.Rand
	can abilities
}

// weighted is a kind of step and how often to draw it.
type weighted struct {
	kind opKind
	w    int
}

// next returns a step for the election in state r. The weights follow
// the state: transfers where there is a leader to ask, handovers and
// cancellations where one is pending, silences where a candidate with a
// short TTL heartbeats; now and then a step that will be refused.
func (g *generator) next(r *gateway.Record) op {
	var shorts []string
	for _, e := range slices.Concat(r.Line, r.Cooling) {
		if e.TTL == shortTTL {
			shorts = append(shorts, e.ID)
		}
	}
	pick := func(cond bool, w int) int {
		if cond {
			return w
		}
		return 1
	}
	kinds := []weighted{
		{opCampaign, pick(len(r.Line)+len(r.Cooling) < 4, 16)}, {opHeartbeat, 6}, {opResign, 7}, {opReportError, 6},
		{opConfigure, 3}, {opSilence, pick(len(shorts) > 0, 6)},
	}
	k := r.Holding()
	kinds = append(kinds,
		weighted{opFailLeader, pick(k > 0, 5)},
		weighted{opTransfer, pick(k > 0 && len(r.Line) > k && r.Pending == nil, 7)},
		weighted{opHandover, pick(r.Pending != nil, 8)},
		weighted{opCancelTransfer, pick(r.Pending != nil, 4)})
	total := 0
	for _, k := range kinds {
		total += k.w
	}
	n := g.rng.IntN(total)
	kind := kinds[0].kind
	for _, k := range kinds {
		if n < k.w {
			kind = k.kind
			break
		}
		n -= k.w
	}
	o := op{kind: kind, id: g.someID(r), token: g.token()}
	switch kind {
	case opCampaign:
		o.id, o.token = g.newID(r), tokenOwn
		o.ttl = durShort
		if g.rng.IntN(3) == 0 {
			o.ttl = durLong
		}
		o.metadata = g.rng.IntN(3) == 0
		if g.rng.IntN(3) == 0 {
			o.priority = 1 + g.rng.IntN(2)
		}
	case opFailLeader:
		if k > 0 && g.rng.IntN(5) > 0 {
			o.id = r.Line[g.rng.IntN(k)].ID
		}
		o.stale = g.rng.IntN(5) == 0
	case opHandover:
		if p := r.Pending; p != nil && g.rng.IntN(5) > 0 {
			o.id = p.From
		} else if k > 0 && g.rng.IntN(2) == 0 {
			o.id = r.Line[g.rng.IntN(k)].ID
		}
	case opTransfer:
		if len(r.Line) > k && g.rng.IntN(5) > 0 {
			o.id = r.Line[k+g.rng.IntN(len(r.Line)-k)].ID
		}
		o.token = g.transferToken()
		// The holder asked: named now and then (needed from an operator
		// when several hold), else the one the token says or the only one.
		if k > 0 && (k > 1 && o.token == tokenOperator || g.rng.IntN(3) == 0) {
			o.from = r.Line[g.rng.IntN(k)].ID
		}
	case opCancelTransfer:
		o.id = ""
		o.token = g.transferToken()
	case opConfigure:
		o.id, o.token = "", tokenOwn
		o.cooldown = durShort + durationKind(g.rng.IntN(4)/3)                        // short, 1 in 4 long
		o.delay = []durationKind{durNone, durNone, durShort, durLong}[g.rng.IntN(4)] // mostly none or short
		o.preempt = g.rng.IntN(2) == 0
		if g.can.holders && g.rng.IntN(3) == 0 {
			o.holders = 2 + g.rng.IntN(2)
		}
	case opSilence:
		o.token = tokenOwn
		if len(shorts) > 0 {
			o.id = shorts[g.rng.IntN(len(shorts))]
		}
	}
	return o
}

// someID is a candidate of r, or now and then any id of the pool.
func (g *generator) someID(r *gateway.Record) string {
	ids := make([]string, 0, len(r.Line)+len(r.Cooling))
	for _, e := range r.Line {
		ids = append(ids, e.ID)
	}
	for _, e := range r.Cooling {
		ids = append(ids, e.ID)
	}
	if len(ids) == 0 || g.rng.IntN(8) == 0 {
		return candidateIDs[g.rng.IntN(len(candidateIDs))]
	}
	return ids[g.rng.IntN(len(ids))]
}

// newID is an id of the pool that r does not hold, or now and then one it
// holds (the campaign is then refused).
func (g *generator) newID(r *gateway.Record) string {
	var free []string
	for _, id := range candidateIDs {
		if r.Find(id) == nil {
			free = append(free, id)
		}
	}
	if len(free) == 0 || g.rng.IntN(10) == 0 {
		return candidateIDs[g.rng.IntN(len(candidateIDs))]
	}
	return free[g.rng.IntN(len(free))]
}

func (g *generator) token() tokenKind {
	if g.rng.IntN(10) == 0 {
		return tokenWrong
	}
	return tokenOwn
}

func (g *generator) transferToken() tokenKind {
	return []tokenKind{tokenOperator, tokenOperator, tokenOwn, tokenWrong}[g.rng.IntN(4)]
}
