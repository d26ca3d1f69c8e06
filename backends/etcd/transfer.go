package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.Transferer = (*Backend)(nil)

// Transfer implements gateway.Transferer. It writes the transfer into the
// lead record (guarded by the record's mod revision and the target's
// key), which changes no leadership: from then on every replica refuses
// the leader's heartbeats (see Heartbeat) until it hands over, resigns,
// errs or expires. Meanwhile the reconcilers move the followers between
// the leader and the target behind the target (see plan); whoever ends
// the leadership then makes the target the leader in the transaction that
// makes it the head of the line (a resignation or an error before the
// target is next cancels the transfer instead). Errors:
// gateway.ErrElectionNotFound, gateway.ErrNoLeader, gateway.ErrNotLeader,
// gateway.ErrNotFollower, gateway.ErrTransferPending (to another target),
// gateway.ErrTransferBlocked (a native candidate stands between the leader
// and the target, or the leader is native), gateway.ErrUnavailable.
func (b *Backend) Transfer(ctx context.Context, election, to, tokenHash string) (gateway.Election, error) {
	op := fmt.Sprintf("transfer %q to %q", election, to)
	for range maxAttempts {
		v, cursor, err := b.current(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		switch {
		case !v.exists:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrElectionNotFound)
		case v.leader == nil:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrNoLeader)
		case tokenHash != "" && (v.leader.native || !gateway.TokenMatches(v.leader.value.TokenHash, tokenHash)):
			return gateway.Election{}, fmt.Errorf("etcd: %s: the token is not the leader's: %w", op, gateway.ErrNotLeader)
		}
		i := slices.IndexFunc(v.line, func(x *entry) bool { return x.value.ID == to })
		if i < 1 {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrNotFollower)
		}
		if t := v.transfer; t != nil {
			if t.Key == v.line[i].hex {
				return b.snapshot(v, cursor, b.now()), nil
			}
			return gateway.Election{}, &gateway.TransferPendingError{Election: election, Transfer: *t.gateway()}
		}
		if err := blocked(v, i); err != nil {
			return gateway.Election{}, err
		}
		cmps, ops := b.transferTxn(v, i, time.Now())
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
		// pass, so that a leader that resigns right away hands over to it.
		b.reconcileBeforeAnswer(ctx, "transfer", election)
		v, cursor, err = b.cached(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		return b.snapshot(v, cursor, b.now()), nil
	}
	return gateway.Election{}, fmt.Errorf("etcd: %s: the election kept changing: %w", op, gateway.ErrUnavailable)
}

// transferTxn is the transaction that writes a transfer of v's leadership
// to v.line[i] into the lead record. It is guarded by the lead record, the
// target's key and the leader's key: a leader's expiry does not touch the
// lead record, and a transfer written after it would be pending with
// nobody leading, never announced by a leader.transfer.
func (b *Backend) transferTxn(v view, i int, now time.Time) ([]clientv3.Cmp, []clientv3.Op) {
	x := v.line[i]
	lead := *v.lead
	lead.Transfer, lead.At = &leadTransfer{To: x.value.ID, Key: x.hex, Reason: gateway.ReasonTransferred, At: now}, now
	return []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, v.leader)), "=", v.leader.create),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
		}, []clientv3.Op{
			clientv3.OpPut(b.keys.lead(v.name), mustJSON(lead)),
		}
}

