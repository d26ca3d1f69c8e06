package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.Sessioner = (*Backend)(nil)

// Sessions (gateway.Sessioner), as etcd's own concurrency.Session: one
// lease shared by many candidacies. The package doc's "Sessions" has the
// whole argument; in short:
//
//   - OpenSession grants the session's lease and puts its key,
//     p/_elector/sessions/<id>, on it (sessionValue);
//   - a campaign in the session puts its candidacy and id key on that
//     lease, in one transaction that also compares the session's key
//     (campaignInSession): no grant, no pool, no other write;
//   - every keep-alive elector makes of the lease (KeepSession, and a
//     heartbeat of any of its candidacies) renews every candidacy on it,
//     so it writes the promise of each of them that holds before it
//     answers (renewSession): a holder's promise always covers the last
//     renewal a client was told of;
//   - a candidacy on the lease is ended by deleting its keys, never by
//     revoking the lease (revoke refuses a session's);
//   - CloseSession marks the key "closing" (no campaign in the session
//     applies after that), resigns each candidacy, then revokes the lease.

// sessionInfo is what a request needs of a session: its key's lease,
// revisions and value.
type sessionInfo struct {
	id          string
	lease       int64
	create, mod int64
	value       sessionValue
}

func (r *sessionRec) info() sessionInfo {
	return sessionInfo{id: r.id, lease: r.lease, create: r.create, mod: r.mod, value: r.value}
}

// sessionOf reads a session's key; false when its value is not one.
func sessionOf(id string, kv *mvccpb.KeyValue) (sessionInfo, bool) {
	var v sessionValue
	if json.Unmarshal(kv.Value, &v) != nil || v.Elector != 1 || v.TTLms <= 0 || kv.Lease == 0 {
		return sessionInfo{}, false
	}
	return sessionInfo{id: id, lease: kv.Lease, create: kv.CreateRevision, mod: kv.ModRevision, value: v}, true
}

// check returns gateway.ErrTokenMismatch when tokenHash is not the
// session's, and gateway.ErrSessionNotFound when it is closing, unless
// closing is allowed (a second CloseSession finishes the first).
func (s sessionInfo) check(op, tokenHash string, closing bool) error {
	if !gateway.TokenMatches(s.value.TokenHash, tokenHash) {
		return fmt.Errorf("etcd: %s: %w", op, gateway.ErrTokenMismatch)
	}
	if s.value.Closing && !closing {
		return fmt.Errorf("etcd: %s: it is being closed: %w", op, gateway.ErrSessionNotFound)
	}
	return nil
}

// session finds session id: in the cache as it is, which holds every
// session key the watch delivered and drops one when its lease ends, or,
// when the cache does not hold it (opened through another replica a
// moment ago, or gone), with one linearizable read of its key. A session
// the cache still holds may have ended since: each caller's write tells
// (a campaign compares the key, a keep-alive finds the lease gone).
// Errors: gateway.ErrSessionNotFound, gateway.ErrUnavailable.
func (b *Backend) session(ctx context.Context, op, id string) (sessionInfo, error) {
	var (
		s  sessionInfo
		ok bool
	)
	if err := b.readCache(ctx, func(st *state) {
		if r := st.sessions[id]; r != nil {
			s, ok = r.info(), true
		}
	}); err != nil {
		return sessionInfo{}, err
	}
	if ok {
		return s, nil
	}
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	resp, err := b.cli.Get(rctx, b.keys.session(id))
	if err != nil {
		return sessionInfo{}, translate(ctx, op, err)
	}
	if len(resp.Kvs) == 0 {
		return sessionInfo{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrSessionNotFound)
	}
	if s, ok = sessionOf(id, resp.Kvs[0]); !ok {
		return sessionInfo{}, fmt.Errorf("etcd: %s: its key holds no session: %w", op, gateway.ErrSessionNotFound)
	}
	return s, nil
}

// sessionLease reports whether lease is a session's, as the cache as it
// is holds the sessions (see revoke for why that is enough for a lease
// that one of its entries is on).
func (b *Backend) sessionLease(ctx context.Context, lease int64) (shared bool, err error) {
	err = b.readCache(ctx, func(st *state) { shared = st.sessionLeases[lease] != nil })
	return shared, err
}

