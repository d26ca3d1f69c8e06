package gateway

import (
	"fmt"
	"slices"
	"time"
)

// Transfer asks a holder to hand over to follower to, as an operator
// (tokenHash "") or as the holder itself (tokenHash its own). from names
// the holder; "" means the holder whose token tokenHash is, or, for an
// operator, the one holder (with more than one holding, an operator must
// name it). Asking again for the pending target and holder changes
// nothing. One transfer is pending at a time. Errors: ErrNoLeader,
// ErrNotLeader (tokenHash is not a holder's, or from does not hold),
// ErrInvalid (from is needed), ErrNotFollower (to is not in line, or
// holds), a *TransferPendingError (another transfer is pending).
//
// Why a transfer never makes more holders act at once than the limit. A
// transfer changes no holdership by itself: it only records the target
// and the holdership asked to hand over (Pending). While it is pending,
// that holder's heartbeats are refused and do not extend its life, so
// from the holder's side the election looks exactly as if its heartbeats
// were failing. Its holdership then ends in one of the ways every
// holdership ends, each already safe on its own:
//   - it hands over (Handover): its client has stopped acting first (end
//     command, then the call), as for a resign;
//   - it resigns or reports an error: as without a transfer;
//   - its TTL runs out: a client that obeys the step-down rule (no
//     successful heartbeat for TTL minus a margin: stop acting) has
//     stopped before its frozen expiry, and the handover delay adds its
//     margin as after any expiry;
//   - the gateway fails it or the holders are lowered: its slot is held
//     as for any holder so ended.
//
// Only then does promote fill a slot with the target, moved to the head
// of the followers; which follower is promoted changes nothing about
// when, and promote fills a slot only while fewer than the limit are
// taken. The term grows in that same step, so the target holds with the
// next term. Meanwhile other slots that free are filled from the line
// behind the target. A follower never becomes a holder beside N holders:
// a transfer replaces one of them.
func (r *Record) Transfer(now time.Time, from, to, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	k := r.Holding()
	if k == 0 {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoLeader)
	}
	i := -1
	switch {
	case tokenHash != "":
		i = slices.IndexFunc(r.Line[:k], func(x Entry) bool { return TokenMatches(x.TokenHash, tokenHash) })
		if i < 0 || (from != "" && r.Line[i].ID != from) {
			return ev, fmt.Errorf("%q: the token is not the holder's: %w", r.Name, ErrNotLeader)
		}
	case from != "":
		if i = r.holder(from); i < 0 {
			return ev, fmt.Errorf("%q in %q: %w", from, r.Name, ErrNotLeader)
		}
	case k == 1:
		i = 0
	default:
		return ev, invalid("from", "%d candidates hold %q (%s): name the one that should hand over", k, r.Name, holderIDs(r.Line[:k]))
	}
	if r.inLine(to) < k {
		return ev, fmt.Errorf("%q in %q: %w", to, r.Name, ErrNotFollower)
	}
	if p := r.Pending; p != nil {
		if p.To == to && p.Term == r.Line[i].Term {
			return ev, nil
		}
		return ev, &TransferPendingError{Election: r.Name, Transfer: *p}
	}
	return r.startTransfer(now, i, to, ReasonTransferred, ev), nil
}

// holderIDs lists the ids of holders for a message.
func holderIDs(hs []Entry) string {
	s := ""
	for i, h := range hs {
		if i > 0 {
			s += ", "
		}
		s += h.ID
	}
	return s
}

