package etcd

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/electorhq/elector/gateway"
)

// view is what one election is at a revision: a pure function of its keys.
//
// Holders. The line is the candidacy keys ordered by create revision,
// exactly as concurrency.Election orders them. The holders are the longest
// run of keys at the head of the line that open slots of the lead record
// name (their key and create revision), a native key only as the head:
// line[:len(holders)]. The transactions that acknowledge a holder name
// the first key behind the holders and compare that it exists with that
// create revision, and keys created later have higher revisions, so the
// holders are always the N lowest create revisions of the line (N the
// open slots at most), each with its term from the slot (see leadValue),
// and elector's longest-standing holder, when there is one, is the head
// of the line: the candidate every native client considers the leader.
type view struct {
	name     string
	exists   bool
	settings gateway.Settings
	// settingsMod is the settings key's mod revision (0: none), which
	// every acknowledgement compares: a holdership begins only under the
	// holders setting it counted with.
	settingsMod int64
	line        []*entry // by create revision
	cooling     []*entry // by end of cooldown
	lead        *leadValue
	leadMod     int64
	// holders are line[:len(holders)], the longest-standing first, and
	// held[i] the slot of holders[i] in lead.
	holders []*entry
	held    []*slotValue
	// term is the last term handed out (lead.Term).
	term uint64
	// transfer is the lead record's pending transfer while it holds: the
	// holdership it asks to hand over is open (holders[from], or from -1
	// when that holdership's key went: an expiry), or ended otherwise
	// while its target waits (handed: a handover while no slot was free,
	// a lower holders setting, the gateway's verdict; from -1, see
	// leadTransfer), and its target,
	// line[target], is in line behind the holders. A transfer whose target
	// left, or whose holdership ended otherwise, is void, and a
	// reconciler drops it from the record.
	transfer *leadTransfer
	target   int
	from     int
	ids      map[string]idEntry
	mark     *markValue
	markMod  int64
	// handovers and cooldowns are the timers' marker keys (timers.go).
	handovers map[string]uint64
	cooldowns map[string]bool
	// promises are the holders' promise records and promised when this
	// replica first held the newest promise of each holdership
	// (promise.go).
	promises map[string]promiseRecord
	promised map[uint64]time.Time
}

// view derives the view of election name.
func (s *state) view(name string) view { return s.derive(name, deriveAll) }

// leaderView derives what view does of election name but for the
// candidates that only a whole snapshot shows (those cooling, the ids, the
// mark, the cooldowns' markers): its line, holders, transfer, settings,
// lead record, handover markers and promises are view's, by the same
// code, so a snapshot of it names the same holders (Backend.ElectionLeader).
// It shares the state's maps instead of copying them: it must not be used
// once the cache's lock is released.
func (s *state) leaderView(name string) view { return s.derive(name, deriveLeader) }

// eventView derives what the events of a revision are found from (diff,
// departures, eventTime): view's line, cooling, holders, transfer, mark
// and promises, but not its ids, handovers, cooldowns or promise clock
// (nil). With kept, the promises are copied, for a view taken before the
// state changes; without, they are shared, and the view must not be used
// once the state changes or the cache's lock is released.
func (s *state) eventView(name string, kept bool) view {
	if kept {
		return s.derive(name, deriveEventsKept)
	}
	return s.derive(name, deriveEvents)
}

// deriveMode is what derive derives.
type deriveMode int

const (
	deriveAll        deriveMode = iota // view
	deriveLeader                       // leaderView
	deriveEvents                       // eventView, shared
	deriveEventsKept                   // eventView, kept
)