// OpenSession implements gateway.Sessioner: it grants a lease of ttl
// (rounded up to whole seconds, and at least etcd's minimum lease TTL, as
// Campaign grants a candidate's) and creates the session's key on it. A
// transaction that fails, or whose answer does not come, revokes the
// lease, which holds nothing else: the id was never answered. Errors:
// gateway.ErrUnavailable.
func (b *Backend) OpenSession(ctx context.Context, id string, ttl time.Duration, tokenHash string) (gateway.Session, error) {
	op := "open session " + id
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	sent := time.Now()
	g, err := b.cli.Grant(rctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return gateway.Session{}, translate(ctx, op, err)
	}
	key := b.keys.session(id)
	v := sessionValue{Elector: 1, TokenHash: tokenHash, TTLms: ttl.Milliseconds(), At: b.now()}
	resp, err := b.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, mustJSON(v), clientv3.WithLease(g.ID))).
		Commit()
	if err != nil || !resp.Succeeded {
		b.revokeOwn(g.ID)
		if err == nil {
			err = fmt.Errorf("the id is taken")
		}
		return gateway.Session{}, fmt.Errorf("etcd: %s: %w: %w", op, gateway.ErrUnavailable, err)
	}
	b.leases.note(int64(g.ID), g.TTL, g.TTL, sent)
	// So that a campaign through this replica finds it in the cache. A
	// cache that lags only costs that campaign a read.
	_ = b.waitApplied(ctx, resp.Header.Revision)
	return gateway.Session{ID: id, TTL: ttl, ExpiresAt: sent.Add(ttl), Candidates: []gateway.SessionCandidate{}}, nil
}

// KeepSession implements gateway.Sessioner: one keep-alive of the
// session's lease, which renews every candidacy of the session, beside
// the promise of each that holds (renewSession). Each candidacy is listed
// with the session's new expiry, but one whose holdership ended without
// its word and whose promise still holds its slot (the gateway's verdict,
// a lower holders setting): a renewal does not extend what it was
// promised, so its entry expires when the keep-alive was sent (it is
// given nothing). Errors: gateway.ErrSessionNotFound (unknown, closing,
// expired or revoked), gateway.ErrTokenMismatch, gateway.ErrUnavailable.
func (b *Backend) KeepSession(ctx context.Context, id, tokenHash string) (gateway.Session, error) {
	op := "keep session " + id
	s, err := b.session(ctx, op, id)
	if err != nil {
		return gateway.Session{}, err
	}
	if err := s.check(op, tokenHash, false); err != nil {
		return gateway.Session{}, err
	}
	sent, err := b.renewSession(ctx, op, s)
	if err != nil {
		return gateway.Session{}, err
	}
	return b.sessionAnswer(ctx, op, s, sent)
}

// sessionAnswer is KeepSession's answer for session s kept alive at sent,
// from the cache, which renewSession brought up to a revision after the
// call arrived.
func (b *Backend) sessionAnswer(ctx context.Context, op string, s sessionInfo, sent time.Time) (gateway.Session, error) {
	ttl := s.value.ttl()
	out := gateway.Session{ID: s.id, TTL: ttl, ExpiresAt: sent.Add(ttl), Candidates: []gateway.SessionCandidate{}}
	mono := b.mono.now()
	gone := false
	err := b.readCache(ctx, func(st *state) {
		if r := st.sessions[s.id]; r == nil || r.lease != s.lease || r.value.Closing {
			gone = true // closed since (or closing): the keep-alive came too late to count
			return
		}
		for _, c := range st.onLease(s.lease) {
			sc := gateway.SessionCandidate{Election: c.election, ID: c.st.x.value.ID, State: gateway.StateFollower, Term: c.st.term, ExpiresAt: out.ExpiresAt}
			switch {
			case c.st.own != nil:
				sc.State, sc.Term = gateway.StateLeader, c.st.own.Term
			case c.st.cooling:
				sc.State = gateway.StateError
			}
			if c.st.own == nil && st.heldBack(c.election, c.st.x, mono) {
				sc.ExpiresAt = sent
			}
			out.Candidates = append(out.Candidates, sc)
		}
	})
	if err != nil {
		return gateway.Session{}, err
	}
	if gone {
		return gateway.Session{}, fmt.Errorf("etcd: %s: closed meanwhile: %w", op, gateway.ErrSessionNotFound)
	}
	return out, nil
}

// held is an elector entry on a session's lease, with its standing.
type held struct {
	election string
	st       standing
}

// onLease returns the elector candidacies (in line or cooling) on
// session lease, by election; none when lease is no session's.
func (s *state) onLease(lease int64) []held {
	r := s.sessionLeases[lease]
	if r == nil {
		return nil
	}
	hex := leaseHex(lease)
	out := make([]held, 0, len(r.elections))
	for name := range r.elections {
		e := s.elections[name]
		if e == nil {
			continue
		}
		x := e.line[hex]
		if x == nil || x.native || x.lease != lease {
			x = e.cooling[hex]
		}
		if x == nil || x.lease != lease {
			continue
		}
		if st, ok := s.standing(name, x.value.ID); ok && st.x == x {
			out = append(out, held{election: name, st: st})
		}
	}
	slices.SortFunc(out, func(a, b held) int { return strings.Compare(a.election, b.election) })
	return out
}

