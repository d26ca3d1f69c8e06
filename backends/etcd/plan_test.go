package etcd

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// keysOf is an election "e" under prefix "p", as a replica's cache holds
// it: tests build one and derive its view (viewOf), as plan sees it.
type keysOf struct {
	settings gateway.Settings
	line     []*entry
	cooling  []*entry
	lead     *leadValue
	leadMod  int64
	// handovers are the markers in etcd: key name → term; promised the
	// promise clock's readings by term.
	handovers map[string]uint64
	promises  map[string]promiseRecord
	promised  map[uint64]time.Time
	ids       map[string]idEntry
	cooldowns map[string]bool // the cooldowns' markers in etcd
}

// viewOf derives the view of k, as state.view does for the keys.
func viewOf(k keysOf) view {
	st := newState(keys{p: "p"})
	e := st.election("e", true)
	sv := settingsOf(k.settings, time.Time{})
	e.settings = &sv
	for _, x := range k.line {
		if x.name == "" {
			x.name = x.hex
		}
		e.line[x.hex] = x
	}
	for _, x := range k.cooling {
		e.cooling[x.hex] = x
	}
	if k.lead != nil {
		l := k.lead.clone()
		l.resolve(k.leadMod)
		e.lead, e.leadMod = &l, k.leadMod
	}
	for n, t := range k.handovers {
		e.handovers[n] = t
	}
	for n, p := range k.promises {
		e.promises[n] = p
	}
	for t, at := range k.promised {
		e.promised[t] = at
	}
	for id, ie := range k.ids {
		e.ids[id] = ie
	}
	for hex := range k.cooldowns {
		e.cooldowns[hex] = true
	}
	return st.view("e")
}

// one is a lead record with one holdership, a's of term 10, as the
// one-holder form reads.
func one(ttl time.Duration, ended string) *leadValue {
	s := slotValue{Term: 10, Create: 10, Key: "a", ID: "a", TTLms: ttl.Milliseconds(), Ended: ended}
	l := &leadValue{Term: 10, Slots: []slotValue{s}}
	if ended != "" {
		l.Previous, l.PreviousEnd = s.ref(), ended
	}
	return l
}

// whats lists the actions' what.
func whats(acts []action) []string {
	var out []string
	for _, a := range acts {
		out = append(out, a.what)
	}
	return out
}

// TestPlanEndsTimersOnMarkersNotClocks: whether a handover delay or a
// cooldown has ended is whether etcd still holds its marker key, however
// far the clock is past "until"; a record written without a marker gets
// one, never an early end.
func TestPlanEndsTimersOnMarkersNotClocks(t *testing.T) {
	b := &Backend{keys: keys{p: "p"}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const delay = 3 * time.Second
	late := t0.Add(24 * time.Hour)
	next := &entry{hex: "b", create: 20, value: candidateValue{Elector: 1, ID: "b"}}
	cooling := &entry{hex: "c", create: 30, mod: 31, lease: 0xc, value: candidateValue{Elector: 1, ID: "c", CooldownUntil: t0.Add(delay), Timed: true}}
	untimed := &entry{hex: "c", create: 30, mod: 31, lease: 0xc, value: candidateValue{Elector: 1, ID: "c", CooldownUntil: t0.Add(delay)}}
	gone := func(until time.Time, timed bool, marker map[string]uint64) keysOf {
		l := one(0, "")
		l.Slots[0].Until, l.Slots[0].Timed = until, timed
		return keysOf{settings: gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}, line: []*entry{next}, lead: l, leadMod: 11, handovers: marker}
	}
	cools := func(x *entry, marked bool) keysOf {
		k := keysOf{settings: gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}, cooling: []*entry{x},
			ids: map[string]idEntry{"c": {hex: "c", create: 30}}}
		if marked {
			k.cooldowns = map[string]bool{"c": true}
		}
		return k
	}
	tests := []struct {
		name  string
		keys  keysOf
		now   time.Time
		want  []string
		timer time.Duration
	}{
		{"expiry starts the delay with a marker", gone(time.Time{}, false, nil), t0, []string{"start handover delay"}, delay},
		{"a delay whose marker is held waits, however late", gone(t0.Add(delay), true, map[string]uint64{"": 10}), late, nil, 0},
		{"a delay whose marker etcd deleted ends, however early", gone(t0.Add(delay), true, nil), t0, []string{"acknowledge holder"}, 0},
		{"a marker of another leadership holds nothing back", gone(t0.Add(delay), true, map[string]uint64{"": 9}), t0, []string{"acknowledge holder"}, 0},
		{"a delay written without a marker gets a whole one", gone(t0.Add(delay), false, nil), late, []string{"time handover delay in etcd"}, delay},
		{"a delay without a marker gets what until says is left, if longer", gone(t0.Add(time.Hour), false, nil), t0, []string{"time handover delay in etcd"}, time.Hour},
		{"a cooldown whose marker is held waits, however late", cools(cooling, true), late, nil, 0},
		{"a cooldown whose marker etcd deleted ends, however early", cools(cooling, false), t0, []string{"rejoin after cooldown"}, 0},
		{"a cooldown written without a marker gets a whole one", cools(untimed, false), late, []string{"time cooldown in etcd"}, delay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, _ := b.plan(viewOf(tt.keys), tt.now, tt.now)
			var timer time.Duration
			for _, a := range acts {
				if a.timer != nil {
					timer = a.timer.ttl
				}
			}
			if got := whats(acts); !slices.Equal(got, tt.want) || timer != tt.timer {
				t.Fatalf("actions %q with a marker of %s, want %q with %s", got, timer, tt.want, tt.timer)
			}
		})
	}
}

