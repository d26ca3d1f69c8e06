package gateway

import (
	"fmt"
	"slices"
	"time"
)

// Transfer asks the leader to hand over to follower to, as an operator
// (tokenHash "") or as the leader itself (tokenHash its own). Asking again
// for the pending target changes nothing. Errors: ErrNoLeader, ErrNotLeader
// (tokenHash is not the leader's), ErrNotFollower (to is not in line, or
// leads), a *TransferPendingError (a transfer to another target is
// pending).
//
// Why a transfer never makes two leaders act at once. A transfer changes
// no leadership by itself: it only records the target (Pending). While it
// is pending, the leader's heartbeats are refused and do not extend its
// life, so from the leader's side the election looks exactly as if its
// heartbeats were failing. Its leadership then ends in one of the ways
// every leadership ends, each already safe on its own:
//   - it hands over (Handover): its client has stopped acting first (end
//     command, then the call), as for a resign;
//   - it resigns or reports an error: as without a transfer;
//   - its TTL runs out: a client that obeys the step-down rule (no
//     successful heartbeat for TTL minus a margin: stop acting) has
//     stopped before its frozen expiry, and the handover delay adds its
//     margin as after any expiry.
//
// Only then does promote fill the empty slot, with the target moved to
// the head of the line instead of Line[0]; which follower is promoted
// changes nothing about when. The term grows in that same step, so the
// target leads with the next term.
func (r *Record) Transfer(now time.Time, to, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if !r.Leading {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoLeader)
	}
	if tokenHash != "" && !TokenMatches(r.Line[0].TokenHash, tokenHash) {
		return ev, fmt.Errorf("%q: the token is not the leader's: %w", r.Name, ErrNotLeader)
	}
	if slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == to }) < 1 {
		return ev, fmt.Errorf("%q in %q: %w", to, r.Name, ErrNotFollower)
	}
	if r.Pending != nil {
		if r.Pending.To == to {
			return ev, nil
		}
		return ev, &TransferPendingError{Election: r.Name, Transfer: *r.Pending}
	}
	return r.startTransfer(now, to, ReasonTransferred, ev), nil
}

// Handover is the leader's answer to a pending transfer: it ends its
// leadership (reason transferred or preempted), the target leads at once
// with the next term, and it stays in line as a follower, behind the
// candidates of its priority or higher, with its life extended by its TTL.
// The caller must have stopped acting as leader before it calls Handover.
// Errors: ErrCandidateNotFound, ErrTokenMismatch, ErrNoTransfer,
// ErrNotLeader.
func (r *Record) Handover(now time.Time, id, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if _, err := r.owned(id, tokenHash); err != nil {
		return ev, err
	}
	if !r.Leading || r.Line[0].ID != id {
		return ev, fmt.Errorf("%q in %q: %w", id, r.Name, ErrNotLeader)
	}
	if r.Pending == nil {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoTransfer)
	}
	ev = r.endLeadership(now, r.Pending.Reason, ev)
	old := r.Line[0]
	r.Line = slices.Delete(r.Line, 0, 1)
	if !old.ExpiresAt.IsZero() {
		old.ExpiresAt = now.Add(old.TTL)
	}
	old.JoinedAt = now
	// In priority order among all the others, the target included; promote
	// then moves the target to the head, which leaves the rest in order.
	r.insertFrom(0, old)
	return r.promote(now, ev), nil
}

