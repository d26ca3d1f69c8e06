package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var (
	_ gateway.Transferer = (*Backend)(nil)
)

// Transfer implements gateway.Transferer: TransferFrom naming no holder.
func (b *Backend) Transfer(ctx context.Context, election, to, tokenHash string) (gateway.Election, error) {
	return b.TransferFrom(ctx, election, "", to, tokenHash)
}

// TransferFrom implements gateway.Transferer. It writes the
// transfer into the lead record (guarded by the record's mod revision,
// the holder's key and the target's key), which changes no holdership:
// from then on every replica refuses that holder's heartbeats (see
// Heartbeat) until it hands over, resigns, errs or expires. Meanwhile the
// reconcilers move the followers between the holders and the target
// behind the target (see plan); whoever ends the holdership then makes the
// target a holder in the transaction that makes it the first behind the
// holders (a resignation or an error before it is first cancels the
// transfer instead). from names the holder ("": the holder whose token
// tokenHash is, or the one holder). Errors: gateway.ErrElectionNotFound,
// gateway.ErrNoLeader, gateway.ErrNotLeader, gateway.ErrInvalid (several
// hold and nothing names which), gateway.ErrNotFollower,
// gateway.ErrTransferPending (to another target),
// gateway.ErrTransferBlocked (a native candidate stands between the
// holders and the target, or the holder is native),
// gateway.ErrUnavailable.
func (b *Backend) TransferFrom(ctx context.Context, election, from, to, tokenHash string) (gateway.Election, error) {
	op := fmt.Sprintf("transfer %q to %q", election, to)
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, err)
		}
		v, cursor, err := b.current(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		if !v.exists {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrElectionNotFound)
		}
		h, err := v.transferred(from, tokenHash)
		if err != nil {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, err)
		}
		i := slices.IndexFunc(v.line, func(x *entry) bool { return x.value.ID == to })
		if i < len(v.holders) {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrNotFollower)
		}
		if t := v.transfer; t != nil {
			if t.Key == v.line[i].hex && t.FromTerm == v.held[h].Term {
				return b.snapshot(v, cursor, b.now()), nil
			}
			return gateway.Election{}, &gateway.TransferPendingError{Election: election, Transfer: *t.gateway()}
		}
		if err := blocked(v, h, i); err != nil {
			return gateway.Election{}, err
		}
		cmps, ops := b.transferTxn(v, h, i, time.Now())
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return gateway.Election{}, translate(ctx, op, err)
		}
		if !resp.Succeeded {
			continue // the election moved: read it again
		}
		if err := b.waitApplied(ctx, resp.Header.Revision); err != nil {
			return gateway.Election{}, err
		}
		// Move the target up now rather than at the reconcilers' next
		// pass, so that a holder that resigns right away hands over to it.
		b.reconcileBeforeAnswer(ctx, "transfer", election)
		v, cursor, err = b.cached(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		return b.snapshot(v, cursor, b.now()), nil
	}
}

// transferred returns the index in v.holders of the holder a transfer
// asks to hand over, as gateway.Record.Transfer chooses it: the holder
// whose token tokenHash is (named from, if from is set), the holder from,
// or the one holder. Errors: gateway.ErrNoLeader, gateway.ErrNotLeader,
// gateway.ErrInvalid.
func (v view) transferred(from, tokenHash string) (int, error) {
	k := len(v.holders)
	if k == 0 {
		return -1, gateway.ErrNoLeader
	}
	named := func(x *entry) bool { return from == "" || x.value.ID == from }
	switch {
	case tokenHash != "":
		i := slices.IndexFunc(v.holders, func(x *entry) bool { return !x.native && gateway.TokenMatches(x.value.TokenHash, tokenHash) })
		if i < 0 || !named(v.holders[i]) {
			return -1, fmt.Errorf("the token is not the holder's: %w", gateway.ErrNotLeader)
		}
		return i, nil
	case from != "":
		i := slices.IndexFunc(v.holders, named)
		if i < 0 {
			return -1, fmt.Errorf("%q: %w", from, gateway.ErrNotLeader)
		}
		return i, nil
	case k == 1:
		return 0, nil
	}
	ids := make([]string, k)
	for i, x := range v.holders {
		ids[i] = x.value.ID
	}
	return -1, &gateway.ValidationError{Field: "from", Reason: fmt.Sprintf("%d candidates hold %q (%s): name the one that should hand over", k, v.name, strings.Join(ids, ", "))}
}

