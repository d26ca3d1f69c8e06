package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// The holders' promise: how elector keeps the promise of a heartbeat
// answered "leader" (no holdership begins while the holder, with the
// others, may act: a TTL from its sending) when etcd ends the holder's
// lease early. The package doc ("The leader's promise") has the whole
// argument; in short:
//
//   - a holder's heartbeat writes the promise record of its holdership,
//     guarded by the lead record, its key and the promise record's own
//     revision, and answers "leader" only once it is written (promise,
//     answer);
//   - each replica notes on its monotonic clock when it first held a
//     holdership's newest promise or its acknowledgement (estate.promised);
//   - a holdership that ended without the holder asking (an expiry, an
//     early revocation, the gateway's verdict: FailLeader, a lower holders
//     setting) keeps its slot taken until a TTL has passed since
//     (release, plan);
//   - a holder whose promise lapsed is expired by the reconcilers
//     (expireHolder).
//
// A replica holds a promise only after etcd committed it, which is after
// the heartbeat was sent: its "held at + TTL" is never before the
// candidate's own deadline, whatever the replicas' clocks say.

// promiseOf returns what the promise records of holdership term say:
// the longest TTL promised and the latest "at", ok false when there is
// none. A holdership's promises go to one key, but a record that changed
// form (see termName) leaves one in the other.
func (v view) promiseOf(term uint64) (ttl time.Duration, at time.Time, ok bool) {
	for _, p := range v.promises {
		if p.value.Term == term {
			ttl, ok = max(ttl, p.value.ttl()), true
			if p.value.At.After(at) {
				at = p.value.At
			}
		}
	}
	return ttl, at, ok
}

// promiseTTL is the TTL elector promised holdership s: the holder's, from
// the slot or from a promise of its term.
func (v view) promiseTTL(s *slotValue) (time.Duration, bool) {
	ttl := s.ttl()
	if t, _, ok := v.promiseOf(s.Term); ok {
		ttl = max(ttl, t)
	}
	return ttl, ttl > 0
}

// promiseLapses is when, on this replica's monotonic clock, the promise of
// holdership s lapses: a TTL after the replica first held its newest
// promise. Only a cache's views know it.
func (v view) promiseLapses(s *slotValue) (time.Time, bool) {
	ttl, ok := v.promiseTTL(s)
	held, known := v.promised[s.Term]
	if !ok || !known {
		return time.Time{}, false
	}
	return held.Add(ttl), true
}

// promisedEnd is the end of holdership s's promise on the clocks of the
// replicas that wrote it: its acknowledgement ("since") or its latest
// promise, plus its TTL. It is the same on every replica, and is the time
// of the events of a holder's key that etcd removed (see eventTime).
func (v view) promisedEnd(s *slotValue) (time.Time, bool) {
	ttl, ok := v.promiseTTL(s)
	if !ok {
		return time.Time{}, false
	}
	at := s.Since
	if _, p, ok := v.promiseOf(s.Term); ok && p.After(at) {
		at = p
	}
	return at.Add(ttl), true
}

// promiseHolds reports whether the promise of a holdership that ended
// without its holder asking (its key went without a mark, it was
// recorded as expired, the gateway's verdict failed it, or the holders
// were lowered) has not lapsed on this replica's clock at mono, and how
// long the last of them still runs.
func (v view) promiseHolds(mono time.Time) (left time.Duration, held bool) {
	for _, s := range v.idle() {
		if end, ok := v.promiseLapses(s); ok && mono.Before(end) {
			left, held = max(left, end.Sub(mono)), true
		}
	}
	return left, held
}

