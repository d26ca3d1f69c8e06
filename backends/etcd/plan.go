package etcd

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// plan returns the actions due in v, and next, when the next one is due
// on the promise clock (promise.go): now stamps what the actions write and
// the "until" shown to users, mono is the promise clock's time.
//
//   - A holder whose promise lapsed at mono while etcd still holds its key:
//     expire it (expireHolder). Otherwise next is when it lapses.
//   - More holders than the setting (it was lowered without the holders
//     being ended): end the newest (lowered).
//   - An open slot whose key went (an expiry): start its handover delay
//     (write "until" and the delay's marker key).
//   - Fewer slots taken than the setting on this replica's clock, a
//     follower next: acknowledge it (fill), unless a transfer steers
//     elsewhere. next is when the next promise that holds a slot lapses.
//   - An open slot whose key went and whose delay ended, with nobody
//     waiting: record it ended ("expired"), held until its promise lapses.
//   - In the lead record's list form, ended slots whose promise lapsed:
//     drop them.
//   - A cooling candidate whose cooldown's marker etcd deleted: re-create
//     its candidacy key, at the back of the line, on its lease.
//   - A delay or cooldown written without a marker (by an older version):
//     give it one of its full length, or of what "until" says is left if
//     that is longer. It ends late by at most that much, never early.
//   - A pending transfer (transfer.go): move the followers between the
//     holders and the target behind the target, one per action; once the
//     holdership it replaces went, after that slot's handover delay. A
//     transfer that no longer holds: drop it from the lead record.
//   - Otherwise, a line out of priority order: move the next key that
//     must go behind a candidate of higher priority (reorder); with the
//     line in order and preempt set, start a preemption (preempt).
//
// Whether a delay or cooldown ended is whether etcd still holds its marker
// key, so a replica whose wall clock runs ahead cannot end one early (see
// timers.go). Whether a promise lapsed is this replica's monotonic clock
// since it held the promise, which etcd committed after the heartbeat was
// sent: never before the candidate's own deadline.
func (b *Backend) plan(v view, now, mono time.Time) (acts []action, next time.Time) {
	soon := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for i, x := range v.holders {
		if x.native {
			continue // promised nothing: its lease alone says how long it holds
		}
		if end, ok := v.promiseLapses(v.held[i]); ok {
			if !mono.Before(end) {
				acts = append(acts, b.expireHolder(v, i, now))
			} else {
				soon(end)
			}
		}
	}
	if len(acts) > 0 {
		return acts, time.Time{}
	}
	for _, s := range v.idle() {
		if end, ok := v.promiseLapses(s); ok && mono.Before(end) {
			soon(end)
		}
	}
	if a, ok := b.planLead(v, now, mono); ok {
		acts = append(acts, a)
	}
	// At most one of these: each moves the line or the record another
	// would compute from.
	if a, ok := b.moveUp(v, mono); ok {
		acts = append(acts, a)
	} else if a, ok := b.reorder(v); ok {
		acts = append(acts, a)
	} else if a, ok := b.preempt(v, now); ok {
		acts = append(acts, a)
	}
	return append(acts, b.planCooldowns(v, now)...), next
}

// planLead returns the one write of the lead record due in v, if any (a
// second would compare the record's mod revision the first changed).
func (b *Backend) planLead(v view, now, mono time.Time) (action, bool) {
	leadIs := clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod)
	write := func(what string, l leadValue, timer *timerPut) action {
		return action{what: what, cmps: []clientv3.Cmp{leadIs}, ops: b.putLead(v, l), timer: timer}
	}
	if n := v.settings.HolderLimit(); len(v.holders) > n {
		a := write("end holderships above the setting", lowered(v, n, now), nil)
		cmps, ops := b.rankAhead(v, v.holders[n:])
		a.cmps, a.ops = append(a.cmps, cmps...), append(a.ops, ops...)
		return a, true
	}
	delay := v.settings.HandoverDelay
	for _, s := range v.idle() {
		switch {
		case s.Ended != "":
		case s.Until.IsZero() && delay > 0:
			l := v.lead.clone()
			ls := l.slot(s.Term)
			ls.Until, ls.Timed, l.At = now.Add(delay), true, now
			return write("start handover delay", l, &timerPut{key: b.handoverKey(v.name, l, s.Term), value: markerValue{Term: s.Term, Until: ls.Until}, ttl: delay}), true
		case !s.Until.IsZero() && !s.Timed:
			l := v.lead.clone()
			ls := l.slot(s.Term)
			ls.Timed = true
			return write("time handover delay in etcd", l, &timerPut{key: b.handoverKey(v.name, l, s.Term), value: markerValue{Term: s.Term, Until: s.Until}, ttl: max(delay, s.Until.Sub(now))}), true
		}
	}
	if a, ok := b.fill(v, now, mono); ok {
		return a, true
	}
	if len(v.line) == len(v.holders) {
		// Nobody waits: an open slot whose key went and whose delay ended
		// is recorded as expired, which holds a newcomer back as long as
		// its promise runs, as an open one would.
		for _, s := range v.idle() {
			if s.Ended == "" && !v.marked(s.Term) {
				l := v.lead.clone()
				ls := l.slot(s.Term)
				ls.Ended, ls.Until, ls.Timed, l.At = gateway.ReasonExpired, time.Time{}, false, now
				l.Previous, l.PreviousEnd = ls.ref(), gateway.ReasonExpired
				if l.Transfer != nil && l.Transfer.FromTerm == s.Term {
					l.Transfer = nil
				}
				return write("end expired holdership", l, nil), true
			}
		}
	}
	if v.lead != nil && v.lead.Transfer != nil && v.transfer == nil {
		// A transfer whose target left the line without elector removing
		// it (it expired), or whose holdership ended: drop it.
		l := v.lead.clone()
		l.Transfer, l.At = nil, now
		return write("drop cancelled transfer", l, nil), true
	}
	if v.lead != nil && v.lead.list {
		// Ended slots whose promise lapsed hold nothing back any more:
		// drop them, so that the record (and what every heartbeat reads
		// of it) shrinks again after the holders were lowered. The
		// one-holder form keeps its ended slot, as it always has.
		l := v.lead.clone()
		for _, s := range v.idle() {
			if _, held := v.release(s, now, mono); !held && s.Ended != "" {
				l.drop(s.Term)
			}
		}
		if len(l.Slots) < len(v.lead.Slots) {
			l.At = now
			return write("drop lapsed slots", l, nil), true
		}
	}
	return action{}, false
}