// TestPlanHoldsAnExpiredLeadersTransferUntilTheDelayEnds: a leader with a
// transfer pending expires in an election with a handover delay. The
// delay starts with the transfer kept in the lead record; while its marker
// is in etcd, nothing moves the target up or acknowledges anybody; once
// etcd deleted it, the keys ahead of the target move behind it one by one
// and then the target is acknowledged (or the head, when a native key
// stands ahead of the target).
func TestPlanHoldsAnExpiredLeadersTransferUntilTheDelayEnds(t *testing.T) {
	b := &Backend{keys: keys{p: "p"}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const delay = 3 * time.Second
	ahead := &entry{hex: "e", name: "e", create: 20, lease: 0xe, value: candidateValue{Elector: 1, ID: "e"}}
	target := &entry{hex: "t", name: "t", create: 30, lease: 0x7, value: candidateValue{Elector: 1, ID: "t"}}
	atHead := &entry{hex: "t", name: "t", create: 19, lease: 0x7, value: candidateValue{Elector: 1, ID: "t"}} // ahead of e
	native := &entry{hex: "n", name: "n", create: 15, native: true, value: candidateValue{ID: "n"}}
	transfer := &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, At: t0, From: "a", FromTerm: 10}
	pending := func(line []*entry, timed, marker bool) keysOf {
		l := one(0, "")
		l.Transfer = transfer
		if timed {
			l.Slots[0].Until, l.Slots[0].Timed = t0.Add(delay), true
		}
		k := keysOf{settings: gateway.Settings{HandoverDelay: delay}, line: line, lead: l, leadMod: 11}
		if marker {
			k.handovers = map[string]uint64{"": 10}
		}
		return k
	}
	tests := []struct {
		name string
		keys keysOf
		want []string
	}{
		{"the expiry starts the delay", pending([]*entry{ahead, target}, false, false), []string{"start handover delay"}},
		{"the marker holds the target's moves back", pending([]*entry{ahead, target}, true, true), nil},
		{"the marker holds the target at the head back", pending([]*entry{target}, true, true), nil},
		{"with the marker gone the keys ahead move", pending([]*entry{ahead, target}, true, false), []string{"move the transfer's target up"}},
		{"with the marker gone the target at the head leads", pending([]*entry{atHead, ahead}, true, false), []string{"acknowledge holder"}},
		{"a native key ahead of the target leads instead", pending([]*entry{native, target}, true, false), []string{"acknowledge holder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := viewOf(tt.keys)
			acts, _ := b.plan(v, t0.Add(24*time.Hour), t0.Add(24*time.Hour))
			if got := whats(acts); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			for _, a := range acts {
				if a.what == "move the transfer's target up" && !slices.ContainsFunc(a.cmps, func(c clientv3.Cmp) bool {
					pc := c.GetCompare()
					return string(pc.Key) == "p/e/t" && pc.Target == etcdserverpb.Compare_CREATE && pc.GetCreateRevision() == target.create
				}) {
					t.Fatalf("the move does not require the target's key: %v", a.cmps)
				}
				if a.what != "start handover delay" {
					continue
				}
				var l leadValue
				if err := json.Unmarshal(a.ops[0].ValueBytes(), &l); err != nil {
					t.Fatal(err)
				}
				if l.list || l.Transfer == nil || l.Transfer.Key != "t" || len(l.Slots) != 1 || !l.Slots[0].Timed || a.timer == nil || a.timer.key != "p/_elector/handover/e" {
					t.Fatalf("the delay starts with lead record %+v and marker %+v: want the transfer kept, timed, with the one-holder marker, in the one-holder form", l, a.timer)
				}
			}
		})
	}
}