// transferTxn is the transaction that writes a transfer of the holdership
// of v.holders[h] to v.line[i] into the lead record. It is guarded by the
// lead record, the target's key and the holder's key: a holder's expiry
// does not touch the lead record, and a transfer written after it would
// be pending with nobody holding, never announced by a leader.transfer.
func (b *Backend) transferTxn(v view, h, i int, now time.Time) ([]clientv3.Cmp, []clientv3.Op) {
	x, from := v.line[i], v.holders[h]
	lead := v.lead.clone()
	lead.Transfer, lead.At = &leadTransfer{To: x.value.ID, Key: x.hex, Reason: gateway.ReasonTransferred, At: now, From: from.value.ID, FromTerm: v.held[h].Term}, now
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, from)), "=", from.create),
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
	}, b.putLead(v, lead)
}

// CancelTransfer implements gateway.Transferer. It writes the lead record
// without its transfer, guarded by the record's mod revision, which every
// write that ends or hands over a holdership also changes: a handover, a
// resignation or a reconciler acting on an expiry that commits first makes
// this transaction fail (and the next attempt finds no transfer to
// cancel), and one that comes after finds none to complete. It changes no
// holdership (the lead record keeps the same slots and terms) and moves
// no key; followers the reconcilers already moved behind the target stay
// there. See gateway.Record.CancelTransfer for why that cannot make more
// holders act. Errors: gateway.ErrElectionNotFound, gateway.ErrNoTransfer,
// gateway.ErrNotLeader, gateway.ErrPreempting, gateway.ErrUnavailable.
func (b *Backend) CancelTransfer(ctx context.Context, election, tokenHash string) (gateway.Election, error) {
	op := fmt.Sprintf("cancel the transfer of %q", election)
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, err)
		}
		v, _, err := b.current(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		switch {
		case !v.exists:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrElectionNotFound)
		case v.transfer == nil || v.from < 0:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrNoTransfer)
		case tokenHash != "" && (v.holders[v.from].native || !gateway.TokenMatches(v.holders[v.from].value.TokenHash, tokenHash)):
			return gateway.Election{}, fmt.Errorf("etcd: %s: the token is not the holder's: %w", op, gateway.ErrNotLeader)
		case v.transfer.Reason == gateway.ReasonPreempted && v.settings.Preempt:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrPreempting)
		}
		lead := v.lead.clone()
		lead.Transfer, lead.At = nil, time.Now()
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod)).
			Then(b.putLead(v, lead)...).
			Commit()
		cancel()
		if err != nil {
			return gateway.Election{}, translate(ctx, op, err)
		}
		if !resp.Succeeded {
			continue // the election moved: read it again
		}
		if err := b.waitApplied(ctx, resp.Header.Revision); err != nil {
			return gateway.Election{}, err
		}
		// What the cancelled transfer held back (a free slot its target
		// waited beside, a preemption) starts now, as
		// gateway.Record.CancelTransfer starts it: the answer shows it.
		b.reconcileBeforeAnswer(ctx, "cancel transfer", election)
		v, cursor, err := b.cached(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		return b.snapshot(v, cursor, b.now()), nil
	}
}

