package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// sessionPromises is how many promises of one session's holders are
// written at once (they go to etcd in batches: batch.go).
const sessionPromises = 64

// renewSession keeps session s's lease alive once, beside the promise of
// every holder on it (promiseSession), and returns when the keep-alive was
// sent: the session's candidacies live a TTL (at least) from then. It
// fails if either fails: a renewal is only answered with every holder of
// the session promised, so no client is told of a renewal that a holder's
// promise does not cover (see the package doc, "Sessions"). Errors:
// gateway.ErrSessionNotFound (its lease ended), gateway.ErrUnavailable.
func (b *Backend) renewSession(ctx context.Context, op string, s sessionInfo) (time.Time, error) {
	var (
		ka   *clientv3.LeaseKeepAliveResponse
		kerr error
		wg   sync.WaitGroup
	)
	sent := time.Now() // etcd renews the lease after this: the book's expiry is never later than etcd's
	wg.Go(func() {
		rctx, cancel := b.reqCtx(ctx)
		defer cancel()
		ka, kerr = b.cli.KeepAliveOnce(rctx, clientv3.LeaseID(s.lease))
	})
	_, perr := b.promiseSession(ctx, s.lease)
	wg.Wait()
	if leaseGone(kerr) {
		return time.Time{}, fmt.Errorf("etcd: %s: its lease has ended: %w", op, gateway.ErrSessionNotFound)
	}
	if kerr != nil {
		return time.Time{}, translate(ctx, op, kerr)
	}
	b.leases.note(s.lease, ka.TTL, ka.TTL, sent)
	if perr != nil {
		return time.Time{}, perr
	}
	return sent, nil
}

// promiseSession writes the promise of each holdership held by a
// candidacy on lease, a session's, as a holder's own heartbeat writes its
// promise (promise), and returns the term promised in each election. It
// reads the holders from a cache as fresh as the call: a holdership
// acknowledged before the call is promised now, one acknowledged after it
// was promised by its acknowledgement, which is later than the call. Every
// holder of the session is promised, a holder asked to hand over among
// them: the session's keep-alive renews its key whatever its own
// heartbeats are told (see "Sessions" in the package doc for why that
// keeps a transfer safe). Errors: gateway.ErrUnavailable.
func (b *Backend) promiseSession(ctx context.Context, lease int64) (map[string]uint64, error) {
	if err := b.fresh(ctx); err != nil {
		return nil, err
	}
	type holder struct{ election, id string }
	var hs []holder
	if err := b.readCache(ctx, func(st *state) {
		for _, c := range st.onLease(lease) {
			if c.st.own != nil {
				hs = append(hs, holder{c.election, c.st.x.value.ID})
			}
		}
	}); err != nil {
		return nil, err
	}
	promised := make(map[string]uint64, len(hs))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, sessionPromises)
	for _, h := range hs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			term, err := b.promiseHolder(ctx, h.election, h.id)
			mu.Lock()
			defer mu.Unlock()
			promised[h.election] = term
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return promised, first
}

// promiseHolder promises candidate id's holdership of election until the
// cache shows it promised or holding no more (its promise's guard fails
// when another write of the lead record or of the promise came first),
// and returns the term it last promised, 0 if none.
func (b *Backend) promiseHolder(ctx context.Context, election, id string) (uint64, error) {
	var promised uint64
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return 0, fmt.Errorf("etcd: promise %q in %q: the leadership kept changing: %w", id, election, err)
		}
		var holds uint64
		if err := b.readCache(ctx, func(s *state) {
			if st, ok := s.standing(election, id); ok && st.own != nil {
				holds = st.own.Term
			}
		}); err != nil {
			return 0, err
		}
		if holds == 0 || holds == promised {
			return promised, nil
		}
		term, err := b.promise(ctx, election, id)
		if err != nil {
			return 0, err
		}
		promised = term
	}
}