// TestPlanHoldsTheNextLeaderUntilThePromiseLapses: after a leadership
// that ended without the leader asking (its key went: an expiry, or a
// revocation however early), nobody is acknowledged until the promise of
// its last heartbeat has lapsed on the replica's clock, whatever etcd's
// lease and the handover delay say, and so does one that the gateway's
// verdict ended (FailLeader); one that ended by the leader's own act, or a
// native one, holds nothing back. A leader whose promise lapsed
// while etcd still holds its key is expired by the reconciler.
func TestPlanHoldsTheNextLeaderUntilThePromiseLapses(t *testing.T) {
	b := &Backend{keys: keys{p: "p"}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const ttl = 5 * time.Second
	old := &entry{hex: "a", name: "a", create: 10, lease: 0xa, value: candidateValue{Elector: 1, ID: "a", TTLms: ttl.Milliseconds()}}
	next := &entry{hex: "b", name: "b", create: 20, lease: 0xb, value: candidateValue{Elector: 1, ID: "b"}}
	target := &entry{hex: "t", name: "t", create: 30, lease: 0x7, value: candidateValue{Elector: 1, ID: "t"}}
	native := &entry{hex: "n", name: "n", create: 10, native: true, value: candidateValue{ID: "n"}}
	base := func(line []*entry, lead *leadValue) keysOf {
		return keysOf{settings: gateway.DefaultSettings(), line: line, lead: lead, leadMod: 11,
			ids: map[string]idEntry{"a": {hex: "a", create: 10}}, promised: map[uint64]time.Time{10: t0}}
	}
	ended := func(how string) keysOf {
		if how == gateway.ReasonExpired || how == "failed" {
			l := one(ttl, gateway.ReasonExpired)
			if how == "failed" {
				l = one(ttl, gateway.ReasonError)
			}
			return base([]*entry{next}, l)
		}
		return base([]*entry{next}, &leadValue{Term: 10, Previous: &gateway.TermRef{ID: "a", Term: 10}, PreviousEnd: how})
	}
	pending := func() keysOf { return base([]*entry{next}, one(ttl, "")) }
	leading := func() keysOf { return base([]*entry{old, next}, one(ttl, "")) }
	nativeLead := func() *leadValue {
		return &leadValue{Term: 10, Slots: []slotValue{{Term: 10, Create: 10, Key: "n", ID: "n"}}}
	}
	tests := []struct {
		name string
		keys func() keysOf
		mono time.Time
		want []string
		next time.Time
	}{
		{"an expiry holds the next leader back", pending, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"until the promise lapses", pending, t0.Add(ttl), []string{"acknowledge holder"}, time.Time{}},
		{"a later promise of the term holds longer", func() keysOf {
			k := pending()
			k.promises = map[string]promiseRecord{"": {value: promiseValue{Term: 10, Key: "a", TTLms: ttl.Milliseconds()}, mod: 12}}
			k.promised[10] = t0.Add(time.Second)
			return k
		}, t0.Add(ttl), nil, t0.Add(time.Second + ttl)},
		{"a leadership recorded as expired holds a newcomer back", func() keysOf { return ended(gateway.ReasonExpired) }, t0.Add(time.Second), nil, t0.Add(ttl)},
		{"a resignation holds nothing back", func() keysOf { return ended(gateway.ReasonResigned) }, t0, []string{"acknowledge holder"}, time.Time{}},
		{"an error report holds nothing back", func() keysOf { return ended(gateway.ReasonError) }, t0, []string{"acknowledge holder"}, time.Time{}},
		{"the gateway's verdict holds the next leader back", func() keysOf { return ended("failed") }, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"until the failed leader's promise lapses", func() keysOf { return ended("failed") }, t0.Add(ttl), []string{"acknowledge holder"}, time.Time{}},
		{"the failed leader back from its cooldown waits too", func() keysOf {
			return base([]*entry{{hex: "a", name: "a", create: 40, lease: 0xa, value: old.value}}, one(ttl, gateway.ReasonError))
		}, t0.Add(time.Second), nil, t0.Add(ttl)},
		{"a native leader was promised nothing", func() keysOf { return base([]*entry{next}, nativeLead()) }, t0, []string{"acknowledge holder"}, time.Time{}},
		{"an ended handover delay still waits for the promise", func() keysOf {
			k := pending()
			k.lead.Slots[0].Until, k.lead.Slots[0].Timed = t0.Add(time.Second), true
			return k
		}, t0.Add(2 * time.Second), nil, t0.Add(ttl)},
		{"the keys ahead of a transfer's target move meanwhile", func() keysOf {
			k := pending()
			k.line = []*entry{next, target}
			k.lead.Transfer = &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, At: t0, From: "a", FromTerm: 10}
			return k
		}, t0, []string{"move the transfer's target up"}, t0.Add(ttl)},
		{"a leader is due to expire when its promise lapses", leading, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"and expired then though etcd holds its key", leading, t0.Add(ttl), []string{"expire holder after its promise"}, time.Time{}},
		{"a native leader is never expired by elector", func() keysOf { return base([]*entry{native, next}, nativeLead()) }, t0.Add(time.Hour), nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, next := b.plan(viewOf(tt.keys()), t0, tt.mono)
			if got := whats(acts); !slices.Equal(got, tt.want) || !next.Equal(tt.next) {
				t.Fatalf("actions %q, next %v; want %q, next %v", got, next, tt.want, tt.next)
			}
			for _, a := range acts {
				if a.what == "expire holder after its promise" && (a.revoke != 0xa || !slices.ContainsFunc(a.cmps, func(c clientv3.Cmp) bool {
					return string(c.GetCompare().Key) == "p/_elector/promise/e"
				})) {
					t.Fatalf("the expiry does not require the promise as it was, or keeps the lease: %+v", a)
				}
			}
		})
	}
}