// Handover implements gateway.Transferer. While followers stand between
// the holders and the target, it moves them behind the target one by one
// (as the reconcilers do, see plan); then one transaction, guarded by the
// lead record's mod revision and by both keys, moves the holder's key to
// the back of the line, so that the target's key is the first behind the
// other holders, and writes the lead record with the target's holdership
// in place of the holder's. Its term is its key's create revision, later
// than every holder's: the target was behind them (or, for a holder that
// lowering the setting ended, the revision of the write: see leadValue).
// The target holds at once only while a slot is free without the
// caller's (fewer than the setting taken besides it: a lower setting may
// leave more) and it may hold (a native target only as the head of the
// line); otherwise the transaction ends the caller's holdership alone and
// the target takes the next slot that frees (leadTransfer.Handed), as
// gateway.Record.Handover promotes it only while fewer than the limit are
// taken.
//
// Why this cannot make more holders act: the caller stopped acting before
// it called, and the transaction that begins the target's holdership ends
// the caller's, so the slots taken stay as many, and no more than the
// setting: it begins one only when, without the caller's, fewer are taken. At its revision the
// holders are still the head of the line (the target was the first behind
// them, the caller's key goes to the back), and the oldest key of the
// line, which native concurrency.Election clients take for the leader, is
// still elector's longest-standing holder: the same one, or, when the
// caller was it, the next holder (the target when the caller held alone).
// No native key is moved or overtaken: the keys moved are elector's, all
// ahead of the target, and the transfer is refused when a native key
// stands among them. Errors: as Heartbeat, and gateway.ErrNotLeader,
// gateway.ErrNoTransfer, gateway.ErrTransferBlocked.
func (b *Backend) Handover(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	op := fmt.Sprintf("handover %q", id)
	for attempt := 0; attempt < gateway.Conflicts.Attempts; {
		v, x, cooling, err := b.owned(ctx, "handover", election, id, tokenHash, true)
		if err != nil {
			return gateway.Status{}, err
		}
		h := v.holderOf(x)
		if cooling || h < 0 {
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrNotLeader)
		}
		if v.transfer == nil || v.from != h {
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrNoTransfer)
		}
		if err := blocked(v, h, v.target); err != nil {
			return gateway.Status{}, err
		}
		leadIs := clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod)
		now := time.Now()
		target := v.line[v.target]
		var a action
		// A native target holds only as the head (see view): behind
		// another holder it takes a slot once it is the head.
		free := v.taken(b.mono.now())-1 < v.settings.HolderLimit() && (!target.native || len(v.holders) == 1)
		switch {
		case v.target > len(v.holders):
			a = b.moveTargetUp(v)
		case free:
			cmps, ops := b.moveBack(election, x, true, now)
			l := v.lead.clone()
			s := v.held[h]
			l.drop(s.Term)
			l.Previous, l.PreviousEnd, l.Transfer, l.At = s.ref(), v.transfer.Reason, nil, now
			l.acknowledge(target, now)
			a = action{what: "hand over",
				cmps: append(append(cmps, leadIs), b.acknowledged(v, target)...),
				ops:  append(ops, b.putLead(v, l)...)}
		default:
			// No slot free without the holder's (the holders were lowered
			// below the slots taken), or a native target that would not be
			// the head: the holdership ends, and its target takes the next
			// slot that frees once it may hold (leadTransfer.Handed). The
			// keys ahead of a native target stay until then (see moveUp).
			var ops []clientv3.Op
			cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, x)), "=", x.create)}
			if !target.native {
				cmps, ops = b.moveBack(election, x, true, now)
			}
			l := v.lead.clone()
			s := v.held[h]
			l.drop(s.Term)
			t := *v.transfer
			t.Handed = true
			l.Previous, l.PreviousEnd, l.Transfer, l.At = s.ref(), t.Reason, &t, now
			a = action{what: "hand over, no slot free",
				cmps: append(cmps, leadIs, clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, target)), "=", target.create)),
				ops:  append(ops, b.putLead(v, l)...)}
		}
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).If(a.cmps...).Then(a.ops...).Commit()
		cancel()
		switch {
		case leaseGone(err) || (err == nil && !resp.Succeeded):
			attempt++ // the election moved (or a moved key's lease just expired): read it again
			if err := gateway.Conflicts.Pause(ctx, attempt); err != nil {
				return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, err)
			}
			continue
		case err != nil:
			return gateway.Status{}, translate(ctx, op, err)
		}
		if err := b.waitApplied(ctx, resp.Header.Revision); err != nil {
			return gateway.Status{}, err
		}
		if v.target == len(v.holders) {
			b.reconcileBeforeAnswer(ctx, "handover", election) // a preemption of the new holder
			return b.status(ctx, "handover", election, id, tokenHash)
		}
	}
	return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.Conflicts.Exhausted())
}

// blocked returns a *gateway.TransferBlockedError if the holdership of
// v.holders[h] cannot go to line[i]: the holder is a native client
// (elector cannot ask it to hand over), or a native key stands between
// the holders and line[i] (elector cannot move it, and skipping it would
// make the native client wait behind a holder it cannot see).
func blocked(v view, h, i int) error {
	to := v.line[i].value.ID
	if h >= 0 {
		if l := v.holders[h]; l.native {
			return &gateway.TransferBlockedError{Election: v.name, To: to, Reason: fmt.Sprintf("the holder %q is a native etcd client, which elector cannot ask to hand over", l.value.ID)}
		}
	}
	for _, x := range v.line[len(v.holders):i] {
		if x.native {
			return &gateway.TransferBlockedError{Election: v.name, To: to, Reason: fmt.Sprintf("the native etcd candidate %q (key %s) stands ahead of it in line, and elector cannot move a native client's key; transfer to a candidate ahead of %q, or have it resign first", x.value.ID, x.name, x.value.ID)}
		}
	}
	return nil
}

