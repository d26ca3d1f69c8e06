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

// Candidacies revoked early (see the package doc's section of that
// name). A replica that learnt from etcd that a lease would live longer
// (leaseBook) and sees its candidacy's keys go without a mark more than
// revokeSlack before that, remembers it (revokedBook) and records it in
// p/_elector/revoked/<election>/<lease-hex> (writeRevoked); a request of
// that candidacy, matched by id and token hash, then fails with a
// *gateway.CandidacyRevokedError (notFound) rather than a plain
// gateway.ErrCandidateNotFound. The place in line cannot be given back:
// it is the key's create revision.

// revokeSlack is how much earlier than etcd said a lease must end to count
// as revoked early. The lease book's expiries are never later than etcd's
// (see leaseBook), and etcd's lessor checks expiries every 500ms, which
// only makes an expiry later; the slack covers the clock readings in
// between.
const revokeSlack = 500 * time.Millisecond

// revokedTTL is how long the record of an early revocation stays: long
// enough for a candidate that retries with back-off to hear of it.
func revokedTTL(ttl time.Duration) time.Duration { return max(4*ttl, time.Minute) }

// revokedBook is what this replica noticed of early revocations, by
// election and lease hex; entries go after revokedMemory.
type revokedBook struct {
	mu sync.Mutex
	m  map[[2]string]revokedValue
}

const revokedMemory = 10 * time.Minute

func newRevokedBook() *revokedBook { return &revokedBook{m: map[[2]string]revokedValue{}} }

func (r *revokedBook) put(election, hex string, v revokedValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, old := range r.m {
		if v.At.Sub(old.At) > revokedMemory {
			delete(r.m, k)
		}
	}
	r.m[[2]string{election, hex}] = v
}

func (r *revokedBook) find(election, id, tokenHash string) (revokedValue, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range r.m {
		if k[0] == election && v.ID == id && gateway.TokenMatches(v.TokenHash, tokenHash) {
			return v, true
		}
	}
	return revokedValue{}, false
}

// revocation is a record of an early revocation to write.
type revocation struct {
	election, hex string
	value         revokedValue
	ttl           time.Duration
}

// departed is called by the cache, under its lock, with the elector
// candidacies that left without a mark in the revisions it just applied,
// at when it applied them. Those whose lease this replica learnt would
// live more than revokeSlack longer were revoked early: it remembers them
// and queues their record (writeRevoked). It only looks things up.
func (b *Backend) departed(ds []departure, at time.Time) {
	for _, d := range ds {
		i, known := b.leases.get(d.x.lease)
		if !known || i.expires.Sub(at) <= revokeSlack {
			continue
		}
		v := revokedValue{ID: d.x.value.ID, TokenHash: d.x.value.TokenHash, Rev: d.rev, At: at, ExpiresAt: i.expires}
		b.revokedBook.put(d.election, d.x.hex, v)
		select {
		case b.revocations <- revocation{election: d.election, hex: d.x.hex, value: v, ttl: d.x.value.ttl()}:
		default: // behind: the candidate still hears it from this replica
		}
	}
}

// writeRevoked writes the records of early revocations queued by departed
// until ctx ends. Each is created once, whichever replica is first.
func (b *Backend) writeRevoked(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-b.revocations:
			key := b.keys.revoked(r.election, r.hex)
			lease, put, err := b.grantLease(ctx, key, mustJSON(r.value), revokedTTL(r.ttl))
			if err != nil {
				continue
			}
			rctx, cancel := b.reqCtx(ctx)
			resp, err := b.cli.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(put).Commit()
			cancel()
			if notApplied(resp, err) {
				b.revokeOwn(lease)
			}
		}
	}
}

// notFound returns err, or, when err is gateway.ErrCandidateNotFound and
// the candidacy of id with tokenHash was revoked early (in the cache's
// records or this replica's book), a *gateway.CandidacyRevokedError.
func (b *Backend) notFound(ctx context.Context, err error, election, id, tokenHash string) error {
	if !errors.Is(err, gateway.ErrCandidateNotFound) {
		return err
	}
	var (
		v     revokedValue
		found bool
	)
	_ = b.readCache(ctx, func(s *state) {
		if e := s.elections[election]; e != nil {
			for _, r := range e.revoked {
				if r.ID == id && gateway.TokenMatches(r.TokenHash, tokenHash) {
					v, found = r, true
				}
			}
		}
	})
	if !found {
		v, found = b.revokedBook.find(election, id, tokenHash)
	}
	if !found {
		return err
	}
	return fmt.Errorf("etcd: %w", &gateway.CandidacyRevokedError{Election: election, ID: id, At: v.At, ExpiresAt: v.ExpiresAt})
}
