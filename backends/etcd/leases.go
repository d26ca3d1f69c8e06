package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaseBook is what this replica knows of candidates' lease expiries: from
// its own grants and keep-alives, and from TimeToLive lookups that Run
// makes for leases it has not heard of lately. It decides nothing about
// leadership: it feeds expires_at in answers, and tells a lease etcd
// revoked early from one that expired (revoked.go).
//
// Every expiry it holds is no later than the one etcd set: a grant's or a
// keep-alive's counts the TTL from before the request was sent, a
// lookup's the whole seconds etcd reports (rounded down) from before it
// was sent.
type leaseBook struct {
	mu sync.Mutex
	m  map[int64]leaseInfo
}

type leaseInfo struct {
	expires time.Time
	ttl     time.Duration // as granted, after etcd's minimum
	checked time.Time
}

func newLeaseBook() *leaseBook { return &leaseBook{m: map[int64]leaseInfo{}} }

// note records that lease has ttl seconds left as of now.
func (l *leaseBook) note(lease int64, ttl, granted int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := l.m[lease]
	i.expires, i.checked = now.Add(time.Duration(ttl)*time.Second), now
	if granted > 0 {
		i.ttl = time.Duration(granted) * time.Second
	}
	l.m[lease] = i
}

func (l *leaseBook) get(lease int64) (leaseInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.m[lease]
	return i, ok
}

func (l *leaseBook) forget(lease int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, lease)
}

// refresh looks up the leases in live that the book has not checked for a
// third of their TTL (at least a second), and drops leases not in live.
func (l *leaseBook) refresh(ctx context.Context, cli *clientv3.Client, live map[int64]bool, timeout time.Duration) {
	now := time.Now()
	var stale []int64
	l.mu.Lock()
	for id := range l.m {
		if !live[id] {
			delete(l.m, id)
		}
	}
	for id := range live {
		i, ok := l.m[id]
		if !ok || now.Sub(i.checked) > max(i.ttl/3, time.Second) {
			stale = append(stale, id)
		}
	}
	l.mu.Unlock()
	const maxPerPass = 64
	for n, id := range stale {
		if n == maxPerPass || ctx.Err() != nil {
			return
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := cli.TimeToLive(tctx, clientv3.LeaseID(id))
		cancel()
		if err == nil && resp.TTL > 0 {
			l.note(id, resp.TTL, resp.GrantedTTL, now)
		}
	}
}