// moveBack returns the comparisons and operations that move the elector
// candidacy key of x to the back of the line: it is deleted and put again
// under its other name (movedName), on its lease, with its value, so it
// gets a new create revision; rejoined stamps it as joining the line now.
// The comparisons hold only while the key is still where the caller saw
// it and its other name is free. Callers never pass a native key: elector
// never moves those.
//
// A transaction moves one key, never more: keys written in one
// transaction share its revision, and two keys of a line with the same
// create revision would have no order and, one after the other, the same
// term.
func (b *Backend) moveBack(election string, x *entry, rejoined bool, now time.Time) ([]clientv3.Cmp, []clientv3.Op) {
	next := b.keys.candidacy(election, movedName(x.name, x.hex))
	val := x.value
	if rejoined {
		val.At, val.Rank = now, nil // a new arrival: its new key's revision ranks it
	} else {
		r := x.rank() // making way: it keeps its place among its priority
		val.Rank = &r
	}
	// The deletion first: a watcher applying the revision in order sees the
	// key leave its old name before it appears under the new one.
	return []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, x)), "=", x.create),
			clientv3.Compare(clientv3.CreateRevision(next), "=", 0),
		}, []clientv3.Op{
			clientv3.OpDelete(b.keyOf(election, x)),
			clientv3.OpPut(next, mustJSON(val), clientv3.WithLease(clientv3.LeaseID(x.lease))),
		}
}

// moveAction is the action that moves candidate x of v to the back of the
// line, with the further comparisons more. When x is not the head of v's
// line, the action also requires that head to be still there, so that x
// is still not the head when it moves (the head can change without a
// write of the lead record: an expiry): moving a follower changes no
// leadership, as elector's leader is named by the lead record and native
// clients lead only at the head.
func (b *Backend) moveAction(v view, x *entry, what string, more ...clientv3.Cmp) action {
	return b.moveActionAs(v, x, false, time.Time{}, what, more...)
}

// moveActionAs is moveAction, moving x as a new arrival (rejoined, at now:
// it loses its rank) or only to make way.
func (b *Backend) moveActionAs(v view, x *entry, rejoined bool, now time.Time, what string, more ...clientv3.Cmp) action {
	cmps, ops := b.moveBack(v.name, x, rejoined, now)
	if h := v.line[0]; h != x {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, h)), "=", h.create))
	}
	return action{what: what, cmps: append(cmps, more...), ops: ops}
}

// moveTargetUp is the action that moves the first key behind the holders
// (ahead of the target of v's transfer) behind the target: line[1] while
// one holder holds, line[0] once the holdership the transfer replaces
// went and nobody holds. It requires the lead record (as v saw it) and
// the target's key: with the target gone, the move would send a candidate
// back for no transfer, and could make a native key that stood behind the
// target the oldest of the line.
func (b *Backend) moveTargetUp(v view) action {
	x, t := v.line[len(v.holders)], v.line[v.target]
	// The holder that handed over to a native target while no slot was
	// free kept its key where it held: it goes back now as it would have
	// at the handover, a new arrival behind the followers of its priority
	// (gateway.Record's Handover). Any other key only makes way.
	old := v.transfer.Handed && v.lead.slot(v.transfer.FromTerm) == nil && v.transfer.From == x.value.ID && !x.native
	return b.moveActionAs(v, x, old, time.Now(), "move the transfer's target up",
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, t)), "=", t.create))
}

// keyOf is the candidacy key of x, as it is named now.
func (b *Backend) keyOf(election string, x *entry) string {
	return b.keys.candidacy(election, x.name)
}

// leaseGone reports whether a transaction failed because a lease it puts
// a key on has expired: the key is about to go, and the caller reads the
// election again.
func leaseGone(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound)
}

// handoverDue returns a *gateway.TransferPendingError if candidate id
// holds in election in the cache as it is and a transfer of its
// holdership is pending.
func (b *Backend) handoverDue(ctx context.Context, election, id string) error {
	var err error
	if rerr := b.readCache(ctx, func(s *state) {
		if st, ok := s.standing(election, id); ok && st.own != nil && st.transfer != nil && st.transfer.FromTerm == st.own.Term {
			err = &gateway.TransferPendingError{Election: election, Transfer: *st.transfer.gateway()}
		}
	}); rerr != nil {
		return rerr
	}
	return err
}

