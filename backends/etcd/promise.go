package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// The leader's promise: how elector keeps the promise of a heartbeat
// answered "leader" (nobody else leads before a TTL from its sending) when
// etcd ends the leader's lease early. The package doc ("The leader's
// promise") has the whole argument; in short:
//
//   - the leader's heartbeat writes the promise record, guarded by the lead
//     record, its key and the promise record's own revision, and answers
//     "leader" only once it is written
//     (promise, answer);
//   - each replica notes on its monotonic clock when it first held a
//     leadership's newest promise or its acknowledgement (estate.promised);
//   - after a leadership ended without the leader asking (an expiry, an
//     early revocation, the gateway's verdict: FailLeader), nobody is
//     acknowledged until a TTL has passed since (hold, plan);
//   - a leader whose promise lapsed is expired by the reconcilers
//     (expireLeader).
//
// A replica holds a promise only after etcd committed it, which is after
// the heartbeat was sent: its "held at + TTL" is never before the
// candidate's own deadline, whatever the replicas' clocks say.

// promiseTTL is the TTL elector promised the leadership the lead record
// names: the leader's, from the record or from a promise of its term.
func (v view) promiseTTL() (time.Duration, bool) {
	l := v.lead
	if l == nil {
		return 0, false
	}
	ttl := l.ttl()
	if p := v.promise; p != nil && p.Term == l.Term {
		ttl = max(ttl, p.ttl())
	}
	return ttl, ttl > 0
}

// promiseLapses is when, on this replica's monotonic clock, the promise of
// the leadership the lead record names lapses: a TTL after the replica
// first held its newest promise. Only a cache's views know it.
func (v view) promiseLapses() (time.Time, bool) {
	ttl, ok := v.promiseTTL()
	if !ok || v.promised.IsZero() || v.promisedTerm != v.lead.Term {
		return time.Time{}, false
	}
	return v.promised.Add(ttl), true
}

// promisedEnd is the end of the leader's promise on the clocks of the
// replicas that wrote it: its acknowledgement ("since") or its latest
// promise, plus its TTL. It is the same on every replica, and is the time
// of the events of a leader's key that etcd removed (see eventTime).
func (v view) promisedEnd() (time.Time, bool) {
	ttl, ok := v.promiseTTL()
	if !ok {
		return time.Time{}, false
	}
	at := v.lead.Since
	if p := v.promise; p != nil && p.Term == v.lead.Term && p.At.After(at) {
		at = p.At
	}
	return at.Add(ttl), true
}

// hold reports whether the leadership the lead record names ended without
// the leader asking (its key went without a mark, it was recorded as
// expired, or the gateway's verdict failed it) and its promise has not
// lapsed on this replica's clock at mono: then nobody may be acknowledged
// before until.
func (v view) hold(mono time.Time) (until time.Time, held bool) {
	if v.lead == nil || !(v.pending || v.lead.Ended == gateway.ReasonExpired || v.lead.Failed) {
		return time.Time{}, false
	}
	end, ok := v.promiseLapses()
	if !ok || !mono.Before(end) {
		return time.Time{}, false
	}
	return end, true
}

// expireLeader returns the action that ends the leadership of v.leader
// whose promise lapsed on this replica's clock while etcd still holds its
// key (its lease may be longer: whole seconds, etcd's minimum, or a
// keep-alive whose promise failed). It deletes the leader's keys with a
// mark saying "expired", guarded by the lead record, the promise record
// and the key itself: a heartbeat that promised again meanwhile makes it
// fail, and a heartbeat after it finds the candidate gone. The lease is
// revoked after. What follows is an expiry like any other: the handover
// delay, then the next leader.
func (b *Backend) expireLeader(v view, now time.Time) action {
	x := v.leader
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
		clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
		clientv3.Compare(clientv3.ModRevision(b.keys.promise(v.name)), "=", v.promiseMod),
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
	return action{what: "expire leader after its promise", cmps: cmps, ops: ops, revoke: clientv3.LeaseID(x.lease)}
}

// promise writes the promise of candidate id's leadership of election as
// this replica's cache holds it (see the top of this file) and waits until
// the cache holds the write. It returns the term it promised, or 0 when
// the cache does not show id leading or the guard failed; the cache has
// then caught up with a revision etcd reached after the call. Errors:
// gateway.ErrUnavailable.
func (b *Backend) promise(ctx context.Context, election, id string) (uint64, error) {
	var (
		st standing
		ok bool
	)
	rctx, cancel := b.reqCtx(ctx)
	err := b.cache.read(rctx, func(s *state) { st, ok = s.standing(election, id) })
	cancel()
	if err != nil {
		return 0, err
	}
	if !ok || st.leader == nil || st.leader != st.x {
		// It no longer leads as the cache sees it: the caller answers from
		// the cache, which must then be as fresh as the write would be.
		return 0, b.fresh(ctx)
	}
	x := st.x
	val := promiseValue{Term: st.term, Key: x.hex, TTLms: x.value.TTLms, At: b.now()}
	rctx, cancel = b.reqCtx(ctx)
	resp, err := b.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", st.leadMod),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(election, x)), "=", x.create),
			// The promise key it writes, as every transaction elector
			// commits compares (see Connections): of two attempts of one
			// promise, or of two promises cached alike, one applies.
			clientv3.Compare(clientv3.ModRevision(b.keys.promise(election)), "=", st.promiseMod)).
		Then(clientv3.OpPut(b.keys.promise(election), mustJSON(val))).
		Commit()
	cancel()
	if err != nil {
		return 0, translate(ctx, fmt.Sprintf("promise %q", id), err)
	}
	if !resp.Succeeded {
		return 0, b.catchUp(ctx, resp.Header.Revision)
	}
	return st.term, b.waitApplied(ctx, resp.Header.Revision)
}

// answer is a heartbeat's Status from the cache, which the caller has
// brought up to a revision after the heartbeat arrived. A candidate shown
// leading a term that no promise of this heartbeat covers (promised: the
// term this heartbeat promised, or 0) is promised first, and the answer
// read again: a heartbeat answers "leader" only with its promise written.
func (b *Backend) answer(ctx context.Context, election, id, tokenHash string, promised uint64) (gateway.Status, error) {
	for range maxAttempts {
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
	return gateway.Status{}, fmt.Errorf("etcd: heartbeat %q: the leadership kept changing: %w", id, gateway.ErrUnavailable)
}

// clock is the monotonic clock on which replicas time promises: time.Now,
// whose readings carry the monotonic clock, unless a test sets one; moved,
// if set, wakes Run when a test moves it.
type clock struct {
	now   func() time.Time
	moved <-chan struct{}
}
