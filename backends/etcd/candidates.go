package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// revoke ends the lease of a candidacy that nothing needs any more
// (resigned, expired after its promise), unless
// it is a session's: a session's lease is shared by all its candidacies
// and ends only with the session (CloseSession, or its expiry), so a
// candidacy on it is ended by deleting its keys alone. The cache tells:
// it holds a session's key from before any candidacy on its lease was
// created until the lease ends, so a cache that held the candidacy holds
// the key now, or the lease is gone. A cache that cannot be read leaves
// the lease to expire. A worker revokes after the caller's answer; when
// it is behind, the lease is left to expire.
func (b *Backend) revoke(id clientv3.LeaseID) {
	shared := true
	_ = b.readCache(context.Background(), func(st *state) { shared = st.sessionLeases[int64(id)] != nil })
	if shared {
		return
	}
	b.revokeOwn(id)
}

// revokeOwn ends a lease that only the caller used (a timer's marker, a
// pooled lease, a record of a revocation, the lease of a campaign that
// failed): never one a session may share, which revoke ends.
func (b *Backend) revokeOwn(id clientv3.LeaseID) {
	b.leases.forget(int64(id))
	select {
	case b.revokes <- id:
	default:
	}
}

// Pauses between the attempts at a revocation that etcd did not answer.
const (
	revokeRetryFirst = 100 * time.Millisecond
	revokeRetryMax   = 5 * time.Second
)

// revoker revokes the leases queued by revoke until ctx ends. A
// revocation that fails for want of etcd (not because the lease is gone)
// is tried again, after pauses that grow to revokeRetryMax, until etcd
// revokes the lease or says it no longer exists, which it does at the
// latest once the lease's TTL has run out without keep-alives. Without
// this, a candidacy whose campaign failed with an unknown outcome while
// etcd was unreachable (its transaction may have applied: see Campaign)
// stayed in line, perhaps holding, its whole TTL after etcd answered
// again, and its candidate, retrying, was told that it exists. At most
// cap(revokes) revocations wait to be tried again; past that, a lease is
// left to its TTL.
func (b *Backend) revoker(ctx context.Context) {
	type retry struct {
		id    clientv3.LeaseID
		at    time.Time
		pause time.Duration
	}
	var again []retry
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// attempt tries r and reports whether etcd answered.
	attempt := func(r retry) bool {
		rctx, cancel := b.reqCtx(ctx)
		_, err := b.cli.Revoke(rctx, r.id)
		cancel()
		if err == nil || leaseGone(err) || ctx.Err() != nil {
			return true
		}
		b.revokeFails.Add(1)
		if len(again) < cap(b.revokes) {
			r.at = time.Now().Add(r.pause)
			r.pause = min(2*r.pause, revokeRetryMax)
			again = append(again, r)
		}
		return false
	}
	for {
		next := time.Hour
		for _, r := range again {
			next = min(next, time.Until(r.at))
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case id := <-b.revokes:
			attempt(retry{id: id, pause: revokeRetryFirst})
		case <-timer.C:
			// The due ones in turn, while etcd answers: after a failure
			// the others wait for the next round rather than each wait
			// out a request timeout of its own.
			now := time.Now()
			waiting := again
			again = nil
			answering := true
			for _, r := range waiting {
				switch {
				case r.at.After(now):
					again = append(again, r)
				case !answering:
					r.at = time.Now().Add(r.pause)
					again = append(again, r)
				default:
					answering = attempt(r)
				}
			}
		}
	}
}

// owned finds an elector candidate and checks its token. With fresh set
// it reads the cache once it reflects every acknowledged write (see
// Backend.fresh); otherwise it first looks in the cache as it is, and only
// when the candidate is missing there or its token differs looks again
// freshly (the candidate may have campaigned through another replica a
// moment ago).
func (b *Backend) owned(ctx context.Context, op, election, id, tokenHash string, fresh bool) (view, *entry, bool, error) {
	for attempt := 0; ; attempt++ {
		var (
			v   view
			err error
		)
		if fresh || attempt > 0 {
			v, _, err = b.current(ctx, election)
		} else {
			v, _, err = b.cached(ctx, election)
		}
		if err != nil {
			return view{}, nil, false, err
		}
		x, cooling, ok := v.find(id)
		switch {
		case !ok && (fresh || attempt > 0):
			return view{}, nil, false, b.notFound(ctx, fmt.Errorf("etcd: %s %q: %w", op, id, gateway.ErrCandidateNotFound), election, id, tokenHash)
		case ok && gateway.TokenMatches(x.value.TokenHash, tokenHash):
			return v, x, cooling, nil
		case ok && (fresh || attempt > 0):
			return view{}, nil, false, fmt.Errorf("etcd: %s %q: %w", op, id, gateway.ErrTokenMismatch)
		}
	}
}

