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
	lead := func(until time.Time, timed bool) *leadValue {
		return &leadValue{Term: 10, Key: "a", ID: "a", Until: until, Timed: timed}
	}
	base := func() view {
		return view{name: "e", exists: true, settings: gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay},
			ids: map[string]idEntry{"b": {hex: "b", create: 20}, "c": {hex: "c", create: 30}}, cooldowns: map[string]bool{}}
	}
	tests := []struct {
		name  string
		view  func() view
		now   time.Time
		want  []string // the actions' what
		timer time.Duration
	}{
		{"expiry starts the delay with a marker", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(time.Time{}, false), true
			return v
		}, t0, []string{"start handover delay"}, delay},
		{"a delay whose marker is held waits, however late", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(t0.Add(delay), true), true
			v.handover = &markerValue{Term: 10, Until: t0.Add(delay)}
			return v
		}, late, nil, 0},
		{"a delay whose marker etcd deleted ends, however early", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(t0.Add(delay), true), true
			return v
		}, t0, []string{"acknowledge leader"}, 0},
		{"a marker of another leadership holds nothing back", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(t0.Add(delay), true), true
			v.handover = &markerValue{Term: 9}
			return v
		}, t0, []string{"acknowledge leader"}, 0},
		{"a delay written without a marker gets a whole one", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(t0.Add(delay), false), true
			return v
		}, late, []string{"time handover delay in etcd"}, delay},
		{"a delay without a marker gets what until says is left, if longer", func() view {
			v := base()
			v.line, v.lead, v.pending = []*entry{next}, lead(t0.Add(time.Hour), false), true
			return v
		}, t0, []string{"time handover delay in etcd"}, time.Hour},
		{"a cooldown whose marker is held waits, however late", func() view {
			v := base()
			v.cooling, v.cooldowns["c"] = []*entry{cooling}, true
			return v
		}, late, nil, 0},
		{"a cooldown whose marker etcd deleted ends, however early", func() view {
			v := base()
			v.cooling = []*entry{cooling}
			return v
		}, t0, []string{"rejoin after cooldown"}, 0},
		{"a cooldown written without a marker gets a whole one", func() view {
			v := base()
			v.cooling = []*entry{untimed}
			return v
		}, late, []string{"time cooldown in etcd"}, delay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, _ := b.plan(tt.view(), tt.now, tt.now)
			var got []string
			var timer time.Duration
			for _, a := range acts {
				got = append(got, a.what)
				if a.timer != nil {
					timer = a.timer.ttl
				}
			}
			if !slices.Equal(got, tt.want) || timer != tt.timer {
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
	native := &entry{hex: "n", name: "n", create: 15, native: true, value: candidateValue{ID: "n"}}
	transfer := &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, At: t0}
	pending := func(line []*entry, timed, marker bool) view {
		l := &leadValue{Term: 10, Key: "a", ID: "a", Transfer: transfer}
		if timed {
			l.Until, l.Timed = t0.Add(delay), true
		}
		v := view{name: "e", exists: true, settings: gateway.Settings{HandoverDelay: delay}, line: line, lead: l, leadMod: 11, pending: true,
			transfer: transfer, target: slices.Index(line, target), cooldowns: map[string]bool{}}
		if marker {
			v.handover = &markerValue{Term: 10, Until: t0.Add(delay)}
		}
		return v
	}
	tests := []struct {
		name string
		view view
		want []string
	}{
		{"the expiry starts the delay", pending([]*entry{ahead, target}, false, false), []string{"start handover delay"}},
		{"the marker holds the target's moves back", pending([]*entry{ahead, target}, true, true), nil},
		{"the marker holds the target at the head back", pending([]*entry{target}, true, true), nil},
		{"with the marker gone the keys ahead move", pending([]*entry{ahead, target}, true, false), []string{"move the transfer's target up"}},
		{"with the marker gone the target at the head leads", pending([]*entry{target, ahead}, true, false), []string{"acknowledge leader"}},
		{"a native key ahead of the target leads instead", pending([]*entry{native, target}, true, false), []string{"acknowledge leader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, _ := b.plan(tt.view, t0.Add(24*time.Hour), t0.Add(24*time.Hour))
			var got []string
			for _, a := range acts {
				got = append(got, a.what)
			}
			if !slices.Equal(got, tt.want) {
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
				if l.Transfer == nil || l.Transfer.Key != "t" || !l.Timed || a.timer == nil {
					t.Fatalf("the delay starts with lead record %+v and marker %+v: want the transfer kept, timed, with a marker", l, a.timer)
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
	base := func(line []*entry, lead leadValue) view {
		return view{name: "e", exists: true, settings: gateway.DefaultSettings(), line: line, lead: &lead, leadMod: 11,
			ids: map[string]idEntry{"a": {hex: "a", create: 10}}, cooldowns: map[string]bool{}, promised: t0, promisedTerm: 10}
	}
	ended := func(how string) view {
		return base([]*entry{next}, leadValue{Term: 10, Key: "a", ID: "a", TTLms: ttl.Milliseconds(), Ended: how})
	}
	pending := func() view {
		v := base([]*entry{next}, leadValue{Term: 10, Key: "a", ID: "a", TTLms: ttl.Milliseconds()})
		v.pending = true
		return v
	}
	leading := func() view {
		v := base([]*entry{old, next}, leadValue{Term: 10, Key: "a", ID: "a", TTLms: ttl.Milliseconds()})
		v.leader = old
		return v
	}
	tests := []struct {
		name string
		view func() view
		mono time.Time
		want []string
		next time.Time
	}{
		{"an expiry holds the next leader back", pending, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"until the promise lapses", pending, t0.Add(ttl), []string{"acknowledge leader"}, time.Time{}},
		{"a later promise of the term holds longer", func() view {
			v := pending()
			v.promise, v.promised = &promiseValue{Term: 10, Key: "a", TTLms: ttl.Milliseconds()}, t0.Add(time.Second)
			return v
		}, t0.Add(ttl), nil, t0.Add(time.Second + ttl)},
		{"a leadership recorded as expired holds a newcomer back", func() view { return ended(gateway.ReasonExpired) }, t0.Add(time.Second), nil, t0.Add(ttl)},
		{"a resignation holds nothing back", func() view { return ended(gateway.ReasonResigned) }, t0, []string{"acknowledge leader"}, time.Time{}},
		{"an error report holds nothing back", func() view { return ended(gateway.ReasonError) }, t0, []string{"acknowledge leader"}, time.Time{}},
		{"the gateway's verdict holds the next leader back", func() view {
			v := ended(gateway.ReasonError)
			v.lead.Failed = true
			return v
		}, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"until the failed leader's promise lapses", func() view {
			v := ended(gateway.ReasonError)
			v.lead.Failed = true
			return v
		}, t0.Add(ttl), []string{"acknowledge leader"}, time.Time{}},
		{"the failed leader back from its cooldown waits too", func() view {
			v := base([]*entry{{hex: "a", name: "a", create: 40, lease: 0xa, value: old.value}}, leadValue{Term: 10, Key: "a", ID: "a", TTLms: ttl.Milliseconds(), Ended: gateway.ReasonError, Failed: true})
			return v
		}, t0.Add(time.Second), nil, t0.Add(ttl)},
		{"a native leader was promised nothing", func() view {
			v := base([]*entry{next}, leadValue{Term: 10, Key: "n", ID: "n"})
			v.pending = true
			return v
		}, t0, []string{"acknowledge leader"}, time.Time{}},
		{"an ended handover delay still waits for the promise", func() view {
			v := pending()
			v.lead.Until, v.lead.Timed = t0.Add(time.Second), true
			return v
		}, t0.Add(2 * time.Second), nil, t0.Add(ttl)},
		{"the keys ahead of a transfer's target move meanwhile", func() view {
			v := pending()
			v.line = []*entry{next, target}
			v.lead.Transfer = &leadTransfer{To: "t", Key: "t", Reason: gateway.ReasonTransferred, At: t0}
			v.transfer, v.target = v.lead.Transfer, 1
			return v
		}, t0, []string{"move the transfer's target up"}, t0.Add(ttl)},
		{"a leader is due to expire when its promise lapses", leading, t0.Add(ttl - time.Nanosecond), nil, t0.Add(ttl)},
		{"and expired then though etcd holds its key", leading, t0.Add(ttl), []string{"expire leader after its promise"}, time.Time{}},
		{"a native leader is never expired by elector", func() view {
			v := base([]*entry{native, next}, leadValue{Term: 10, Key: "n", ID: "n"})
			v.leader = native
			return v
		}, t0.Add(time.Hour), nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts, next := b.plan(tt.view(), t0, tt.mono)
			var got []string
			for _, a := range acts {
				got = append(got, a.what)
			}
			if !slices.Equal(got, tt.want) || !next.Equal(tt.next) {
				t.Fatalf("actions %q, next %v; want %q, next %v", got, next, tt.want, tt.next)
			}
			for _, a := range acts {
				if a.what == "expire leader after its promise" && (a.revoke != 0xa || !slices.ContainsFunc(a.cmps, func(c clientv3.Cmp) bool {
					return string(c.GetCompare().Key) == "p/_elector/promise/e"
				})) {
					t.Fatalf("the expiry does not require the promise as it was, or keeps the lease: %+v", a)
				}
			}
		})
	}
}