// CancelTransfer implements gateway.Transferer. It writes the lead record
// without its transfer, guarded by the record's mod revision, which every
// write that ends or hands over a leadership also changes: a handover, a
// resignation or a reconciler acting on an expiry that commits first makes
// this transaction fail (and the next attempt finds no transfer to
// cancel), and one that comes after finds none to complete. It changes no
// leadership (the lead record still names the same leader and term) and
// moves no key; followers the reconcilers already moved behind the target
// stay there. See gateway.Record.CancelTransfer for why that cannot make
// two leaders. Errors: gateway.ErrElectionNotFound, gateway.ErrNoTransfer,
// gateway.ErrNotLeader, gateway.ErrPreempting, gateway.ErrUnavailable.
func (b *Backend) CancelTransfer(ctx context.Context, election, tokenHash string) (gateway.Election, error) {
	op := fmt.Sprintf("cancel the transfer of %q", election)
	for range maxAttempts {
		v, _, err := b.current(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		switch {
		case !v.exists:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrElectionNotFound)
		case v.transfer == nil || v.leader == nil:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrNoTransfer)
		case tokenHash != "" && (v.leader.native || !gateway.TokenMatches(v.leader.value.TokenHash, tokenHash)):
			return gateway.Election{}, fmt.Errorf("etcd: %s: the token is not the leader's: %w", op, gateway.ErrNotLeader)
		case v.transfer.Reason == gateway.ReasonPreempted && v.settings.Preempt:
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrPreempting)
		}
		lead := *v.lead
		lead.Transfer, lead.At = nil, time.Now()
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod)).
			Then(clientv3.OpPut(b.keys.lead(election), mustJSON(lead))).
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
		v, cursor, err := b.cached(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		return b.snapshot(v, cursor, b.now()), nil
	}
	return gateway.Election{}, fmt.Errorf("etcd: %s: the election kept changing: %w", op, gateway.ErrUnavailable)
}

// Handover implements gateway.Transferer. While followers stand between
// the leader and the target, it moves them behind the target one by one
// (as the reconcilers do, see plan); then one transaction, guarded
// by the lead record's mod revision and by both keys, moves the leader's
// key to the back of the line, so that the target's key is the oldest,
// and writes the lead record naming the target. Its term is its key's
// create revision, larger than the old leader's: the target was behind it.
//
// Why this cannot make two leaders: the caller stopped acting before it
// called, and at the revision of the transaction the target's key is the
// oldest of the line, which is what both elector's view (the lead record
// names the head) and native concurrency.Election clients (the oldest key
// leads) take for the leader. No native key is moved or overtaken: the
// keys moved are elector's, all ahead of the target, and the transfer is
// refused when a native key stands among them. Errors: as Heartbeat, and
// gateway.ErrNotLeader, gateway.ErrNoTransfer, gateway.ErrTransferBlocked.
func (b *Backend) Handover(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	op := fmt.Sprintf("handover %q", id)
	for attempt := 0; attempt < maxAttempts; {
		v, x, cooling, err := b.owned(ctx, "handover", election, id, tokenHash, true)
		if err != nil {
			return gateway.Status{}, err
		}
		if cooling || x != v.leader {
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrNotLeader)
		}
		if v.transfer == nil {
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrNoTransfer)
		}
		if err := blocked(v, v.target); err != nil {
			return gateway.Status{}, err
		}
		leadIs := clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod)
		now := time.Now()
		target := v.line[v.target]
		var a action
		if v.target > 1 {
			a = b.moveTargetUp(v, leadIs)
		} else {
			cmps, ops := b.moveBack(election, x, true, now)
			prev := &gateway.TermRef{ID: x.value.ID, Term: v.term}
			a = action{what: "hand over",
				cmps: append(cmps, leadIs, clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, target)), "=", target.create)),
				ops:  append(ops, clientv3.OpPut(b.keys.lead(election), mustJSON(acknowledge(target, prev, v.transfer.Reason, now))))}
		}
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).If(a.cmps...).Then(a.ops...).Commit()
		cancel()
		switch {
		case leaseGone(err) || (err == nil && !resp.Succeeded):
			attempt++ // the election moved (or a moved key's lease just expired): read it again
			continue
		case err != nil:
			return gateway.Status{}, translate(ctx, op, err)
		}
		if err := b.waitApplied(ctx, resp.Header.Revision); err != nil {
			return gateway.Status{}, err
		}
		if v.target == 1 {
			b.reconcileBeforeAnswer(ctx, "handover", election) // a preemption of the new leader
			return b.status(ctx, "handover", election, id, tokenHash)
		}
	}
	return gateway.Status{}, fmt.Errorf("etcd: %s in %q: the election kept changing: %w", op, election, gateway.ErrUnavailable)
}

