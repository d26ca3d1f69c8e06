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
			acts, _ := b.plan(tt.view(), tt.now)
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
			acts, _ := b.plan(tt.view, t0.Add(24*time.Hour))
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