// heldBack reports whether a holdership of x (its key, at an earlier
// place or now cooling: a slot naming its lease and id but not x as it
// stands) ended without its word and its promise still holds its slot on
// this replica's clock at mono: the holder may not know yet, and must not
// be told that a renewal extends it.
func (s *state) heldBack(election string, x *entry, mono time.Time) bool {
	e := s.elections[election]
	mine := func(sl *slotValue) bool { return sl.Key == x.hex && sl.ID == x.value.ID && !sl.names(x) }
	if e == nil || e.lead == nil || !slices.ContainsFunc(e.lead.Slots, func(sl slotValue) bool { return mine(&sl) }) {
		return false
	}
	v := s.leaderView(election)
	for i := range v.lead.Slots {
		sl := &v.lead.Slots[i]
		if !mine(sl) {
			continue
		}
		if end, ok := v.promiseLapses(sl); ok && mono.Before(end) {
			return true
		}
	}
	return false
}

// CloseSession implements gateway.Sessioner. It first rewrites the
// session's key "closing" (guarded by its revision, which every campaign
// in the session compares: none applies after it), then resigns each
// candidacy of the session as Resign does (a holder hands over at once,
// reason resigned), then revokes the lease, which deletes the key. A
// close cut short (an error at any step) leaves the session closing,
// with what was not resigned yet still in it; a second close finishes it.
// Errors: gateway.ErrSessionNotFound (unknown, closed or expired),
// gateway.ErrTokenMismatch, gateway.ErrUnavailable.
func (b *Backend) CloseSession(ctx context.Context, id, tokenHash string) error {
	op := "close session " + id
	s, err := b.session(ctx, op, id)
	if err != nil {
		return err
	}
	if err := s.check(op, tokenHash, true); err != nil {
		return err
	}
	if s, err = b.markClosing(ctx, op, s); err != nil {
		return err
	}
	// Every candidacy the session has: the cache holds the mark's
	// revision (markClosing waited for it), and no campaign applies
	// after it.
	var in []held
	if err := b.readCache(ctx, func(st *state) { in = st.onLease(s.lease) }); err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 16)
	for _, c := range in {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			x := c.st.x
			_, err := b.remove(ctx, op, c.election, x.value.ID, x.value.TokenHash, gateway.ReasonResigned, "")
			if err != nil && !isGone(err) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Revoke(rctx, clientv3.LeaseID(s.lease))
	cancel()
	switch {
	case leaseGone(err):
		return nil // expired meanwhile: the session is gone as asked
	case err != nil:
		return translate(ctx, op, err)
	}
	b.leases.forget(s.lease)
	_ = b.waitApplied(ctx, resp.Header.Revision) // so that this replica answers that it is gone
	return nil
}

// markClosing rewrites session s's key with "closing" set, unless it is
// already, and waits until the cache holds that revision. Errors:
// gateway.ErrSessionNotFound, gateway.ErrUnavailable.
func (b *Backend) markClosing(ctx context.Context, op string, s sessionInfo) (sessionInfo, error) {
	key := b.keys.session(s.id)
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return sessionInfo{}, fmt.Errorf("etcd: %s: %w", op, err)
		}
		if s.value.Closing {
			return s, b.fresh(ctx)
		}
		v := s.value
		v.Closing, v.At = true, b.now()
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", s.mod)).
			Then(clientv3.OpPut(key, mustJSON(v), clientv3.WithLease(clientv3.LeaseID(s.lease)))).
			Else(clientv3.OpGet(key)).
			Commit()
		cancel()
		switch {
		case leaseGone(err):
			return sessionInfo{}, fmt.Errorf("etcd: %s: its lease has ended: %w", op, gateway.ErrSessionNotFound)
		case err != nil:
			return sessionInfo{}, translate(ctx, op, err)
		case resp.Succeeded:
			s.value, s.mod = v, resp.Header.Revision
			return s, b.waitApplied(ctx, resp.Header.Revision)
		}
		// Written since (a fence, another close): as it is now.
		kv := firstKV(resp, 0)
		n, ok := sessionInfo{}, false
		if kv != nil && kv.Lease == s.lease {
			n, ok = sessionOf(s.id, kv)
		}
		if !ok {
			return sessionInfo{}, fmt.Errorf("etcd: %s: %w", op, gateway.ErrSessionNotFound)
		}
		s = n
	}
}

// isGone reports whether err says a candidacy is gone already (resigned
// or expired meanwhile), which a close counts as done.
func isGone(err error) bool {
	return errors.Is(err, gateway.ErrCandidateNotFound) || errors.Is(err, gateway.ErrElectionNotFound)
}

// firstKV is the first key of the i-th range response of resp, or nil.
func firstKV(resp *clientv3.TxnResponse, i int) *mvccpb.KeyValue {
	if resp == nil || i >= len(resp.Responses) {
		return nil
	}
	r := resp.Responses[i].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}