// derive is view, leaderView or eventView, as m says.
func (s *state) derive(name string, m deriveMode) view {
	v := view{name: name, settings: gateway.DefaultSettings(), from: -1}
	e := s.elections[name]
	if e == nil {
		return v
	}
	v.exists = e.exists()
	if e.settings != nil {
		v.settings = e.settings.settings()
	}
	v.settingsMod = e.settingsMod
	v.line = e.ordered()
	v.lead, v.leadMod = e.lead, e.leadMod
	switch m {
	case deriveAll, deriveEvents, deriveEventsKept:
		for _, x := range e.cooling {
			v.cooling = append(v.cooling, x)
		}
		slices.SortFunc(v.cooling, func(a, b *entry) int {
			return cmp.Or(a.value.CooldownUntil.Compare(b.value.CooldownUntil), cmp.Compare(a.create, b.create))
		})
		v.mark, v.markMod = e.mark, e.markMod
	}
	switch m {
	case deriveAll:
		// A view outlives the cache's lock: it shares only values that are
		// replaced, never changed in place (entries, records, the ordered
		// line), and copies maps.
		v.ids = maps.Clone(e.ids)
		v.handovers, v.cooldowns = maps.Clone(e.handovers), maps.Clone(e.cooldowns)
		v.promises, v.promised = maps.Clone(e.promises), maps.Clone(e.promised)
	case deriveLeader:
		v.handovers, v.promises, v.promised = e.handovers, e.promises, e.promised
	case deriveEvents:
		v.promises = e.promises
	case deriveEventsKept:
		v.promises = maps.Clone(e.promises)
	}
	l := e.lead
	if l == nil {
		return v
	}
	v.term = l.Term
	for k := range v.line {
		s := l.names(v.line[k])
		if s == nil || (k > 0 && v.line[k].native) {
			break
		}
		v.holders, v.held = append(v.holders, v.line[k]), append(v.held, s)
	}
	if t := l.Transfer; t != nil {
		from := slices.IndexFunc(v.held, func(s *slotValue) bool { return s.Term == t.FromTerm })
		fs := l.slot(t.FromTerm)
		open := from >= 0 || (fs != nil && fs.Ended == "" && !slices.ContainsFunc(v.line, fs.names)) || (t.Handed && (fs == nil || fs.Ended != ""))
		if i := slices.IndexFunc(v.line, func(x *entry) bool { return x.hex == t.Key }); open && i >= len(v.holders) {
			v.transfer, v.target, v.from = t, i, from
		}
	}
	return v
}

// names returns the open slot of l that names x, or nil.
func (l *leadValue) names(x *entry) *slotValue {
	for i := range l.Slots {
		if s := &l.Slots[i]; s.names(x) {
			return s
		}
	}
	return nil
}

// names reports whether s is open and names x.
func (s *slotValue) names(x *entry) bool {
	return s.Ended == "" && s.Key == x.hex && s.Create == x.create
}

// holds reports whether holdership term is open with its holder in line.
func (v view) holds(term uint64) bool {
	return slices.ContainsFunc(v.held, func(s *slotValue) bool { return s.Term == term })
}

// holderOf returns the index in holders of x, or -1.
func (v view) holderOf(x *entry) int { return slices.Index(v.holders, x) }

// find returns the candidate with id, in line or cooling.
func (v view) find(id string) (x *entry, cooling bool, ok bool) {
	ie, ok := v.ids[id]
	if !ok {
		return nil, false, false
	}
	for _, c := range v.line {
		if c.hex == ie.hex && !c.native && c.value.ID == id {
			return c, false, true
		}
	}
	for _, c := range v.cooling {
		if c.hex == ie.hex && c.value.ID == id {
			return c, true, true
		}
	}
	return nil, false, false
}