// expireHolder returns the action that ends the holdership of
// v.holders[i], whose promise lapsed on this replica's clock while etcd
// still holds its key (its lease may be longer: whole seconds, etcd's
// minimum, or a keep-alive whose promise failed). It deletes the holder's
// keys with a mark saying "expired", guarded by the lead record, the
// promise record and the key itself: a heartbeat that promised again
// meanwhile makes it fail, and a heartbeat after it finds the candidate
// gone. The lease is revoked after, unless it is a session's (revoke):
// the holder's keys are gone, the session's other candidacies stay. What
// follows is an expiry like any other: the handover delay, then the next
// holder.
func (b *Backend) expireHolder(v view, i int, now time.Time) action {
	x, s := v.holders[i], v.held[i]
	name := termName(v.lead.list, s.Term)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.ModRevision(b.keys.promiseOf(v.name, name)), "=", v.promises[name].mod),
	}
	ops := []clientv3.Op{
		clientv3.OpDelete(b.keyOf(v.name, x)),
		clientv3.OpPut(b.keys.mark(v.name), mustJSON(markValue{Key: x.hex, Reason: gateway.ReasonExpired, At: now})),
	}
	if ie, ok := v.ids[x.value.ID]; ok && ie.hex == x.hex {
		idKey := b.keys.candidateID(v.name, x.value.ID)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(idKey), "=", ie.create))
		ops = append(ops, clientv3.OpDelete(idKey))
	}
	return action{what: "expire holder after its promise", cmps: cmps, ops: ops, revoke: clientv3.LeaseID(x.lease)}
}

// promise writes the promise of candidate id's holdership of election as
// this replica's cache holds it (see the top of this file) and waits until
// the cache holds the write. It returns the term it promised, or 0 when
// the cache does not show id holding or the guard failed; the cache has
// then caught up with a revision etcd reached after the call. Errors:
// gateway.ErrUnavailable.
func (b *Backend) promise(ctx context.Context, election, id string) (uint64, error) {
	var (
		st standing
		ok bool
	)
	err := b.readCache(ctx, func(s *state) { st, ok = s.standing(election, id) })
	if err != nil {
		return 0, err
	}
	if !ok || st.own == nil {
		// It no longer holds as the cache sees it: the caller answers from
		// the cache, which must then be as fresh as the write would be.
		return 0, b.fresh(ctx)
	}
	x, term := st.x, st.own.Term
	key := b.keys.promiseOf(election, st.promise)
	val := promiseValue{Term: term, Key: x.hex, TTLms: x.value.TTLms, At: b.now()}
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", st.leadMod),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, x)), "=", x.create),
			// The promise key it writes, as every transaction elector
			// commits compares (see Connections): of two attempts of one
			// promise, or of two promises cached alike, one applies.
			clientv3.Compare(clientv3.ModRevision(key), "=", st.promiseMod)).
		Then(clientv3.OpPut(key, mustJSON(val))).
		Commit()
	cancel()
	if err != nil {
		return 0, translate(ctx, fmt.Sprintf("promise %q", id), err)
	}
	if !resp.Succeeded {
		return 0, b.catchUp(ctx, resp.Header.Revision)
	}
	return term, b.waitApplied(ctx, resp.Header.Revision)
}

// answer is a heartbeat's Status from the cache, which the caller has
// brought up to a revision after the heartbeat arrived. A candidate shown
// leading a term that no promise of this heartbeat covers (promised: the
// term this heartbeat promised, or 0) is promised first, and the answer
// read again: a heartbeat answers "leader" only with its promise written.
func (b *Backend) answer(ctx context.Context, election, id, tokenHash string, promised uint64) (gateway.Status, error) {
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return gateway.Status{}, fmt.Errorf("etcd: heartbeat %q: the leadership kept changing: %w", id, err)
		}
		st, err := b.status(ctx, "heartbeat", election, id, tokenHash)
		if err != nil {
			return gateway.Status{}, b.notFound(ctx, err, election, id, tokenHash)
		}
		if st.Candidate.State != gateway.StateLeader || st.Term == promised {
			return st, nil
		}
		if promised, err = b.promise(ctx, election, id); err != nil {
			return gateway.Status{}, err
		}
	}
}

// clock is the monotonic clock on which replicas time promises: time.Now,
// whose readings carry the monotonic clock, unless a test sets one; moved,
// if set, wakes Run when a test moves it.
type clock struct {
	now   func() time.Time
	moved <-chan struct{}
}