// TestPlanFillsEachSlotOnItsOwn: with more than one holder, the first
// follower is acknowledged while fewer slots are taken than the setting,
// counting a slot whose holder ended without its word until its promise
// lapses; a native key holds only as the head; a transfer's target waits
// for the holdership it replaces, and nobody behind it takes another
// slot meanwhile; holders above a lowered setting are ended.
func TestPlanFillsEachSlotOnItsOwn(t *testing.T) {
	b := &Backend{keys: keys{p: "p"}}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const ttl = 5 * time.Second
	x := func(hex string, create int64) *entry {
		return &entry{hex: hex, name: hex, create: create, lease: create, value: candidateValue{Elector: 1, ID: hex, TTLms: ttl.Milliseconds()}}
	}
	a, bb, c, d, tg := x("a", 10), x("b", 20), x("c", 30), x("d", 40), x("t", 50)
	next := x("t", 28) // the target, first behind the holder
	native := &entry{hex: "n", name: "n", create: 25, native: true, value: candidateValue{ID: "n"}}
	holding := func(es ...*entry) []slotValue {
		var out []slotValue
		for _, e := range es {
			out = append(out, slotValue{Term: uint64(e.create), Create: e.create, Key: e.hex, ID: e.hex, TTLms: ttl.Milliseconds()})
		}
		return out
	}
	k := func(n int, line []*entry, slots []slotValue, f func(*leadValue)) keysOf {
		l := &leadValue{Term: 20, Slots: slots}
		if f != nil {
			f(l)
		}
		// Every slot's promise held since t0, but those of holders in
		// line, which heartbeat on.
		promised := map[uint64]time.Time{}
		for _, s := range l.Slots {
			promised[s.Term] = t0
			if s.Ended == "" && slices.ContainsFunc(line, s.names) {
				promised[s.Term] = t0.Add(time.Hour)
			}
		}
		return keysOf{settings: gateway.Settings{Holders: n}, line: line, lead: l, leadMod: 21, promised: promised}
	}
	failed := func(l *leadValue) { l.Slots[1].Ended = gateway.ReasonError }
	lowered := func(l *leadValue) { l.Slots[1].Ended, l.list = gateway.ReasonHoldersReduced, true }
	transfer := func(l *leadValue) {
		l.Transfer = &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, At: t0, From: "a", FromTerm: 10}
	}
	tests := []struct {
		name string
		keys keysOf
		mono time.Time
		want []string
		acks string // the candidate acknowledged, if any
	}{
		{"a free slot goes to the first follower", k(3, []*entry{a, bb, c, d}, holding(a, bb), nil), t0, []string{"acknowledge holder"}, "c"},
		{"every slot held: nobody", k(2, []*entry{a, bb, c}, holding(a, bb), nil), t0, nil, ""},
		{"a failed holder's slot waits for its promise", k(2, []*entry{a, c}, holding(a, bb), failed), t0.Add(ttl - time.Nanosecond), nil, ""},
		{"and is filled once it lapsed", k(2, []*entry{a, c}, holding(a, bb), failed), t0.Add(ttl), []string{"acknowledge holder"}, "c"},
		{"an expired holder's slot waits for its promise", k(2, []*entry{a, c}, holding(a, bb), nil), t0.Add(ttl - time.Nanosecond), nil, ""},
		{"the other slots do not", k(3, []*entry{a, c, d}, holding(a, bb), nil), t0.Add(ttl - time.Nanosecond), []string{"acknowledge holder"}, "c"},
		{"a native key second in line holds nothing, nor lets anybody past", k(3, []*entry{a, native, c}, holding(a), nil), t0, nil, ""},
		{"a transfer's target next waits for the holdership it replaces", k(3, []*entry{a, next, c}, holding(a), transfer), t0, nil, ""},
		{"a follower ahead of the target takes a free slot", k(3, []*entry{a, c, tg}, holding(a), transfer), t0, []string{"acknowledge holder", "move the transfer's target up"}, "c"},
		{"holders above a lowered setting end", k(1, []*entry{a, bb, c}, holding(a, bb), nil), t0, []string{"end holderships above the setting"}, ""},
		{"a lowered holder's slot is kept while its promise runs", k(1, []*entry{a, bb}, holding(a, bb), lowered), t0.Add(ttl - time.Nanosecond), nil, ""},
		{"and dropped once it lapsed", k(1, []*entry{a, bb}, holding(a, bb), lowered), t0.Add(ttl), []string{"drop lapsed slots"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, _ := b.plan(viewOf(tt.keys), t0, tt.mono)
			if got := whats(acts); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			for _, act := range acts {
				if act.what != "acknowledge holder" {
					continue
				}
				var l leadValue
				if err := json.Unmarshal(act.ops[0].ValueBytes(), &l); err != nil {
					t.Fatal(err)
				}
				if s := l.Slots[len(l.Slots)-1]; s.ID != tt.acks || !slices.ContainsFunc(act.cmps, func(c clientv3.Cmp) bool {
					return string(c.GetCompare().Key) == "p/_elector/settings/e"
				}) {
					t.Fatalf("acknowledged %+v with %v, want %s, guarded by the settings", s, act.cmps, tt.acks)
				}
			}
		})
	}
}

