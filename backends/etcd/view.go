package etcd

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/electorhq/elector/gateway"
)

// view is what one election is at a revision: a pure function of its keys.
//
// Leadership. The line is the candidacy keys ordered by create revision,
// exactly as concurrency.Election orders them. Elector reports a leader
// only when the lead record names the head of the line (its key and create
// revision): the transaction that writes the lead record checks that the
// key it names exists with that create revision and is the oldest in the
// line, and keys created later have higher revisions, so a key named by the
// lead record stays the head of the line for as long as it exists. Hence
// elector's leader is always the candidate every native client also
// considers the leader, the view has at most one leader, and its term (that
// create revision) is larger than any term before it.
type view struct {
	name     string
	exists   bool
	settings gateway.Settings
	line     []*entry // by create revision
	cooling  []*entry // by end of cooldown
	lead     *leadValue
	leadMod  int64
	leader   *entry // the acknowledged leader, line[0], or nil
	term     uint64
	// pending: the leadership the lead record names ended without elector
	// ending it (an expiry), and the next leader is held back until a
	// reconciler writes the lead record again (after the handover delay).
	pending bool
	// transfer is the lead record's pending transfer while it holds: a
	// leadership is open (or pending) and its target, line[target], is in
	// line behind the head. A transfer whose target left is void, and a
	// reconciler drops it from the record.
	transfer *leadTransfer
	target   int
	ids      map[string]idEntry
	mark     *markValue
	markMod  int64
	// handover and cooldowns are the timers' marker keys (timers.go).
	handover  *markerValue
	cooldowns map[string]bool
	// promise is the leader's promise record, promised and promisedTerm
	// when this replica first held the newest promise of a term
	// (promise.go).
	promise      *promiseValue
	promiseMod   int64
	promised     time.Time
	promisedTerm uint64
}

// view derives the view of election name.
func (s *state) view(name string) view {
	v := view{name: name, settings: gateway.DefaultSettings()}
	e := s.elections[name]
	if e == nil {
		return v
	}
	v.exists = e.exists()
	if e.settings != nil {
		v.settings = e.settings.settings()
	}
	for _, x := range e.line {
		v.line = append(v.line, x)
	}
	slices.SortFunc(v.line, func(a, b *entry) int { return cmp.Compare(a.create, b.create) })
	for _, x := range e.cooling {
		v.cooling = append(v.cooling, x)
	}
	slices.SortFunc(v.cooling, func(a, b *entry) int {
		return cmp.Or(a.value.CooldownUntil.Compare(b.value.CooldownUntil), cmp.Compare(a.create, b.create))
	})
	// A view outlives the cache's lock: it shares only values that are
	// replaced, never changed in place (entries, records), and copies maps.
	v.lead, v.leadMod, v.ids, v.mark, v.markMod = e.lead, e.leadMod, maps.Clone(e.ids), e.mark, e.markMod
	v.handover, v.cooldowns = e.handover, maps.Clone(e.cooldowns)
	v.promise, v.promiseMod, v.promised, v.promisedTerm = e.promise, e.promiseMod, e.promised, e.promisedTerm
	if l := e.lead; l != nil {
		v.term = l.Term
		if l.Ended == "" {
			if len(v.line) > 0 && v.line[0].hex == l.Key && uint64(v.line[0].create) == l.Term {
				v.leader = v.line[0]
			} else if !slices.ContainsFunc(v.line, func(x *entry) bool { return x.hex == l.Key && uint64(x.create) == l.Term }) {
				v.pending = true
			}
		}
		if t := l.Transfer; t != nil && (v.leader != nil || v.pending) {
			if i := slices.IndexFunc(v.line, func(x *entry) bool { return x.hex == t.Key }); i > 0 || (i == 0 && v.pending) {
				v.transfer, v.target = t, i
			}
		}
	}
	return v
}

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
// ahead of it in line, and the leader as view derives it.
type standing struct {
	x       *entry
	cooling bool
	ahead   int // line entries created before x
	leader  *entry
	lead    *leadValue
	leadMod int64
	term    uint64
	// promiseMod is the mod revision of the election's promise key, 0
	// when it has none (promise.go).
	promiseMod int64
	// transfer is the pending transfer as view derives it.
	transfer *leadTransfer
}

// standing finds candidate id of election name. It costs one pass over
// the election's line and allocates nothing, so a heartbeat's answer costs
// the same with 3 candidates as with 1,000.
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
	var head *entry
	for _, y := range e.line {
		if head == nil || y.create < head.create {
			head = y
		}
		if !st.cooling && y.create < st.x.create {
			st.ahead++
		}
	}
	st.promiseMod = e.promiseMod
	// As view: the lead record names the head of the line, or nobody leads.
	if l := e.lead; l != nil {
		st.lead, st.leadMod, st.term = l, e.leadMod, l.Term
		if l.Ended == "" && head != nil && head.hex == l.Key && uint64(head.create) == l.Term {
			st.leader = head
		}
		if t := l.Transfer; t != nil && l.Ended == "" {
			// As view: the target is in line, behind the leader or, while
			// the leadership is pending (the named key is gone), anywhere.
			if x := e.line[t.Key]; x != nil && x != st.leader {
				if st.leader != nil || !e.holds(l) {
					st.transfer = t
				}
			}
		}
	}
	return st, true
}

// holds reports whether the key the lead record l names is in line.
func (e *estate) holds(l *leadValue) bool {
	x := e.line[l.Key]
	return x != nil && uint64(x.create) == l.Term
}
