package etcd

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// sessionAttempts bounds the transactions of a campaign in a session that
// find the session's key rewritten (a fence, see fenceSession) and try
// again with it.
const sessionAttempts = 3

// campaignInSession is Campaign in session c.Session: the candidacy and
// its id key go on the session's lease, with the session's TTL, in one
// transaction, which is the campaign's only write (the session is found
// in the cache, or with one read; no lease is granted or taken from the
// pool). The transaction also requires, at its revision:
//
//   - the session's key at the revision the campaign read it (sessionGuard):
//     so the session lives (a key on a lease that ended is gone) and is not
//     closing, and no fence was written since (see fenceSession);
//   - no key of the session's in the election's line or cooling: the keys
//     are named after the lease (concurrency.Election's layout), so a
//     session holds at most one candidacy per election, and a second one
//     is refused with gateway.ErrSessionInElection. The same id again
//     finds its id key and is refused with gateway.ErrCandidateExists, as
//     any campaign of an id that campaigns.
//
// A refused transaction is followed by one read of those keys, which
// tells why (sessionRefused). When the answer does not come, the campaign fences the session and reads its id
// key (sessionCampaignLanded): it cannot revoke the lease, as a campaign
// on a lease of its own does. Errors: gateway.ErrSessionNotFound,
// gateway.ErrTokenMismatch, gateway.ErrSessionInElection,
// gateway.ErrCandidateExists, gateway.ErrUnavailable.
func (b *Backend) campaignInSession(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	op := fmt.Sprintf("campaign %q in session %s", c.ID, c.Session)
	s, err := b.session(ctx, op, c.Session)
	if err != nil {
		return gateway.Status{}, err
	}
	for attempt := 0; ; attempt++ {
		if err := s.check(op, c.TokenHash, false); err != nil {
			return gateway.Status{}, err
		}
		if attempt == sessionAttempts {
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: its session's key changed under each of %d attempts: %w", op, election, attempt, gateway.ErrUnavailable)
		}
		hex := leaseHex(s.lease)
		now := b.now()
		val := candidateValue{Elector: 1, ID: c.ID, Metadata: c.Metadata, TTLms: s.value.TTLms, TokenHash: c.TokenHash, Priority: c.Priority, At: now}
		set := settingsOf(defaults, now)
		var before int64 // the cache's revision before the transaction (see sessionCampaignLanded)
		if err := b.readCache(ctx, func(st *state) { before = st.rev }); err != nil {
			return gateway.Status{}, err
		}
		rctx, cancel := b.reqCtx(ctx)
		resp, one, err := b.campaignTxn(ctx, rctx, election, c.ID, hex, clientv3.LeaseID(s.lease), val, set, &s)
		cancel()
		switch {
		case leaseGone(err):
			// The session's lease ended between the comparisons it passed
			// and its write (they are evaluated together: not at all
			// expected, but as etcd says).
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: its session's lease has ended: %w", op, election, gateway.ErrSessionNotFound)
		case err != nil:
			rev, lerr := b.sessionCampaignLanded(ctx, election, c.ID, hex, s, before)
			if lerr != nil {
				return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w (its transaction's answer was lost: %v)", op, election, lerr, err)
			}
			resp, one = &clientv3.TxnResponse{Header: &pb.ResponseHeader{Revision: rev}, Succeeded: true}, false
		case !resp.Succeeded:
			again, err := b.sessionRefused(ctx, op, election, c.ID, hex, &s)
			if err != nil {
				return gateway.Status{}, err
			}
			if again {
				continue
			}
		}
		x := &entry{hex: hex, name: hex, lease: s.lease, value: val}
		return b.campaigned(ctx, op, election, c, resp, one, x, set)
	}
}

// sessionGuard returns the comparisons that put a campaign whose keys are
// named hex in session s: the session's key at the revision the campaign
// read it, and no key of the session in the election's line (under two
// names: see movedSuffix) or cooling.
func (b *Backend) sessionGuard(election, hex string, s sessionInfo) []*pb.Compare {
	line, moved, cool := b.keys.candidacy(election, hex), b.keys.candidacy(election, hex+movedSuffix), b.keys.cooling(election, hex)
	return []*pb.Compare{
		cmpModified(b.keys.session(s.id), s.mod),
		cmpCreated(line, 0),
		cmpCreated(moved, 0),
		cmpCreated(cool, 0),
	}
}

// sessionRefused tells why a campaign of id, whose keys are named hex, in
// session s was refused, from one read of the keys sessionGuard compares
// and of the candidate's id key, made after the refusal (a refusal is
// rare: the campaign's own transaction carries no reads, so that its
// answer and etcd's work stay those of a campaign that applies): the
// session gone (its key absent, or on another lease), a campaign of the
// same id (its id key), the session's candidacy in the election, or, when
// the session's key was written since (a fence), nothing: s is then as the
// key is now, and again is set. What changed between the refusal and the
// read only sends the campaign round again, at most sessionAttempts times.
func (b *Backend) sessionRefused(ctx context.Context, op, election, id, hex string, s *sessionInfo) (again bool, err error) {
	line, moved, cool := b.keys.candidacy(election, hex), b.keys.candidacy(election, hex+movedSuffix), b.keys.cooling(election, hex)
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	resp, err := b.cli.Txn(rctx).Then(
		clientv3.OpGet(b.keys.session(s.id)), clientv3.OpGet(b.keys.candidateID(election, id)),
		clientv3.OpGet(line), clientv3.OpGet(moved), clientv3.OpGet(cool)).Commit()
	if err != nil {
		return false, translate(ctx, op, err)
	}
	sk := firstKV(resp, 0)
	switch {
	case sk == nil || sk.Lease != s.lease:
		return false, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrSessionNotFound)
	case sk.ModRevision != s.mod:
		n, ok := sessionOf(s.id, sk)
		if !ok {
			return false, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrSessionNotFound)
		}
		*s = n
		return true, nil
	case firstKV(resp, 1) != nil:
		return false, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrCandidateExists)
	case firstKV(resp, 2) != nil || firstKV(resp, 3) != nil || firstKV(resp, 4) != nil:
		return false, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrSessionInElection)
	}
	return true, nil // refused by what has changed since: try again
}