// reorder returns the next action that orders the line by priority, or
// false when it is in order. Only the elector candidates behind the
// holders and behind the last native key are moved (see reorderFrom).
// The order is by priority, then by rank (entry.rank: arrival, or the
// place a move kept). Each action moves one key to the back: the first of
// those that stand out of that order, keeping its rank, so that the next
// action, planned from the line it left, moves the next, and successive
// actions leave the line in order. It checks that no key joined the line
// since v, which would make a moved key overtake it.
func (b *Backend) reorder(v view) (action, bool) {
	from := reorderFrom(v)
	if from >= len(v.line) {
		return action{}, false
	}
	s := v.line[from:]
	want := slices.Clone(s)
	slices.SortStableFunc(want, func(a, b *entry) int {
		if c := cmp.Compare(b.priority(), a.priority()); c != 0 {
			return c
		}
		return cmp.Compare(a.rank(), b.rank())
	})
	// The longest prefix of want that already stands in s in that order
	// stays; the rest moves behind it.
	pos := func(x *entry) int { return slices.Index(s, x) }
	k := 0
	for k < len(want) && (k == 0 || pos(want[k]) > pos(want[k-1])) {
		k++
	}
	if k == len(want) {
		return action{}, false
	}
	var newest int64
	for _, x := range v.line {
		newest = max(newest, x.create)
	}
	// Guarded by the lead record too: a holdership that changed since v
	// (a resignation, a handover, an acknowledgement) may have made
	// want[k] a holder or the head.
	return b.moveAction(v, want[k], "order the line by priority",
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.CreateRevision(b.keys.line(v.name)), "<", newest+1).WithPrefix()), true
}

// reorderFrom is the index in v's line of the first key reorder may move.
// Holders keep their places whatever their priority, and a native client's
// key keeps its place and counts as priority 0. While nobody holds (a
// handover delay, a failed holder's hold, the moment before the
// reconcilers acknowledge the head) the head of the line is a follower
// like the others, and the line is put in priority order before anybody
// is acknowledged (fill), as gateway.Record keeps it: else the candidate at
// the head would hold before one of higher priority that joined or
// rejoined behind it. While a transfer is pending, its target and the
// keys ahead of it stay too (plan moves those).
func reorderFrom(v view) int {
	from := len(v.holders)
	for i, x := range v.line {
		if x.native {
			from = max(from, i+1)
		}
	}
	if v.transfer != nil {
		from = max(from, v.target+1)
	}
	return from
}

// preempt returns the action that starts a transfer (reason preempted)
// when the election preempts, every slot is held, and the first follower
// (which, once the line is in order, is the follower of highest priority
// that the line lets through) has a higher priority than the holder of
// lowest priority (the newest of equals; native holders, which elector
// cannot ask, aside). A pending preemption moves to a follower of higher
// priority than its target, as gateway.Record's does (moveUp then brings
// it up), from the same holder while its holdership is open; a transfer an
// operator asked for is left alone. Like Transfer, it changes no
// holdership by itself.
func (b *Backend) preempt(v view, now time.Time) (action, bool) {
	k := len(v.holders)
	if !v.settings.Preempt || k == 0 || k < v.settings.HolderLimit() || len(v.line) <= k {
		return action{}, false
	}
	h := v.from
	if v.transfer == nil || h < 0 {
		h = -1
		for i, x := range v.holders {
			if !x.native && (h < 0 || x.priority() <= v.holders[h].priority()) {
				h = i
			}
		}
	}
	x := v.line[k]
	if t := v.transfer; t != nil {
		if t.Reason != gateway.ReasonPreempted {
			return action{}, false
		}
		// The target stands first behind the holders once moved up, and
		// the keys behind it are ordered behind it (reorder): the
		// follower to preempt for is the first of highest priority from
		// it on, up to a native key.
		for _, y := range v.line[k+1:] {
			if y.native {
				break // a native key keeps its place: nobody behind it can go ahead
			}
			if y.priority() > x.priority() {
				x = y
			}
		}
		if t.Key == x.hex {
			return action{}, false
		}
	}
	if h < 0 || x.priority() <= v.holders[h].priority() {
		return action{}, false
	}
	l, from := v.lead.clone(), v.holders[h]
	l.Transfer, l.At = &leadTransfer{To: x.value.ID, Key: x.hex, Reason: gateway.ReasonPreempted, At: now, From: from.value.ID, FromTerm: v.held[h].Term}, now
	return action{what: "preempt",
		cmps: []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, from)), "=", from.create), // still holding: see Transfer
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
		},
		ops: b.putLead(v, l)}, true
}