// Heartbeat implements gateway.Backend: a keep-alive of the candidate's
// lease, and an answer as fresh as a linearizable read. A follower's
// heartbeat fetches the read index when it arrives, beside the keep-alive,
// and the answer waits until the cache has caught up with it; so a holder
// deposed through any replica before the heartbeat arrived (an error
// report, a resignation, an expiry, a lower holders setting) is never told
// that it still holds. A holder's heartbeat writes the promise of its
// holdership beside the keep-alive instead (promise.go), a write whose
// revision is as fresh, and answers "leader" only once that write
// succeeded: a follower promoted meanwhile is promised before it is
// told. The answer is found without deriving the whole election, so a
// heartbeat costs the same with 3 candidates as with 1,000. A candidacy in
// a session shares its lease with the session's others: its keep-alive
// renews them all, so it writes the promise of each of them that holds
// (promiseSession), as KeepSession does. Errors: gateway.ErrCandidateNotFound (unknown, or its lease
// expired; a *gateway.CandidacyRevokedError when etcd revoked it early,
// see revoked.go), gateway.ErrTokenMismatch, gateway.ErrUnavailable.
func (b *Backend) Heartbeat(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	op := fmt.Sprintf("heartbeat %q", id)
	x, leads, err := b.find(ctx, election, id)
	if err != nil {
		return gateway.Status{}, err
	}
	hctx, cancel := context.WithCancel(ctx)
	var caught *catching
	defer func() {
		cancel()
		if caught != nil {
			_ = caught.wait()
		}
	}()
	if x == nil || !gateway.TokenMatches(x.value.TokenHash, tokenHash) {
		// Not in the cache as it was: look again once it has caught up.
		caught = b.startFresh(hctx)
		if err := caught.wait(); err != nil {
			return gateway.Status{}, err
		}
		if x, leads, err = b.find(ctx, election, id); err != nil {
			return gateway.Status{}, err
		}
		if x == nil {
			return gateway.Status{}, b.notFound(ctx, fmt.Errorf("etcd: %s: %w", op, gateway.ErrCandidateNotFound), election, id, tokenHash)
		}
		if !gateway.TokenMatches(x.value.TokenHash, tokenHash) {
			return gateway.Status{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrTokenMismatch)
		}
	}
	// A holder asked to hand over is refused before its lease is kept
	// alive, so its life runs out unless it hands over (see
	// gateway.Record.HandoverDue). A transfer this replica has not seen yet
	// lets one keep-alive through: the holder's life, and its step-down
	// deadline, then end a TTL later, and the answer below still refuses.
	if err := b.handoverDue(ctx, election, id); err != nil {
		return gateway.Status{}, err
	}
	shared, err := b.sessionLease(ctx, x.lease)
	if err != nil {
		return gateway.Status{}, err
	}
	var (
		promised uint64
		perr     error
		wg       sync.WaitGroup
	)
	switch {
	case shared:
		// A session's lease: this keep-alive renews every candidacy of
		// the session, so it promises each that holds (this one too),
		// from a cache as fresh as a follower's answer.
		wg.Go(func() {
			var terms map[string]uint64
			terms, perr = b.promiseSession(hctx, x.lease)
			promised = terms[election]
		})
	case leads:
		wg.Go(func() { promised, perr = b.promise(hctx, election, id) })
	case caught == nil:
		caught = b.startFresh(hctx)
	}
	rctx, rcancel := b.reqCtx(ctx)
	sent := time.Now() // etcd renews the lease after this: the book's expiry is never later than etcd's
	ka, err := b.cli.KeepAliveOnce(rctx, clientv3.LeaseID(x.lease))
	rcancel()
	wg.Wait()
	if err != nil {
		err = translate(ctx, op, err)
		if errors.Is(err, gateway.ErrCandidateNotFound) && b.fresh(ctx) == nil {
			// Gone: the cache, now holding its departure, may know that
			// etcd ended it early.
			err = b.notFound(ctx, err, election, id, tokenHash)
		}
		return gateway.Status{}, err
	}
	b.leases.note(x.lease, ka.TTL, ka.TTL, sent)
	if perr != nil {
		return gateway.Status{}, perr
	}
	if caught != nil {
		if err := caught.wait(); err != nil {
			return gateway.Status{}, err
		}
	}
	if err := b.handoverDue(ctx, election, id); err != nil {
		return gateway.Status{}, err
	}
	return b.answer(ctx, election, id, tokenHash, promised)
}

