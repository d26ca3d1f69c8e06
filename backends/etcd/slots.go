package etcd

import (
	"slices"
	"time"
)

// The slots of an election as a replica counts them (see the package
// doc, "Who holds"). A slot is taken by a holder, by an open slot whose key
// went (until its handover delay has ended and its promise lapsed), or by
// a slot that ended without its holder's word (until its promise lapsed):
// a holdership begins only while fewer than the holders setting are
// taken. The delays end on etcd's clock (their markers), the promises on
// this replica's (promise.go).

// gone reports whether s is open and its key has left the line (an
// expiry, an early revocation, a native client's resignation).
func (v view) gone(s *slotValue) bool {
	return s.Ended == "" && !slices.ContainsFunc(v.line, s.names)
}

// stray reports whether s is open and names a key in line that is not a
// holder. The writers never leave one (see view); should a record say so,
// the slot stays taken.
func (v view) stray(s *slotValue) bool {
	return s.Ended == "" && !v.holds(s.Term) && slices.ContainsFunc(v.line, s.names)
}

// marked reports whether the marker of the handover delay of slot term is
// in etcd: the delay runs.
func (v view) marked(term uint64) bool {
	for _, t := range v.handovers {
		if t == term {
			return true
		}
	}
	return false
}

// release reports whether slot s, whose holder is not in line (its key
// went, or it ended without its holder's word), still holds a slot back
// on this replica at mono, and until when on the wall clock now (shown as
// handover_until): an open slot for its handover delay (started, or about
// to be), and either for its promise.
func (v view) release(s *slotValue, now, mono time.Time) (until time.Time, held bool) {
	if s.Ended == "" {
		switch {
		case v.marked(s.Term) || (!s.Until.IsZero() && !s.Timed):
			until, held = s.Until, true
		case s.Until.IsZero() && v.settings.HandoverDelay > 0:
			until, held = now.Add(v.settings.HandoverDelay), true // a reconciler is about to start it
		}
	}
	if end, ok := v.promiseLapses(s); ok && mono.Before(end) {
		if u := now.Add(end.Sub(mono)); u.After(until) {
			until = u
		}
		held = true
	}
	return until, held
}

// idle returns the slots of v's lead record that no holder holds: open
// ones whose key went and those that ended.
func (v view) idle() []*slotValue {
	if v.lead == nil {
		return nil
	}
	var out []*slotValue
	for i := range v.lead.Slots {
		if s := &v.lead.Slots[i]; s.Ended != "" || v.gone(s) {
			out = append(out, s)
		}
	}
	return out
}

// taken is the number of slots taken on this replica at mono.
func (v view) taken(mono time.Time) int {
	n := len(v.holders)
	for _, s := range v.idle() {
		if _, held := v.release(s, time.Time{}, mono); held {
			n++
		}
	}
	if v.lead != nil {
		for i := range v.lead.Slots {
			if v.stray(&v.lead.Slots[i]) {
				n++
			}
		}
	}
	return n
}

// heldUntil is what reads show as HandoverUntil: when the next slot held
// back frees so that the first follower may take it, zero when nobody
// waits, a slot is free, or the holders take every slot. With one holder:
// the end of the running handover delay or hold.
func (v view) heldUntil(now, mono time.Time) time.Time {
	if len(v.line) <= len(v.holders) {
		return time.Time{}
	}
	taken := len(v.holders)
	var ends []time.Time
	for _, s := range v.idle() {
		if until, held := v.release(s, now, mono); held {
			taken++
			ends = append(ends, until)
		}
	}
	if v.lead != nil {
		for i := range v.lead.Slots {
			if v.stray(&v.lead.Slots[i]) {
				taken++
			}
		}
	}
	need := taken - v.settings.HolderLimit() + 1 // the delays and holds that must end first
	if need <= 0 || need > len(ends) {
		return time.Time{}
	}
	slices.SortFunc(ends, time.Time.Compare)
	return ends[need-1]
}