// CancelTransfer drops the pending transfer, as an operator (tokenHash "")
// or as the leader (tokenHash its own), while the leadership it asks to
// hand over is still open: the leader's heartbeats count again
// (leader.transfer_cancelled, reason cancelled). Errors: ErrNoTransfer
// (none is pending, or the leadership already ended and the target is
// next), ErrNotLeader (tokenHash is not the leader's), ErrPreempting (the
// election's preempt setting started it and would start it again).
//
// Why a cancellation never makes two leaders. It changes no leadership:
// the leader slot, the line and the term stay as they are, and only
// Pending goes. It is one transition of the Record like the others,
// written under the backend's mutex or compare-and-set, so it is ordered
// with every way the leadership can end:
//   - the leader handed over (or resigned, erred, expired) first: the slot
//     is empty or someone else leads, Pending is gone or its leadership
//     ended, and the cancellation is refused with ErrNoTransfer;
//   - the cancellation is stored first: a Handover that follows finds no
//     transfer (ErrNoTransfer) and promotes nobody. A leader that stopped
//     acting to hand over learns from its next heartbeat that it still
//     leads, with the same term; the target never held the slot.
//
// The heartbeats refused while the transfer was pending extended
// nothing, so the leader's expiry and its own step-down deadline both
// still count from its last accepted heartbeat, as for any leader.
func (r *Record) CancelTransfer(now time.Time, tokenHash string) ([]Event, error) {
	ev := r.Advance(now)
	if r.Pending == nil {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrNoTransfer)
	}
	if !r.Leading {
		return ev, fmt.Errorf("%q: the leadership the transfer asks to hand over has ended: %w", r.Name, ErrNoTransfer)
	}
	if tokenHash != "" && !TokenMatches(r.Line[0].TokenHash, tokenHash) {
		return ev, fmt.Errorf("%q: the token is not the leader's: %w", r.Name, ErrNotLeader)
	}
	if r.Pending.Reason == ReasonPreempted && r.Settings.Preempt {
		return ev, fmt.Errorf("%q: %w", r.Name, ErrPreempting)
	}
	return r.cancelTransfer(now, r.Pending.To, ReasonCancelled, ev), nil
}

// HandoverDue returns a *TransferPendingError if candidate id leads and is
// asked to hand over, else nil. Heartbeat refuses with it; a backend that
// keeps liveness outside the Record (Entry.ExpiresAt zero) must refuse its
// own heartbeats with it too, so the leader learns of the transfer. Should
// such a check race with a transfer being recorded, an accepted heartbeat
// extends the liveness it reports, and the leader's step-down deadline with
// it: the transfer completes a TTL later, never while the leader may act.
func (r *Record) HandoverDue(id string) error {
	if r.Pending != nil && r.Leading && r.Line[0].ID == id {
		return &TransferPendingError{Election: r.Name, Transfer: *r.Pending}
	}
	return nil
}

// startTransfer records a transfer to follower to.
func (r *Record) startTransfer(now time.Time, to, reason string, ev []Event) []Event {
	r.Pending = &Transfer{To: to, Reason: reason, At: now}
	i := slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == to })
	e := r.event(now, EventLeaderTransfer, &r.Line[i], reason)
	e.Previous = &TermRef{ID: r.Line[0].ID, Term: r.Term}
	return append(ev, e)
}

// preempt starts a transfer (reason preempted) to the first follower when
// the election preempts and that follower's priority is higher than the
// leader's. The followers are in priority order, so Line[1] is the one of
// highest priority. A pending preemption whose target is no longer that
// follower is moved to it (a new leader.transfer event); changing the
// target changes nothing about when the slot empties, so it is as safe as
// the first request. A transfer an operator asked for is left alone.
func (r *Record) preempt(now time.Time, ev []Event) []Event {
	if !r.Settings.Preempt || !r.Leading || len(r.Line) < 2 || r.Line[1].Priority <= r.Line[0].Priority {
		return ev
	}
	if p := r.Pending; p != nil && (p.Reason != ReasonPreempted || p.To == r.Line[1].ID) {
		return ev
	}
	return r.startTransfer(now, r.Line[1].ID, ReasonPreempted, ev)
}

// cancelTransfer drops the pending transfer if candidate id, leaving the
// line for reason, is its target; the leader's heartbeats count again.
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
// while a leadership is open or its successor held back.
func (r *Record) checkTransfer() error {
	from := 0
	if r.Leading || r.Pending != nil {
		from = 1
	}
	for i := from + 1; i < len(r.Line); i++ {
		if r.Line[i].Priority > r.Line[i-1].Priority {
			return fmt.Errorf("gateway: record %q: %q (priority %d) is behind %q (priority %d)", r.Name, r.Line[i].ID, r.Line[i].Priority, r.Line[i-1].ID, r.Line[i-1].Priority)
		}
	}
	if r.Pending == nil {
		return nil
	}
	if !r.Leading && r.HandoverUntil.IsZero() && r.Held == nil {
		return fmt.Errorf("gateway: record %q: transfer pending with no leadership to hand over", r.Name)
	}
	i := slices.IndexFunc(r.Line, func(x Entry) bool { return x.ID == r.Pending.To })
	if (r.Leading && i < 1) || (!r.Leading && i != 0) {
		return fmt.Errorf("gateway: record %q: transfer to %q at %d in line, leading %v", r.Name, r.Pending.To, i, r.Leading)
	}
	return nil
}
