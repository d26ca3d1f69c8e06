package etcd

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// state mirrors the keys under the prefix at one revision, parsed and
// grouped by election. Every replica's cache and every Watch keeps one; as
// it is built only from etcd's keys at a revision (and the changes at that
// revision), two states at the same revision are equal on every replica.
// A state is not safe for concurrent use.
type state struct {
	keys keys
	rev  int64
	// last is the id of the newest event the revisions applied since the
	// load derived, or "<rev>" of the load when none has: no event lies
	// after it up to rev (it is Head). A revision that derives no event (a
	// KV write, a marker, the barrier) leaves it; a load cannot tell which
	// events the revisions before it derived, so it starts at "<rev>".
	// Kept only where the state derives events (applyRevision with derive).
	last      string
	elections map[string]*estate
	count     int // elections that exist (estate.exists)
	// minVersion is the data version p/_elector/version declares that
	// every replica runs, 0 without one (version.go).
	minVersion int
	// dirty, when set, collects the names of the elections that put and
	// del touch (the cache's list of elections the reconciler must look at).
	dirty map[string]bool
	// clock, set only in a replica's cache, is the monotonic clock on
	// which it notes when it first held each promise (estate.promised);
	// departed, when set, collects the candidacies that etcd removed
	// (applyRevision). Neither is part of what the keys say.
	clock    func() time.Time
	departed *[]departure
	// leases, set only in a replica's cache, counts the entries on each
	// lease (leaseCount).
	leases *leaseCount
	// sessions are the sessions' keys (sessions.go), by id, and
	// sessionLeases the same by lease: no election's, so no view and no
	// event ever sees them.
	sessions      map[string]*sessionRec
	sessionLeases map[int64]*sessionRec
}

// sessionRec is a session's key as a state holds it, and where the
// entries on its lease are.
type sessionRec struct {
	id          string
	lease       int64
	create, mod int64
	value       sessionValue
	// elections counts the entries (in line and cooling) on the
	// session's lease, by election: at most one each, as a session
	// campaigns once per election.
	elections map[string]int
}

// estate is the keys of one election.
type estate struct {
	settings    *settingsValue
	settingsMod int64
	lead        *leadValue
	leadMod     int64
	mark        *markValue
	markMod     int64
	line        map[string]*entry // by lease hex (a native key: by its name); changed only by putLine and delLine
	// byCreate is line ordered by create revision, as views show it,
	// made on the first read after line changed (ordered); nil until
	// then. Views share it: it is replaced, never changed in place.
	byCreate []*entry
	cooling  map[string]*entry // by lease hex
	ids      map[string]idEntry
	// handovers are the markers of handover delays, by the last component
	// of their key ("" for p/_elector/handover/<election>), each with the
	// term of the slot it times; cooldowns the lease hexes of the
	// cooldowns that have a marker (timers.go).
	handovers map[string]uint64
	cooldowns map[string]bool
	// promises are the holders' promise records (promise.go), by the last
	// component of their key as handovers; revoked the candidacies etcd
	// ended early (revoked.go), by lease hex.
	promises map[string]promiseRecord
	revoked  map[string]revokedValue
	// promised is, for each slot of the lead record, when this replica
	// first held the newest write that renewed that holdership (its
	// acknowledgement or a promise of its term), on the cache's clock: the
	// promise lapses a TTL after it (see promise.go). Empty outside a
	// cache.
	promised map[uint64]time.Time
	at       time.Time // the latest "at" written in the revision being applied
}

// promiseRecord is a promise key's value and mod revision.
type promiseRecord struct {
	value promiseValue
	mod   int64
}

// entry is one candidacy or cooling key.
type entry struct {
	hex    string // the lease, in hex (a native key: its name)
	name   string // the key's last component: hex, or hex+movedSuffix after a move
	create int64
	mod    int64
	lease  int64
	value  candidateValue
	native bool
	// seen is when this replica first saw a native candidate's key (etcd
	// keeps no time); it is shown as its joined_at and never used in events.
	seen time.Time
}

// idEntry is one candidate id key.
type idEntry struct {
	hex    string
	create int64
}

func newState(k keys) *state {
	return &state{keys: k, elections: map[string]*estate{}, sessions: map[string]*sessionRec{}, sessionLeases: map[int64]*sessionRec{}}
}

// moveEntry counts an entry of election that went from lease old to
// lease new (0: none): in the lease count, and in the session whose
// lease either is.
func (s *state) moveEntry(election string, old, new int64) {
	s.leases.move(old, new)
	if old == new {
		return
	}
	if r := s.sessionLeases[old]; r != nil && old != 0 {
		if r.elections[election]--; r.elections[election] <= 0 {
			delete(r.elections, election)
		}
	}
	if r := s.sessionLeases[new]; r != nil && new != 0 {
		r.elections[election]++
	}
}

