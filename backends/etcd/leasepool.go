package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leasePool holds leases granted ahead of campaigns, so that a campaign
// of a TTL in recent use puts its keys on a lease that exists already
// instead of waiting for a grant (a raft write, as long as its
// transaction): one round trip instead of two.
//
// A lease is granted on the replica's own initiative, holds no key until
// a campaign takes it, and is taken by one campaign only (under mu). It
// decides nothing about leadership: a candidacy on a pooled lease is a
// key on a lease like any other, and its TTL is the candidate's (leases
// are pooled per TTL in whole seconds, as Campaign grants them). What
// differs is the lease's age when the campaign takes it: a lease granted
// at g expires at g+TTL unless kept alive. A campaign therefore takes a
// lease only while it is younger than half its TTL, and keeps alive one
// older than poolFresh beside its transaction, so that the candidacy
// lives its TTL from the campaign, as if granted then (within etcd's own
// precision: it checks expiries every 500ms and grants whole seconds).
// The book of lease expiries (leases.go) counts from the grant or that
// keep-alive, never later than etcd does.
//
// The pool is bounded and follows demand: at most poolClasses TTLs, each
// refilled up to poolSize leases once it falls to half of that; a TTL
// not taken for poolIdle is dropped and its leases revoked, and so are
// leases too old to be taken. Close revokes what is left; a replica that
// crashes leaves at most poolClasses×poolSize leases without keys, which
// etcd ends at their TTL.
type leasePool struct {
	b *Backend

	mu      sync.Mutex
	classes map[int64]*leaseClass // by TTL in seconds, as granted
	closed  bool
}

// leaseClass is the pool of one TTL.
type leaseClass struct {
	free     []pooledLease
	lastTake time.Time
	wake     chan struct{} // its filler looks again
}

// pooledLease is a lease granted for the pool: id, the TTL etcd granted
// (after its minimum) and when the grant was sent.
type pooledLease struct {
	id   clientv3.LeaseID
	ttl  int64
	sent time.Time
}

const (
	poolSize    = 16
	poolClasses = 4
	poolIdle    = 10 * time.Second
	// poolFresh is the age up to which a pooled lease is used as it is:
	// under load they are taken milliseconds after their grant.
	poolFresh = 100 * time.Millisecond
	// poolGrants is how many grants a filler has in flight at once.
	poolGrants = 4
)

func newLeasePool(b *Backend) *leasePool {
	return &leasePool{b: b, classes: map[int64]*leaseClass{}}
}

// usable reports whether l, at now, may still be taken.
func (l pooledLease) usable(now time.Time) bool {
	return now.Sub(l.sent) < time.Duration(l.ttl)*time.Second/2
}

// take returns a pooled lease of secs, the newest granted, or false when
// the pool has none (the campaign grants one itself). It notes the demand:
// a TTL's first take starts its filler.
func (p *leasePool) take(secs int64) (pooledLease, bool) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return pooledLease{}, false
	}
	c := p.classes[secs]
	if c == nil {
		if len(p.classes) >= poolClasses {
			return pooledLease{}, false
		}
		c = &leaseClass{wake: make(chan struct{}, 1)}
		p.classes[secs] = c
		p.b.wg.Go(func() { p.fill(secs, c) })
	}
	c.lastTake = now
	var got pooledLease
	ok := false
	for len(c.free) > 0 && !ok {
		got = c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
		if ok = got.usable(now); !ok {
			p.b.revokeOwn(got.id)
		}
	}
	if len(c.free) <= poolSize/2 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return got, ok
}

// put gives back a lease a campaign took and put no key on (its
// transaction failed its comparison).
func (p *leasePool) put(secs int64, l pooledLease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.classes[secs]; c != nil && !p.closed && len(c.free) < poolSize {
		c.free = append(c.free, l)
		return
	}
	p.b.revokeOwn(l.id)
}

// fill keeps class c of secs at up to poolSize leases while it is taken
// from, and drops it once it has not been for poolIdle, or at Close.
func (p *leasePool) fill(secs int64, c *leaseClass) {
	ctx := p.b.done
	tick := time.NewTicker(poolIdle / 4)
	defer tick.Stop()
	for {
		now := time.Now()
		p.mu.Lock()
		if p.closed || ctx.Err() != nil || now.Sub(c.lastTake) > poolIdle {
			for _, l := range c.free {
				p.b.revokeOwn(l.id)
			}
			c.free = nil
			if p.classes[secs] == c {
				delete(p.classes, secs)
			}
			p.mu.Unlock()
			return
		}
		kept := c.free[:0]
		for _, l := range c.free {
			if l.usable(now) {
				kept = append(kept, l)
			} else {
				p.b.revokeOwn(l.id)
			}
		}
		c.free = kept
		need := 0
		if len(c.free) <= poolSize/2 {
			need = poolSize - len(c.free)
		}
		p.mu.Unlock()
		if need > 0 && p.grant(ctx, secs, c, need) {
			continue
		}
		select {
		case <-ctx.Done():
		case <-c.wake:
		case <-tick.C:
		}
	}
}

// grant grants n leases of secs for class c, poolGrants at a time, and
// reports whether all were granted (on an error the filler waits for its
// next look rather than retry at once).
func (p *leasePool) grant(ctx context.Context, secs int64, c *leaseClass, n int) bool {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed bool
	)
	sem := make(chan struct{}, poolGrants)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rctx, cancel := p.b.reqCtx(ctx)
			defer cancel()
			sent := time.Now()
			g, err := p.b.cli.Grant(rctx, secs)
			if err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
				return
			}
			l := pooledLease{id: g.ID, ttl: g.TTL, sent: sent}
			p.mu.Lock()
			kept := !p.closed && p.classes[secs] == c
			if kept {
				c.free = append(c.free, l)
			}
			p.mu.Unlock()
			if !kept {
				p.revokeNow(l.id)
			}
		})
	}
	wg.Wait()
	return !failed
}

// revokeNow revokes a lease granted while Close ran, whose revoker may
// have stopped: the client is open until every goroutine has ended.
func (p *leasePool) revokeNow(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), p.b.cfg.RequestTimeout)
	defer cancel()
	_, _ = p.b.cli.Revoke(ctx, id)
}

// close revokes the pooled leases and refuses further takes; fillers then
// end, revoking what they are granting.
func (p *leasePool) close() {
	p.mu.Lock()
	p.closed = true
	var ids []clientv3.LeaseID
	for _, c := range p.classes {
		for _, l := range c.free {
			ids = append(ids, l.id)
		}
		c.free = nil
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { p.revokeNow(id) })
	}
	wg.Wait()
}