// sessionCampaignLanded settles a campaign in session s whose
// transaction's answer did not come, as campaignLanded does for one on a
// lease of its own, but without revoking the lease, which the session's
// other candidacies share. It first fences the session (fenceSession):
// once etcd has answered the fence, the transaction can no longer apply,
// if it has not yet. Then it reads the candidate's id key: holding hex,
// created after before (the revision this replica's cache was at before
// the transaction was sent, so no earlier candidacy), it proves the
// campaign applied, and the key's create revision is its revision. Only a
// campaign of this id in this session into this election writes hex
// there, and a session holds one candidacy per election: another such
// write would be a concurrent campaign of the same candidacy (the same
// id, session and token), whose candidacy is the caller's as much. It
// returns an error when the campaign did not apply (nothing lingers: it
// is fenced) or when that cannot be told (the fence or the read went
// unanswered: it may then apply, a candidacy of the session that its
// heartbeats list). Errors: gateway.ErrUnavailable.
func (b *Backend) sessionCampaignLanded(ctx context.Context, election, id, hex string, s sessionInfo, before int64) (int64, error) {
	if !b.fenceSession(ctx, s) {
		return 0, fmt.Errorf("neither it nor a fence of its session was answered, it may still apply: %w", gateway.ErrUnavailable)
	}
	kv, read := b.idKeyNow(ctx, election, id)
	switch {
	case !read:
		return 0, fmt.Errorf("it is fenced, but whether it applied could not be read: %w", gateway.ErrUnavailable)
	case kv == nil || string(kv.Value) != hex || kv.CreateRevision <= before:
		return 0, fmt.Errorf("it did not apply, and is fenced: %w", gateway.ErrUnavailable)
	}
	return kv.CreateRevision, nil
}

// fenceSession makes sure that no campaign guarded by session s's key at
// revision s.mod (see sessionGuard) applies any more: it writes the key
// again, unchanged, on its lease, guarded by that revision. Once etcd has
// answered it, the key's revision has moved on (by this write, or by
// another since s was read), or the key is gone with its lease: either
// way every such campaign's comparison fails. It reports whether etcd
// answered, trying twice (an attempt whose answer is lost may have
// applied: the second then fails its comparison, an answer as good).
func (b *Backend) fenceSession(ctx context.Context, s sessionInfo) bool {
	key := b.keys.session(s.id)
	for range 2 {
		rctx, cancel := b.reqCtx(ctx)
		_, err := b.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", s.mod)).
			Then(clientv3.OpPut(key, mustJSON(s.value), clientv3.WithLease(clientv3.LeaseID(s.lease)))).
			Commit()
		cancel()
		if err == nil || leaseGone(err) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
	return false
}