// putSession applies a session's key.
func (s *state) putSession(id string, kv *mvccpb.KeyValue) {
	var v sessionValue
	if json.Unmarshal(kv.Value, &v) != nil || v.Elector != 1 || v.TTLms <= 0 {
		s.delSession(id) // not a session: as if absent
		return
	}
	r := s.sessions[id]
	if r == nil || r.lease != kv.Lease {
		s.delSession(id)
		r = &sessionRec{id: id, lease: kv.Lease, elections: map[string]int{}}
		s.sessions[id] = r
		if kv.Lease != 0 {
			s.sessionLeases[kv.Lease] = r
		}
	}
	r.create, r.mod, r.value = kv.CreateRevision, kv.ModRevision, v
}

// delSession applies the deletion of a session's key.
func (s *state) delSession(id string) {
	if r := s.sessions[id]; r != nil {
		delete(s.sessions, id)
		if s.sessionLeases[r.lease] == r {
			delete(s.sessionLeases, r.lease)
		}
	}
}

// countSessions counts afresh the entries on each session's lease, after
// a load put the keys in key order (an election whose name sorts before
// "_elector" came before its sessions' keys).
func (s *state) countSessions() {
	for _, r := range s.sessions {
		clear(r.elections)
	}
	for name, e := range s.elections {
		for _, xs := range []map[string]*entry{e.line, e.cooling} {
			for _, x := range xs {
				if r := s.sessionLeases[x.lease]; r != nil && x.lease != 0 {
					r.elections[name]++
				}
			}
		}
	}
}

// leaseCount counts the entries (candidacies in line and cooling) on each
// lease of a state, and lists the leases that came (a first entry) and
// went (the last entry) since take: the cache's state keeps one for the
// lease book (see leaseBook).
type leaseCount struct {
	n          map[int64]int
	born, died []int64
	// overflow is set when the lists grew past leaseChangesMost without a
	// take (nobody refreshing the book): they are dropped, and the taker
	// resyncs from n.
	overflow bool
}

const leaseChangesMost = 1 << 16

func newLeaseCount() *leaseCount { return &leaseCount{n: map[int64]int{}} }

// move counts an entry that went from lease old to lease new (0: none).
func (c *leaseCount) move(old, new int64) {
	if c == nil || old == new {
		return
	}
	if old != 0 {
		if c.n[old]--; c.n[old] <= 0 {
			delete(c.n, old)
			c.died = append(c.died, old)
		}
	}
	if new != 0 {
		if c.n[new]++; c.n[new] == 1 {
			c.born = append(c.born, new)
		}
	}
	if len(c.born)+len(c.died) > leaseChangesMost {
		c.born, c.died, c.overflow = nil, nil, true
	}
}

// take returns the leases that came and went since the last take, each
// by where it is now (a lease that went and came back, as a candidacy's
// when it moves to cooling on the same lease, came), and whether the
// changes overflowed (then none is listed: resync from n).
func (c *leaseCount) take() (born, died []int64, overflow bool) {
	seen := make(map[int64]bool, len(c.born)+len(c.died))
	for _, list := range [][]int64{c.born, c.died} {
		for _, id := range list {
			switch {
			case seen[id]:
			case c.n[id] > 0:
				born = append(born, id)
			default:
				died = append(died, id)
			}
			seen[id] = true
		}
	}
	overflow = c.overflow
	c.born, c.died, c.overflow = nil, nil, false
	return born, died, overflow
}

// leaseAt is the lease of the entry that the key pk names in e: the line's
// or cooling's entry that a put of pk replaces (put) or that its deletion
// removes (del); 0 if none.
func (e *estate) leaseAt(pk parsedKey, put bool) int64 {
	switch pk.kind {
	case kindCandidacy:
		if put {
			if x := e.line[strings.TrimSuffix(pk.name, movedSuffix)]; x != nil {
				return x.lease
			}
			return 0
		}
		for _, k := range []string{pk.name, strings.TrimSuffix(pk.name, movedSuffix)} {
			if x := e.line[k]; x != nil && x.name == pk.name {
				return x.lease
			}
		}
	case kindCooling:
		if x := e.cooling[pk.name]; x != nil {
			return x.lease
		}
	}
	return 0
}

func newEstate() *estate {
	return &estate{line: map[string]*entry{}, cooling: map[string]*entry{}, ids: map[string]idEntry{}, cooldowns: map[string]bool{}, revoked: map[string]revokedValue{},
		handovers: map[string]uint64{}, promises: map[string]promiseRecord{}, promised: map[uint64]time.Time{}}
}

func (s *state) election(name string, create bool) *estate {
	e := s.elections[name]
	if e == nil && create {
		e = newEstate()
		s.elections[name] = e
	}
	return e
}