// find returns elector candidate id of election from the cache as it is
// (in line or cooling), or nil, and whether it holds, without deriving the
// election's view.
func (b *Backend) find(ctx context.Context, election, id string) (x *entry, leads bool, err error) {
	err = b.readCache(ctx, func(s *state) {
		if st, ok := s.standing(election, id); ok {
			x, leads = st.x, st.own != nil
		}
	})
	return x, leads, err
}

// catching is a catch-up (Backend.fresh) running beside other work.
type catching struct {
	done chan struct{}
	err  error
}

// startFresh starts fresh(ctx) in a goroutine; the caller must call wait
// before it returns.
func (b *Backend) startFresh(ctx context.Context) *catching {
	c := &catching{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = b.fresh(ctx)
	}()
	return c
}

// wait waits for the catch-up and returns its error. It may be called
// more than once.
func (c *catching) wait() error {
	<-c.done
	return c.err
}

// Resign implements gateway.Backend. One transaction deletes the
// candidate's keys and writes a mark saying it resigned; if it held, the
// same transaction gives its slot to the next in line when it may take it
// (see handOver), so there is no handover delay. The lease is
// revoked afterwards, unless it is a session's (revoke): the session and
// its other candidacies go on. A transaction whose answer does not come succeeds
// when etcd then says the candidacy is gone (candidacyGone). Errors: gateway.ErrCandidateNotFound,
// gateway.ErrTokenMismatch, gateway.ErrUnavailable.
func (b *Backend) Resign(ctx context.Context, election, id, tokenHash string) error {
	x, err := b.remove(ctx, "resign", election, id, tokenHash, gateway.ReasonResigned, "")
	if err != nil {
		return err
	}
	b.revoke(clientv3.LeaseID(x.lease))
	return nil
}

// ReportError implements gateway.Backend. One transaction moves the
// candidate's key from the line to the cooling directory (still on its
// lease, with the end of its cooldown) and writes a mark with the reason;
// if it held, its slot goes to the next in line in the same transaction
// (see handOver). A candidate already cooling restarts its cooldown. A
// reconciler puts it back at the end of the line when the cooldown ends.
// Errors: gateway.ErrCandidateNotFound, gateway.ErrTokenMismatch,
// gateway.ErrUnavailable.
func (b *Backend) ReportError(ctx context.Context, election, id, tokenHash, reason string) (gateway.Status, error) {
	if _, err := b.remove(ctx, "report error", election, id, tokenHash, gateway.ReasonError, reason); err != nil {
		return gateway.Status{}, err
	}
	return b.status(ctx, "report error", election, id, tokenHash)
}

// remove takes a candidate out of the line, for good (resigned) or into
// cooldown (error), retrying while the election moves under it.
func (b *Backend) remove(ctx context.Context, op, election, id, tokenHash, reason, detail string) (*entry, error) {
	return b.removeIf(ctx, op, election, id, tokenHash, reason, detail, false, nil)
}