// blocked returns a *gateway.TransferBlockedError if the leadership of v
// cannot go to line[i]: the leader is a native client (elector cannot ask
// it to hand over), a native key stands between it and line[i] (elector
// cannot move it, and skipping it would make the native client wait
// behind a leader it cannot see).
func blocked(v view, i int) error {
	to := v.line[i].value.ID
	if l := v.line[0]; l.native {
		return &gateway.TransferBlockedError{Election: v.name, To: to, Reason: fmt.Sprintf("the leader %q is a native etcd client, which elector cannot ask to hand over", l.value.ID)}
	}
	for _, x := range v.line[1:i] {
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
		val.At = now
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
	cmps, ops := b.moveBack(v.name, x, false, time.Time{})
	if h := v.line[0]; h != x {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, h)), "=", h.create))
	}
	return action{what: what, cmps: append(cmps, more...), ops: ops}
}

// moveTargetUp is the action that moves the first key ahead of the
// target of v's transfer behind it: line[1] while a leader leads, line[0]
// once the leader expired (nobody leads). It requires the lead record (as
// leadIs) and the target's key as v saw them: with the target gone, the
// move would send a candidate back for no transfer, and could make a
// native key that stood behind the target the oldest of the line.
func (b *Backend) moveTargetUp(v view, leadIs clientv3.Cmp) action {
	x := v.line[0]
	if v.leader != nil {
		x = v.line[1]
	}
	t := v.line[v.target]
	return b.moveAction(v, x, "move the transfer's target up", leadIs,
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
// leads election in the cache as it is and a transfer is pending.
func (b *Backend) handoverDue(ctx context.Context, election, id string) error {
	var err error
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	if rerr := b.cache.read(rctx, func(s *state) {
		if st, ok := s.standing(election, id); ok && st.leader != nil && st.leader == st.x && st.transfer != nil {
			err = &gateway.TransferPendingError{Election: election, Transfer: *st.transfer.gateway()}
		}
	}); rerr != nil {
		return rerr
	}
	return err
}

// reorder returns the next action that orders the line by priority, or
// false when it is in order. Only the elector candidates behind the last
// native key are moved: a native client's key keeps its place and counts
// as priority 0. The head of the line stays while somebody leads (the
// leader keeps its place; its key moves only for a transfer, see
// moveTargetUp, Handover); while nobody leads (a handover delay, a
// failed leader's hold, the moment before the reconcilers acknowledge
// the head) the head is a follower like the others, and the line is put
// in priority order before anybody is acknowledged (plan), as
// gateway.Record keeps it: else the candidate at the head would lead
// before one of higher priority that joined or rejoined behind it. While
// a transfer is pending, its target and the keys ahead of it stay too
// (plan moves those). Each
// action moves one key to the back: the first of those that must go
// behind a candidate of higher priority, in priority order, so that
// successive actions leave the line in order. It checks that no key
// joined the line since v, which would make a moved key overtake it.
func (b *Backend) reorder(v view) (action, bool) {
	from := 1
	if v.leader == nil && v.transfer == nil {
		from = 0
	}
	for i, x := range v.line {
		if x.native {
			from = max(from, i+1)
		}
	}
	if v.transfer != nil {
		from = max(from, v.target+1)
	}
	if from >= len(v.line) {
		return action{}, false
	}
	s := v.line[from:]
	want := slices.Clone(s)
	slices.SortStableFunc(want, func(a, b *entry) int { return b.priority() - a.priority() })
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
	// Guarded by the lead record too: a leadership that changed since v
	// (a resignation, a handover) may have made want[k] the head.
	return b.moveAction(v, want[k], "order the line by priority",
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.CreateRevision(b.keys.line(v.name)), "<", newest+1).WithPrefix()), true
}