// put applies one key's new value; it returns the election it touched, or "".
func (s *state) put(kv *mvccpb.KeyValue) string {
	if string(kv.Key) == s.keys.version() {
		s.minVersion = parseVersion(kv.Value)
		return ""
	}
	pk := s.keys.parse(string(kv.Key))
	switch pk.kind {
	case kindOther:
		return ""
	case kindSession:
		s.putSession(pk.name, kv)
		return ""
	}
	e := s.election(pk.election, true)
	switch pk.kind {
	case kindPromise, kindRevoked:
		// Written by heartbeats and after revocations: neither changes
		// what the reconcilers would do, so the election is not dirty.
		s.putQuiet(e, pk, kv)
		return pk.election
	}
	defer s.touched(pk.election, e, e.exists())
	switch pk.kind {
	case kindCandidacy:
		v, native := parseCandidate(kv.Value, pk.name)
		x := &entry{hex: pk.name, name: pk.name, create: kv.CreateRevision, mod: kv.ModRevision, lease: kv.Lease, value: v, native: native}
		if !native {
			x.hex = strings.TrimSuffix(pk.name, movedSuffix)
			e.touch(v.At)
		} else if old := e.line[pk.name]; old != nil && old.create == x.create {
			x.seen = old.seen
		} else {
			x.seen = time.Now()
		}
		s.moveEntry(pk.election, e.leaseAt(pk, true), x.lease)
		e.putLine(x)
	case kindCooling:
		var v candidateValue
		if json.Unmarshal(kv.Value, &v) != nil {
			s.moveEntry(pk.election, e.leaseAt(pk, false), 0)
			e.unset(pk) // not ours: as if absent, as a fresh load sees it
			return pk.election
		}
		s.moveEntry(pk.election, e.leaseAt(pk, true), kv.Lease)
		e.cooling[pk.name] = &entry{hex: pk.name, name: pk.name, create: kv.CreateRevision, mod: kv.ModRevision, lease: kv.Lease, value: v}
		e.touch(v.At)
	case kindID:
		e.ids[pk.name] = idEntry{hex: string(kv.Value), create: kv.CreateRevision}
	case kindSettings:
		var v settingsValue
		e.settingsMod = kv.ModRevision // what an acknowledgement compares, whatever the value
		if json.Unmarshal(kv.Value, &v) != nil {
			e.settings = nil
			return pk.election
		}
		e.settings = &v
		e.touch(v.At)
	case kindLead:
		var v leadValue
		if json.Unmarshal(kv.Value, &v) != nil {
			e.unset(pk)
			return pk.election
		}
		v.resolve(kv.ModRevision)
		if s.clock != nil {
			// A slot new to the record is an acknowledgement: the first
			// promise of its term. The others keep their time.
			held := make(map[uint64]time.Time, len(v.Slots))
			for _, sl := range v.Slots {
				t, ok := e.promised[sl.Term]
				if !ok {
					t = s.clock()
				}
				held[sl.Term] = t
			}
			e.promised = held
		}
		e.lead, e.leadMod = &v, kv.ModRevision
		e.touch(v.At)
	case kindMark:
		var v markValue
		if json.Unmarshal(kv.Value, &v) != nil {
			e.unset(pk)
			return pk.election
		}
		e.mark, e.markMod = &v, kv.ModRevision
		e.touch(v.At)
	case kindHandoverMark:
		var v markerValue
		if json.Unmarshal(kv.Value, &v) != nil {
			e.unset(pk)
			return pk.election
		}
		if t, ok := parseTerm(pk.name); ok {
			v.Term = t
		}
		e.handovers[pk.name] = v.Term
	case kindCooldownMark:
		e.cooldowns[pk.name] = true
	}
	return pk.election
}

// putQuiet applies a promise or revoked key, which leaves the election
// as the reconcilers see it: it marks nothing dirty and counts no election.
func (s *state) putQuiet(e *estate, pk parsedKey, kv *mvccpb.KeyValue) {
	switch pk.kind {
	case kindPromise:
		var v promiseValue
		if json.Unmarshal(kv.Value, &v) != nil {
			e.unset(pk)
			return
		}
		e.promises[pk.name] = promiseRecord{value: v, mod: kv.ModRevision}
		if s.clock != nil && e.lead.slot(v.Term) != nil {
			e.promised[v.Term] = s.clock()
		}
	case kindRevoked:
		var v revokedValue
		if json.Unmarshal(kv.Value, &v) != nil {
			e.unset(pk)
			return
		}
		e.revoked[pk.name] = v
	}
}