// names lists the elections of s, sorted.
func (s *state) names() []string {
	out := make([]string, 0, len(s.elections))
	for n, e := range s.elections {
		if e.exists() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// standing is what a candidate's Status needs of its election, found
// without deriving the whole view: the candidate's entry, the candidates
// ahead of it in line, and the holders as view derives them.
type standing struct {
	x       *entry
	cooling bool
	ahead   int // line entries created before x
	// own is x's slot while x holds, else nil.
	own *slotValue
	// leader is the longest-standing holder and lslot its slot, or nil.
	leader  *entry
	lslot   *slotValue
	lead    *leadValue
	leadMod int64
	term    uint64 // the last term handed out
	// promise and promiseMod are the name and mod revision (0: absent) of
	// the key x's promise goes to while it holds (promise.go).
	promise    string
	promiseMod int64
	// transfer is the pending transfer as view derives it.
	transfer *leadTransfer
	// holders are every holder with its slot, the longest-standing
	// first, when the election has more than one slot; else nil.
	holders []named
}

// named is a key an open slot names.
type named struct {
	x *entry
	s *slotValue
}

// standing finds candidate id of election name. It costs one pass over
// the election's line and allocates nothing with one holder, so a
// heartbeat's answer costs the same with 3 candidates as with 1,000.
func (s *state) standing(name, id string) (st standing, ok bool) {
	e := s.elections[name]
	if e == nil {
		return standing{}, false
	}
	ie, ok := e.ids[id]
	if !ok {
		return standing{}, false
	}
	if x := e.line[ie.hex]; x != nil && !x.native && x.value.ID == id {
		st.x = x
	} else if x := e.cooling[ie.hex]; x != nil && x.value.ID == id {
		st.x, st.cooling = x, true
	} else {
		return standing{}, false
	}
	l := e.lead
	// The keys in line that open slots name (as view: a key and its
	// create revision).
	var buf [4]named
	ns := buf[:0]
	last := int64(-1) // the newest of them
	if l != nil {
		st.lead, st.leadMod, st.term = l, e.leadMod, l.Term
		for i := range l.Slots {
			sl := &l.Slots[i]
			if x := e.line[sl.Key]; x != nil && sl.names(x) {
				ns = append(ns, named{x, sl})
				last = max(last, x.create)
			}
		}
	}
	// One pass: x's place, the head, and block, the oldest key that is
	// not named, ahead of which every key is: the holders are the named
	// keys older than block (a native one only at the head).
	var head *entry
	block := int64(math.MaxInt64)
	for _, y := range e.line {
		if head == nil || y.create < head.create {
			head = y
		}
		if !st.cooling && y.create < st.x.create {
			st.ahead++
		}
		if y.create <= last && y.create < block && !slices.ContainsFunc(ns, func(n named) bool { return n.x == y }) {
			block = y.create
		}
	}
	for _, n := range ns {
		if n.x.native && n.x != head {
			block = min(block, n.x.create)
		}
	}
	holders := 0
	for _, n := range ns {
		if n.x.create >= block {
			continue
		}
		holders++
		if n.x == st.x {
			st.own = n.s
		}
		if n.x == head {
			st.leader, st.lslot = head, n.s
		}
	}
	if e.settings != nil && e.settings.settings().HolderLimit() > 1 {
		st.holders = make([]named, 0, holders)
		for _, n := range ns {
			if n.x.create < block {
				st.holders = append(st.holders, n)
			}
		}
		slices.SortFunc(st.holders, func(a, b named) int { return cmp.Compare(a.x.create, b.x.create) })
	}
	if st.own != nil {
		st.promise = termName(l.list, st.own.Term)
		st.promiseMod = e.promises[st.promise].mod
	}
	// As view: the target is in line behind the holders, and the
	// holdership it replaces is open (its holder holds, or its key went)
	// or handed over while no slot was free.
	if l != nil && l.Transfer != nil {
		t := l.Transfer
		tx := e.line[t.Key]
		isHolder := func(x *entry) bool {
			return x.create < block && slices.ContainsFunc(ns, func(n named) bool { return n.x == x })
		}
		switch fs := l.slot(t.FromTerm); {
		case tx == nil || isHolder(tx):
		case fs == nil:
			if t.Handed {
				st.transfer = t
			}
		case fs.Ended == "":
			if y := e.line[fs.Key]; y == nil || !fs.names(y) || isHolder(y) {
				st.transfer = t
			}
		case t.Handed:
			st.transfer = t
		}
	}
	return st, true
}