// TestLoweredLeavesTheCacheAlone: lowering the holders keeps the transfer
// of a holdership it ends, marked handed, in the record it writes; the
// view's record, which the cache shares, keeps the transfer as it was, so
// a write that fails leaves nothing of itself behind.
func TestLoweredLeavesTheCacheAlone(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	a := slotValue{Term: 10, Create: 10, Key: "a", ID: "a"}
	c := slotValue{Term: 11, Create: 11, Key: "c", ID: "c"}
	lead := &leadValue{Term: 11, Slots: []slotValue{a, c}, Transfer: &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, From: "c", FromTerm: 11}}
	v := view{lead: lead, holders: []*entry{{hex: "a"}, {hex: "c"}}, held: []*slotValue{&lead.Slots[0], &lead.Slots[1]}}
	l := lowered(v, 1, t0)
	if l.Transfer == nil || !l.Transfer.Handed || l.slot(11).Ended != gateway.ReasonHoldersReduced {
		t.Fatalf("lowered: transfer %+v, slot %+v; want the transfer kept, handed, and c's slot ended", l.Transfer, l.slot(11))
	}
	if lead.Transfer.Handed || lead.Slots[1].Ended != "" {
		t.Fatalf("the view's record changed: transfer %+v, slot %+v", lead.Transfer, lead.Slots[1])
	}
}