// Handover is a holder's answer to the pending transfer of its
// holdership: it ends the holdership (reason transferred or preempted),
// the target holds at once with the next term, and the holder stays in
// line as a follower, behind the candidates of its priority or higher,
// with its life extended by its TTL. The caller must have stopped acting
// as holder before it calls Handover. Errors: ErrCandidateNotFound,
// ErrTokenMismatch, ErrNoTransfer (none pending for this holder),
// ErrNotLeader.
func (r *Record) Handover(now time.Time, id, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if _, err := r.owned(id, tokenHash); err != nil {
		return ev, err
	}
	i := r.holder(id)
	if i < 0 {
		return ev, fmt.Errorf("%q in %q: %w", id, r.Name, ErrNotLeader)
	}
	if r.Pending == nil || r.Pending.Term != r.Line[i].Term {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoTransfer)
	}
	old, _, ev := r.endHolding(now, i, r.Pending.Reason, ev)
	if !old.ExpiresAt.IsZero() {
		old.ExpiresAt = now.Add(old.TTL)
	}
	old.JoinedAt = now
	// In priority order among all the followers, the target included;
	// promote then moves the target to the head, which leaves the rest in
	// order.
	r.insertFrom(r.Holding(), old)
	return r.promote(now, ev), nil
}

// CancelTransfer drops the pending transfer, as an operator (tokenHash "")
// or as the holder asked to hand over (tokenHash its own), while the
// holdership it asks to hand over is still open: the holder's heartbeats
// count again (leader.transfer_cancelled, reason cancelled). Errors:
// ErrNoTransfer (none is pending, or the holdership already ended and the
// target is next), ErrNotLeader (tokenHash is not that holder's),
// ErrPreempting (the election's preempt setting started it and would
// start it again). The transfer had steered promote, and the cancellation
// lets it go on as the next Advance would: the target takes a slot free
// beside the holdership it waited for (the holders raised meanwhile), and
// when the election preempts and a follower outranks a holder, that
// preemption starts at once.
//
// Why a cancellation never makes more holders act. It ends no holdership,
// and the one it asked to hand over goes on with its term. A holdership
// it begins, it begins through promote, the only place one begins, which
// begins one only while fewer slots are taken than the limit, counting
// the open holderships, handover delays and holds. It is one transition
// of the Record like the others, written under the backend's mutex or
// compare-and-set, so it is ordered with every way the holdership it
// asked to hand over can end:
//   - the holder handed over (or resigned, erred, expired) first: its
//     holdership is closed, and the cancellation is refused with
//     ErrNoTransfer;
//   - the cancellation is stored first: a Handover that follows finds no
//     transfer (ErrNoTransfer) and promotes nobody. A holder that stopped
//     acting to hand over learns from its next heartbeat that it still
//     holds, with the same term; the target never held its slot.
//
// The heartbeats refused while the transfer was pending extended
// nothing, so the holder's expiry and its own step-down deadline both
// still count from its last accepted heartbeat, as for any holder.
func (r *Record) CancelTransfer(now time.Time, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if r.Pending == nil {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoTransfer)
	}
	i := r.pendingHolder()
	if i < 0 {
		return ev, fmt.Errorf("%q: the holdership the transfer asks to hand over has ended: %w", r.Name, ErrNoTransfer)
	}
	if tokenHash != "" && !TokenMatches(r.Line[i].TokenHash, tokenHash) {
		return ev, fmt.Errorf("%q: the token is not the holder's: %w", r.Name, ErrNotLeader)
	}
	if r.Pending.Reason == ReasonPreempted && r.Settings.Preempt {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrPreempting)
	}
	return r.promote(now, r.cancelTransfer(now, r.Pending.To, ReasonCancelled, ev)), nil
}

// HandoverDue returns a *TransferPendingError if candidate id holds and is
// asked to hand over, else nil. Heartbeat refuses with it; a backend that
// keeps liveness outside the Record (Entry.ExpiresAt zero) must refuse its
// own heartbeats with it too, so the holder learns of the transfer. Should
// such a check race with a transfer being recorded, an accepted heartbeat
// extends the liveness it reports, and the holder's step-down deadline with
// it: the transfer completes a TTL later, never while the holder may act.
func (r *Record) HandoverDue(id string) error {
	if i := r.pendingHolder(); i >= 0 && r.Line[i].ID == id {
		return &TransferPendingError{Election: r.Name, Transfer: *r.Pending}
	}
	return nil
}

// pendingHolder returns the index of the holder the pending transfer asks
// to hand over, or -1 when none is pending or that holdership has ended.
func (r *Record) pendingHolder() int {
	if r.Pending == nil {
		return -1
	}
	for i := range r.Holding() {
		if r.Line[i].Term == r.Pending.Term {
			return i
		}
	}
	return -1
}

