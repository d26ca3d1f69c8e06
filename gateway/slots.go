package gateway

import (
	"fmt"
	"slices"
	"time"
)

// The slots of a Record: who holds, how a holdership begins (promote, the
// only place) and ends (endHolding), and where candidates stand in line.

// Holding returns the number of open holderships: Line[:Holding()] hold.
func (r *Record) Holding() int {
	k := 0
	for k < len(r.Line) && r.Line[k].Term != 0 {
		k++
	}
	return k
}

// holder returns the index in line of holder id, or -1 if id does not
// hold.
func (r *Record) holder(id string) int {
	for i := range r.Holding() {
		if r.Line[i].ID == id {
			return i
		}
	}
	return -1
}

// taken returns the number of slots taken: by holders, by handover delays
// and by holds. promote fills a slot only while it is below the limit.
func (r *Record) taken() int { return r.Holding() + len(r.Delays) + len(r.Held) }

// promote fills free slots from the line, one at a time, for as long as
// fewer slots are taken than Settings.HolderLimit() and a follower can
// take one; then it starts a preemption if one is due. This is the only
// place a holdership begins, and it begins one only while fewer than the
// limit are taken, counting the one it just began: see Record for why that
// keeps more than the limit from acting at once.
//
// A pending transfer steers it: once the holdership asked to hand over
// has ended, its target is next (moved to the head of the followers,
// during a handover delay or hold too, so the line says so); while that
// holdership is open, the target waits for it and other slots go to the
// next follower behind it.
func (r *Record) promote(now time.Time, ev []Event) []Event {
	for {
		k := r.Holding()
		waiting := r.Pending != nil && !r.pendingOpen()
		if waiting {
			if i := r.inLine(r.Pending.To); i > k {
				e := r.Line[i]
				r.Line = slices.Insert(slices.Delete(r.Line, i, i+1), k, e)
			}
		}
		if r.taken() >= r.Settings.HolderLimit() {
			break
		}
		j := k
		if r.Pending != nil && !waiting && j < len(r.Line) && r.Line[j].ID == r.Pending.To {
			j++ // the target waits for the holdership it takes over
		}
		if j >= len(r.Line) {
			break
		}
		if j > k {
			e := r.Line[j]
			r.Line = slices.Insert(slices.Delete(r.Line, j, j+1), k, e)
		}
		if waiting {
			r.Pending = nil // its target takes this slot
		}
		r.Term++
		e := &r.Line[k]
		e.Term, e.Since = r.Term, now
		begin := r.holderEvent(now, EventLeaderBegin, e, r.PreviousEnd)
		begin.Previous = r.Previous
		ev = append(ev, begin)
	}
	return r.preempt(now, ev)
}

// endHolding ends the holdership of holder Line[i] for reason (leader.end,
// Previous) and takes the holder out of the line: it returns its entry,
// with Term and Since cleared, for the caller to drop, cool or put back,
// and the term that ended. The caller decides whether the slot is held.
func (r *Record) endHolding(now time.Time, i int, reason string, ev []Event) (Entry, uint64, []Event) {
	e := r.Line[i]
	ev = append(ev, r.holderEvent(now, EventLeaderEnd, &e, reason))
	r.Previous = &TermRef{ID: e.ID, Term: e.Term}
	r.PreviousEnd = reason
	term := e.Term
	e.Term, e.Since = 0, time.Time{}
	r.Line = slices.Delete(r.Line, i, i+1)
	return e, term, ev
}

// followersFrom is where the followers that insert may move begin: after
// the holders, and after a pending transfer's target once the holdership
// it takes over has ended (promote keeps it at the head).
func (r *Record) followersFrom() int {
	k := r.Holding()
	if r.Pending != nil && !r.pendingOpen() && k < len(r.Line) && r.Line[k].ID == r.Pending.To {
		k++
	}
	return k
}

// insert puts e in line behind every follower of its priority or higher.
// Holders keep their places whatever their priority, and so does the
// target of a pending transfer that is next: insert never moves them.
func (r *Record) insert(e Entry) { r.insertFrom(r.followersFrom(), e) }

// insertFrom puts e in Line[from:] behind every candidate of its priority
// or higher.
func (r *Record) insertFrom(from int, e Entry) {
	i := from
	for i < len(r.Line) && r.Line[i].Priority >= e.Priority {
		i++
	}
	r.Line = slices.Insert(r.Line, i, e)
}

// insertAhead puts e in line ahead of every follower of its priority or
// lower: a holder whose holdership was ended by lowering the holders
// keeps its place before those that never held.
func (r *Record) insertAhead(e Entry) {
	i := r.followersFrom()
	for i < len(r.Line) && r.Line[i].Priority > e.Priority {
		i++
	}
	r.Line = slices.Insert(r.Line, i, e)
}

// leader returns the longest-standing holdership, or nil when nobody
// holds.
func (r *Record) leader() *Leader {
	if r.Holding() == 0 {
		return nil
	}
	l := r.Line[0].leader()
	return &l
}

// holders returns every holdership, the longest-standing first, when the
// election has more than one slot; nil with one (leader says it all).
func (r *Record) holders() []Leader {
	if r.Settings.HolderLimit() == 1 {
		return nil
	}
	k := r.Holding()
	out := make([]Leader, k)
	for i := range k {
		out[i] = r.Line[i].leader()
	}
	return out
}

func (x *Entry) leader() Leader {
	return Leader{ID: x.ID, Metadata: x.Metadata, Term: x.Term, Since: x.Since, ExpiresAt: x.ExpiresAt}
}

// heldUntil is what reads show as HandoverUntil: when a slot held back by
// a handover delay or a hold frees so that the next in line may take it,
// or zero when no delay or hold stands in the way (a slot is free, or the
// holders take every slot). With one holder: the end of the running delay
// or hold.
func (r *Record) heldUntil() time.Time {
	// need is how many delays and holds must end before a slot frees.
	need := r.taken() - r.Settings.HolderLimit() + 1
	n := len(r.Delays) + len(r.Held)
	if need <= 0 || need > n {
		return time.Time{}
	}
	ends := make([]time.Time, 0, n)
	for _, d := range r.Delays {
		ends = append(ends, d.Until)
	}
	for _, h := range r.Held {
		ends = append(ends, h.Until)
	}
	slices.SortFunc(ends, time.Time.Compare)
	return ends[need-1]
}

// checkHolders verifies the invariants of the slots: the holders are the
// head of the line, in order of their terms, no more than the limit, with
// terms no later than Term; nobody in error holds.
func (r *Record) checkHolders() error {
	k := r.Holding()
	if k > r.Settings.HolderLimit() {
		return fmt.Errorf("gateway: record %q: %d holders, above the limit of %d", r.Name, k, r.Settings.HolderLimit())
	}
	for i, e := range r.Line {
		switch {
		case i >= k && e.Term != 0:
			return fmt.Errorf("gateway: record %q: %q holds term %d behind a follower", r.Name, e.ID, e.Term)
		case i < k && e.Term > r.Term:
			return fmt.Errorf("gateway: record %q: %q holds term %d, after the last term handed out, %d", r.Name, e.ID, e.Term, r.Term)
		case i > 0 && i < k && e.Term <= r.Line[i-1].Term:
			return fmt.Errorf("gateway: record %q: %q holds term %d after %q's term %d", r.Name, e.ID, e.Term, r.Line[i-1].ID, r.Line[i-1].Term)
		}
	}
	for _, e := range r.Cooling {
		if e.Term != 0 {
			return fmt.Errorf("gateway: record %q: %q in error holds term %d", r.Name, e.ID, e.Term)
		}
	}
	return nil
}