// del applies the deletion of one key; it returns the election it touched.
func (s *state) del(key []byte) string {
	if string(key) == s.keys.version() {
		s.minVersion = 0
		return ""
	}
	pk := s.keys.parse(string(key))
	if pk.kind == kindSession {
		s.delSession(pk.name)
		return ""
	}
	e := s.election(pk.election, false)
	if pk.kind == kindOther || e == nil {
		return ""
	}
	if pk.kind == kindPromise || pk.kind == kindRevoked {
		e.unset(pk) // as putQuiet: nothing dirty
		return pk.election
	}
	defer s.touched(pk.election, e, e.exists())
	s.moveEntry(pk.election, e.leaseAt(pk, false), 0)
	e.unset(pk)
	return pk.election
}

// putLine sets the line's entry x.
func (e *estate) putLine(x *entry) {
	e.line[x.hex] = x
	e.byCreate = nil
}

// delLine removes the line's entry of lease hex k.
func (e *estate) delLine(k string) {
	delete(e.line, k)
	e.byCreate = nil
}

// ordered returns the line ordered by create revision, as concurrency.
// Election orders it: made once per change of the line, and shared by
// every view derived until the next, which none changes in place (its
// capacity is its length, so an append copies it). A leader read then
// derives no line of its own.
func (e *estate) ordered() []*entry {
	if e.byCreate == nil && len(e.line) > 0 {
		line := make([]*entry, 0, len(e.line))
		for _, x := range e.line {
			line = append(line, x)
		}
		slices.SortFunc(line, func(a, b *entry) int { return cmp.Compare(a.create, b.create) })
		e.byCreate = line
	}
	return e.byCreate
}

// unset removes the key pk from e.
func (e *estate) unset(pk parsedKey) {
	switch pk.kind {
	case kindCandidacy:
		// The entry of the key of that name: a moved key's old name is
		// deleted in the revision its new name is written.
		for _, k := range []string{pk.name, strings.TrimSuffix(pk.name, movedSuffix)} {
			if x := e.line[k]; x != nil && x.name == pk.name {
				e.delLine(k)
				break
			}
		}
	case kindCooling:
		delete(e.cooling, pk.name)
	case kindID:
		delete(e.ids, pk.name)
	case kindSettings:
		e.settings, e.settingsMod = nil, 0
	case kindLead:
		e.lead, e.leadMod = nil, 0
		clear(e.promised)
	case kindMark:
		e.mark, e.markMod = nil, 0
	case kindHandoverMark:
		delete(e.handovers, pk.name)
	case kindCooldownMark:
		delete(e.cooldowns, pk.name)
	case kindPromise:
		delete(e.promises, pk.name)
	case kindRevoked:
		delete(e.revoked, pk.name)
	}
}

// touched keeps count and dirty after a change of election name, whose
// estate e existed before the change if existed is set.
func (s *state) touched(name string, e *estate, existed bool) {
	switch now := e.exists(); {
	case now && !existed:
		s.count++
	case existed && !now:
		s.count--
	}
	if s.dirty != nil {
		s.dirty[name] = true
	}
}

// exists reports whether e has a key that makes its election exist: a
// mark or id key alone does not.
func (e *estate) exists() bool {
	return e.settings != nil || len(e.line) > 0 || len(e.cooling) > 0 || e.lead != nil
}

func (e *estate) touch(at time.Time) {
	if at.After(e.at) {
		e.at = at
	}
}

// load replaces the state with the keys of a range response at rev.
func (s *state) load(kvs []*mvccpb.KeyValue, rev int64) {
	s.elections, s.count, s.minVersion = map[string]*estate{}, 0, 0
	s.sessions, s.sessionLeases = map[string]*sessionRec{}, map[int64]*sessionRec{}
	for _, kv := range kvs {
		s.put(kv)
	}
	s.countSessions()
	for _, e := range s.elections {
		e.at = time.Time{}
		if s.clock != nil && e.lead != nil {
			// Held since now: a replica that loads the state after a
			// promise was written counts its TTL from the load.
			now := s.clock()
			for _, sl := range e.lead.Slots {
				e.promised[sl.Term] = now
			}
		}
	}
	s.rev, s.last = rev, revCursor(rev)
}

// newest is the newest "at" elector wrote in the records of e: the time
// of events that etcd caused without elector writing (see applyRevision).
func (e *estate) newest() time.Time {
	var t time.Time
	later := func(at time.Time) {
		if at.After(t) {
			t = at
		}
	}
	for _, x := range e.line {
		later(x.value.At) // zero for a native key
	}
	for _, x := range e.cooling {
		later(x.value.At)
	}
	if e.settings != nil {
		later(e.settings.At)
	}
	if e.lead != nil {
		later(e.lead.At)
	}
	if e.mark != nil {
		later(e.mark.At)
	}
	for _, p := range e.promises {
		later(p.value.At)
	}
	return t
}