// pendingOpen reports whether the holdership the pending transfer asks to
// hand over is still open.
func (r *Record) pendingOpen() bool { return r.pendingHolder() >= 0 }

// startTransfer records a transfer of holder Line[from]'s holdership to
// follower to.
func (r *Record) startTransfer(now time.Time, from int, to, reason string, ev []Event) []Event {
	h := &r.Line[from]
	r.Pending = &Transfer{To: to, Reason: reason, At: now, From: h.ID, Term: h.Term}
	e := r.event(now, EventLeaderTransfer, &r.Line[r.inLine(to)], reason)
	e.Previous = &TermRef{ID: h.ID, Term: h.Term}
	return append(ev, e)
}

// preempt starts a transfer (reason preempted) when the election preempts,
// every slot is held, and the first follower's priority is higher than the
// lowest of the holders': from the holder of lowest priority (the newest
// of equals) to that follower. The followers are in priority order, so
// the first is the one of highest priority. With free or held-back slots
// the first follower takes the next slot anyway. A pending preemption
// whose target is no longer that follower is moved to it (a new
// leader.transfer event, from the same holder while its holdership is
// open); changing the target changes nothing about when the slot empties,
// so it is as safe as the first request. A transfer an operator asked for
// is left alone.
func (r *Record) preempt(now time.Time, ev []Event) []Event {
	k := r.Holding()
	if !r.Settings.Preempt || k == 0 || k < r.Settings.HolderLimit() || len(r.Line) <= k {
		return ev
	}
	from := r.pendingHolder()
	if from < 0 {
		from = 0
		for i := 1; i < k; i++ {
			if r.Line[i].Priority <= r.Line[from].Priority {
				from = i
			}
		}
	}
	if r.Line[k].Priority <= r.Line[from].Priority {
		return ev
	}
	if p := r.Pending; p != nil && (p.Reason != ReasonPreempted || p.To == r.Line[k].ID) {
		return ev
	}
	return r.startTransfer(now, from, r.Line[k].ID, ReasonPreempted, ev)
}

// cancelTransfer drops the pending transfer if candidate id, leaving the
// line for reason, is its target; the holder's heartbeats count again.
func (r *Record) cancelTransfer(now time.Time, id, reason string, ev []Event) []Event {
	if r.Pending == nil || r.Pending.To != id {
		return ev
	}
	r.Pending = nil
	e := r.Find(id)
	return append(ev, r.event(now, EventTransferCancelled, e, reason))
}

// pending returns a copy of the pending transfer, or nil.
func (r *Record) pending() *Transfer {
	if r.Pending == nil {
		return nil
	}
	t := *r.Pending
	return &t
}

// checkTransfer verifies the invariants of priorities and transfers: the
// followers are in priority order, and a pending transfer names a follower
// while the holdership it asks to hand over is open, or the next in line
// while a slot is held back.
func (r *Record) checkTransfer() error {
	from := r.followersFrom()
	for i := from + 1; i < len(r.Line); i++ {
		if r.Line[i].Priority > r.Line[i-1].Priority {
			return fmt.Errorf("gateway: record %q: %q (priority %d) is behind %q (priority %d)", r.Name, r.Line[i].ID, r.Line[i].Priority, r.Line[i-1].ID, r.Line[i-1].Priority)
		}
	}
	p := r.Pending
	if p == nil {
		return nil
	}
	k := r.Holding()
	i := r.inLine(p.To)
	open := r.pendingOpen()
	switch {
	case open && i < k:
		return fmt.Errorf("gateway: record %q: transfer to %q, which holds", r.Name, p.To)
	case !open && i != k:
		return fmt.Errorf("gateway: record %q: transfer to %q at %d in line, after the holdership of term %d ended", r.Name, p.To, i, p.Term)
	case !open && r.taken() < r.Settings.HolderLimit():
		return fmt.Errorf("gateway: record %q: transfer to %q pending with a free slot", r.Name, p.To)
	}
	return nil
}