// removeIf is remove with a precondition on the view it writes over:
// when check returns an error on a fresh read, nothing is written and
// removeIf returns it.
// The transaction compares what the view was read from (the lead record
// among it), so check holds at the revision the removal commits. With
// hold, a holder's slot stays taken until its promise lapses (see
// handOver).
func (b *Backend) removeIf(ctx context.Context, op, election, id, tokenHash, reason, detail string, hold bool, check func(view, *entry) error) (*entry, error) {
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return nil, fmt.Errorf("etcd: %s %q: %w", op, id, err)
		}
		v, x, cooling, err := b.owned(ctx, op, election, id, tokenHash, attempt > 0)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(v, x); err != nil {
				if attempt == 0 {
					continue // the cache as it was may lag: decide on a fresh read
				}
				return nil, err
			}
		}
		now := b.now()
		var marker *clientv3.Op
		var lease clientv3.LeaseID
		if reason == gateway.ReasonError {
			// The cooldown's marker (timers.go), granted before the
			// transaction so that it ends no sooner than a cooldown from now.
			t := timerPut{key: b.keys.cooldownMark(election, x.hex), value: markerValue{Until: now.Add(v.settings.ErrorCooldown)}, ttl: v.settings.ErrorCooldown}
			var put clientv3.Op
			if lease, put, err = b.grantMarker(ctx, t); err != nil {
				return nil, translate(ctx, fmt.Sprintf("%s %q", op, id), err)
			}
			marker = &put
		}
		cmps, ops := b.removeTxn(v, x, cooling, id, reason, detail, hold, now, b.mono.now(), marker)
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if lease != 0 && notApplied(resp, err) {
			b.revokeOwn(lease)
		}
		if lease != 0 && leaseGone(err) {
			// The lease gone may be the marker's, which expired before the
			// transaction arrived, or the candidate's: the next attempt
			// reads the election freshly and tells which.
			continue
		}
		if err != nil && reason == gateway.ReasonResigned && b.candidacyGone(ctx, election, id, v.ids[id].create) {
			// No answer came, but the candidacy is gone: resigned, by
			// this transaction or by its expiry; either way, as asked.
			return x, nil
		}
		if err != nil {
			return nil, translate(ctx, fmt.Sprintf("%s %q", op, id), err)
		}
		if resp.Succeeded {
			if err := b.waitApplied(ctx, resp.Header.Revision); err != nil {
				return x, err
			}
			b.reconcileBeforeAnswer(ctx, op, election)
			return x, nil
		}
		// The election moved: the next attempt reads it freshly.
	}
}

// candidacyGone asks etcd, after a removal whose answer did not come,
// whether the candidacy of id whose id key was created at create is gone
// (its id key absent, or created again since by another campaign). A
// read that fails is no proof: it reports false.
func (b *Backend) candidacyGone(ctx context.Context, election, id string, create int64) bool {
	kv, read := b.idKeyNow(ctx, election, id)
	return read && (kv == nil || kv.CreateRevision != create)
}

// removeTxn returns the transaction that takes candidate x (found in view v
// of its election, in line or cooling) out of the line, for good or into
// cooldown. Its comparisons hold only if the keys it acts on are still as v
// saw them, and, for a candidate in line, only if the lead record is too: v
// may come from a cache that has not yet seen the lead record name x (a
// handover or a reconciler on another replica), and removing a holder
// without handing over would leave its slot as if it had expired (the
// handover delay, a leader.begin saying "expired").
//
// marker, for an error, is the write of the cooldown's marker key
// (timers.go), which the transaction makes with the cooling key; with
// nil the cooling key is not timed and a reconciler gives it a marker.
// hold is handOver's, for a holder; mono the promise clock's time.
func (b *Backend) removeTxn(v view, x *entry, cooling bool, id, reason, detail string, hold bool, now, mono time.Time, marker *clientv3.Op) ([]clientv3.Cmp, []clientv3.Op) {
	election := v.name
	idKey := b.keys.candidateID(election, id)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(idKey), "=", v.ids[id].create)}
	var ops []clientv3.Op
	mark := clientv3.OpPut(b.keys.mark(election), mustJSON(markValue{Key: x.hex, Reason: reason, Detail: detail, At: now}))
	coolKey := b.keys.cooling(election, x.hex)
	cooled := x.value
	cooled.CooldownUntil, cooled.At, cooled.Timed, cooled.Rank = now.Add(v.settings.ErrorCooldown), now, marker != nil, nil
	if marker != nil && reason == gateway.ReasonError {
		ops = append(ops, *marker)
	}
	switch {
	case cooling && reason == gateway.ReasonError:
		// Already cooling: restart the cooldown, nothing else moves.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod))
		ops = append(ops, clientv3.OpPut(coolKey, mustJSON(cooled), clientv3.WithLease(clientv3.LeaseID(x.lease))))
	case cooling:
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod))
		ops = append(ops, clientv3.OpDelete(coolKey), clientv3.OpDelete(idKey), mark)
	default:
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, x)), "=", x.create))
		ops = append(ops, clientv3.OpDelete(b.keyOf(election, x)), mark)
		if reason == gateway.ReasonError {
			ops = append(ops, clientv3.OpPut(coolKey, mustJSON(cooled), clientv3.WithLease(clientv3.LeaseID(x.lease))))
		} else {
			ops = append(ops, clientv3.OpDelete(idKey))
		}
		if i := v.holderOf(x); i >= 0 {
			c, o := b.handOver(v, i, reason, hold, now, mono)
			cmps, ops = append(cmps, c...), append(ops, o...)
		} else {
			// Not a holder as v sees it: only while the lead record is
			// still the one v saw. The target of a pending transfer
			// leaving cancels it, in the same transaction.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod))
			if v.transfer != nil && v.line[v.target] == x {
				l := v.lead.clone()
				l.Transfer, l.At = nil, now
				ops = append(ops, b.putLead(v, l)...)
			}
		}
	}
	return cmps, ops
}