// fill returns the action that acknowledges the first follower,
// line[len(holders)], as a holder: fewer slots are taken than the setting
// on this replica's clock at mono (so the slot it takes was free: see the
// package doc, "Who holds"), it may hold (a native key only as the head
// of the line), and no follower of higher priority stands behind it that
// reorder will move ahead of it. A pending transfer steers it: while the holdership it
// replaces is open its target waits for it, and no other slot goes to the
// target or past it (the holders are the head of the line); once that
// holdership's key went, the target is next, and the keys ahead of it
// move behind it first (moveUp). The write drops the slots that no
// longer hold anything back on this replica's clock, and the transfer if
// it completes or no longer holds. It is guarded by the lead record, the
// settings and the follower's key (acknowledged): all as v saw them, the
// holders setting is the one counted with, and the follower is still the
// first behind the holders (a key created or moved later is behind it).
func (b *Backend) fill(v view, now, mono time.Time) (action, bool) {
	k := len(v.holders)
	if k >= len(v.line) || v.taken(mono) >= v.settings.HolderLimit() {
		return action{}, false
	}
	x := v.line[k]
	if x.native && k > 0 {
		return action{}, false // a native client holds only as the head
	}
	if _, unsorted := b.reorder(v); unsorted && reorderFrom(v) == k {
		return action{}, false // the line goes in priority order first (reorder)
	}
	l := v.lead.clone()
	if t := v.transfer; t != nil {
		switch {
		case v.from >= 0 && v.target == k:
			return action{}, false // the target waits for the holdership it replaces
		case v.from < 0 && v.target != k && blocked(v, v.from, v.target) == nil:
			return action{}, false // the target is next: the keys ahead of it move first
		case v.from < 0:
			l.Transfer = nil // it completes, or a native key ahead of its target leads instead
		}
	} else {
		l.Transfer = nil // none, or one that no longer holds
	}
	var prev *slotValue
	for _, s := range v.idle() {
		if _, held := v.release(s, now, mono); held {
			continue
		}
		if s.Ended == "" && (prev == nil || (v.transfer != nil && s.Term == v.transfer.FromTerm)) {
			prev = s // its key went without a write: the next begin names it
		}
		l.drop(s.Term)
	}
	if prev != nil {
		l.Previous, l.PreviousEnd = prev.ref(), gateway.ReasonExpired
	}
	l.acknowledge(x, now)
	l.At = now
	return action{what: "acknowledge holder",
		cmps: append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod)}, b.acknowledged(v, x)...),
		ops:  b.putLead(v, l)}, true
}

// acknowledged returns the comparisons beside the lead record's of a
// transaction that acknowledges x as a holder of v's election: the
// settings as v saw them (Configure writes them; lowering the holders also
// compares the lead record, so of the two one fails) and x's key.
func (b *Backend) acknowledged(v view, x *entry) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(b.keys.settings(v.name)), "=", v.settingsMod),
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
	}
}

// lowered is v's lead record with the holderships above n ended, the
// newest first (reason holders_reduced): their holders stay in line, now
// followers ahead of those that never held, and each one's slot is held
// until its promise lapses, as it may not know yet. A transfer of one of
// them is dropped.
func lowered(v view, n int, now time.Time) leadValue {
	l := v.lead.clone()
	l.At = now
	for i := len(v.holders) - 1; i >= n; i-- {
		s := l.slot(v.held[i].Term)
		s.Ended = gateway.ReasonHoldersReduced
		l.Previous, l.PreviousEnd = s.ref(), gateway.ReasonHoldersReduced
		if t := l.Transfer; t != nil && t.FromTerm == s.Term {
			// As after any other end of the holdership it asks to hand
			// over, the transfer stays: its target is next, and takes
			// the next slot that frees (fill), as gateway.Record's.
			t.Handed = true
		}
	}
	return l
}

// rankAhead returns the writes that give the candidates xs (holders whose
// holderships end, in line order) ranks ahead of every other candidate
// in v's line, in their order, as gateway.Record puts a holder ended by a
// lower holders setting ahead of the followers of its priority
// (insertAhead); reorder then moves them behind candidates of higher
// priority without losing that place. Each write requires the key it
// rewrites (a put on a key that went would create it again). Native keys
// keep their places and have no rank to write.
func (b *Backend) rankAhead(v view, xs []*entry) ([]clientv3.Cmp, []clientv3.Op) {
	low := int64(0)
	for i, x := range v.line {
		if i == 0 || x.rank() < low {
			low = x.rank()
		}
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for i, x := range xs {
		if x.native {
			continue
		}
		val := x.value
		r := low - int64(len(xs)-i)
		val.Rank = &r
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create))
		ops = append(ops, clientv3.OpPut(b.keyOf(v.name, x), mustJSON(val), clientv3.WithLease(clientv3.LeaseID(x.lease))))
	}
	return cmps, ops
}

// putLead returns the writes that store l as the lead record of v's
// election, which it replaces, and delete the per-term promise records of
// the holderships l no longer keeps (no promise can be written for those:
// the write of a promise compares the lead record).
func (b *Backend) putLead(v view, l leadValue) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpPut(b.keys.lead(v.name), mustJSON(l))}
	for name, p := range v.promises {
		if name != "" && l.slot(p.value.Term) == nil {
			ops = append(ops, clientv3.OpDelete(b.keys.promiseOf(v.name, name)))
		}
	}
	return ops
}

// moveUp returns the action that moves the first follower behind the
// target of v's pending transfer, when one stands between the holders and
// the target and nothing blocks it; once the holdership the transfer
// replaces went, only after that slot's handover delay, and, for a
// native target, only while fewer slots are taken than the setting on
// this replica's clock at mono: the moves make it the head of the line,
// where it acts by its own rule before elector acknowledges it.
func (b *Backend) moveUp(v view, mono time.Time) (action, bool) {
	t := v.transfer
	if t == nil || v.target <= len(v.holders) || blocked(v, v.from, v.target) != nil {
		return action{}, false
	}
	if v.from < 0 {
		s := v.lead.slot(t.FromTerm) // nil once its holder handed over (leadTransfer)
		// An open slot whose key went waits for its handover delay to be
		// recorded; one the holders setting ended has no delay.
		if s != nil && s.Ended == "" && (v.marked(s.Term) || (s.Until.IsZero() && v.settings.HandoverDelay > 0) || (!s.Until.IsZero() && !s.Timed)) {
			return action{}, false
		}
		if v.line[v.target].native && v.taken(mono) >= v.settings.HolderLimit() {
			return action{}, false
		}
	}
	return b.moveTargetUp(v), true
}

// planCooldowns returns the actions of the cooldowns due in v.
func (b *Backend) planCooldowns(v view, now time.Time) []action {
	var acts []action
	for _, x := range v.cooling {
		if v.cooldowns[x.hex] {
			continue // the cooldown's marker is still in etcd
		}
		ie, ok := v.ids[x.value.ID]
		if !ok || ie.hex != x.hex {
			continue // expiring: its id key is already gone
		}
		coolKey := b.keys.cooling(v.name, x.hex)
		if !x.value.Timed {
			timed := x.value
			timed.Timed = true
			acts = append(acts, action{what: "time cooldown in etcd",
				cmps:  []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod)},
				ops:   []clientv3.Op{clientv3.OpPut(coolKey, mustJSON(timed), clientv3.WithLease(clientv3.LeaseID(x.lease)))},
				timer: &timerPut{key: b.keys.cooldownMark(v.name, x.hex), value: markerValue{Until: x.value.CooldownUntil}, ttl: max(v.settings.ErrorCooldown, x.value.CooldownUntil.Sub(now))}})
			continue
		}
		back := x.value
		back.CooldownUntil, back.At, back.Timed, back.Rank = time.Time{}, now, false, nil
		k := b.keys.candidacy(v.name, x.hex)
		acts = append(acts, action{what: "rejoin after cooldown",
			cmps: []clientv3.Cmp{
				clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod),
				clientv3.Compare(clientv3.CreateRevision(b.keys.candidateID(v.name, x.value.ID)), "=", ie.create),
				clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
			},
			ops: []clientv3.Op{clientv3.OpDelete(coolKey), clientv3.OpPut(k, mustJSON(back), clientv3.WithLease(clientv3.LeaseID(x.lease)))}})
	}
	return acts
}