// handOver returns the comparisons and writes that end the holdership of
// v.holders[i] with reason inside the transaction that removes it: its
// slot goes to the first follower at once (whose key must still exist,
// so it is still first), when it may take it (see successor), else it
// frees.
//
// With hold (FailLeader: the gateway's verdict, which the holder may not
// know of yet) the slot is kept, ended "error", and goes to nobody: it is
// taken until the failed holder's promise has lapsed (see promise.go), as
// after an expiry. A pending transfer of that holdership that does not
// complete here stays, "handed": its target is next and takes the next
// slot that frees (fill), as in gateway.Record, which keeps it too.
// Keeping it makes nobody hold sooner: it only says who is next, and fill
// acknowledges the target only into a slot free on this replica's clock,
// which the failed holder's is not until its promise has lapsed.
func (b *Backend) handOver(v view, i int, reason string, hold bool, now, mono time.Time) ([]clientv3.Cmp, []clientv3.Op) {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod)}
	l := v.lead.clone()
	l.At = now
	s := v.held[i]
	l.Previous, l.PreviousEnd = s.ref(), reason
	if hold {
		l.slot(s.Term).Ended = gateway.ReasonError
	} else {
		l.drop(s.Term)
	}
	if t := l.Transfer; t != nil && t.FromTerm == s.Term {
		t.Handed = true // the clone's own (clone copies it)
	}
	if next, completes, ok := v.successor(i, mono); ok && !hold {
		if completes {
			l.Transfer = nil
		}
		cmps = append(cmps, b.acknowledged(v, next)...)
		l.acknowledge(next, now)
	}
	return cmps, b.putLead(v, l)
}

// successor returns the first follower when it takes the slot of
// v.holders[i] in the transaction that ends that holdership on the
// holder's word: a follower waits (a native key holds only as the head,
// and with the slot freed fewer must be taken than the setting on this
// replica's clock), and a pending transfer steers as in fill. A transfer
// of that very holdership completes if its target is first, and is
// cancelled otherwise (the first follower takes the slot). completes is
// set when the transfer ends with it.
func (v view) successor(i int, mono time.Time) (next *entry, completes bool, ok bool) {
	k := len(v.holders)
	if k >= len(v.line) || v.taken(mono)-1 >= v.settings.HolderLimit() {
		return nil, false, false
	}
	next = v.line[k]
	if next.native && k > 1 {
		return nil, false, false // after the holder leaves it stands at k-1, not the head
	}
	t := v.transfer
	switch {
	case t == nil, v.from == i:
		return next, t != nil, true
	case v.from >= 0 && v.target == k:
		return nil, false, false // the target waits for the holdership it replaces
	case v.from >= 0:
		return next, false, true
	case v.target == k || blocked(v, v.from, v.target) != nil:
		return next, true, true // the holdership it replaces went: its target, or a native key ahead of it
	}
	return nil, false, false // the keys ahead of the target move first
}
