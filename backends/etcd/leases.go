package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/internal/due"
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
//
// The candidates' leases come and go with the cache's state, which counts
// the entries on each lease and lists the leases that came and went
// (leaseCount); Run hands those changes to the book each second (track),
// and the book checks each lease when it is due (a third of its TTL, at
// least a second, after its last check), so a pass costs the leases that
// changed or are due, not every candidacy.
type leaseBook struct {
	mu  sync.Mutex
	m   map[int64]leaseInfo
	due *due.Queue[int64] // when each lease of m is to be looked up again
}

type leaseInfo struct {
	expires time.Time
	ttl     time.Duration // as granted, after etcd's minimum
	checked time.Time
}

func newLeaseBook() *leaseBook { return &leaseBook{m: map[int64]leaseInfo{}, due: due.New[int64]()} }

// recheck is when a lease checked at checked is to be looked up again.
func (i leaseInfo) recheck() time.Time { return i.checked.Add(max(i.ttl/3, time.Second)) }

// note records that lease has ttl seconds left as of now.
func (l *leaseBook) note(lease int64, ttl, granted int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.noteLocked(lease, ttl, granted, now)
}

func (l *leaseBook) noteLocked(lease int64, ttl, granted int64, now time.Time) {
	i := l.m[lease]
	i.expires, i.checked = now.Add(time.Duration(ttl)*time.Second), now
	if granted > 0 {
		i.ttl = time.Duration(granted) * time.Second
	}
	l.m[lease] = i
	l.due.Set(lease, i.recheck())
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
	l.due.Set(lease, time.Time{})
}

// track adds the leases born (to be looked up now, unless the book knows
// them) and drops the leases died.
func (l *leaseBook) track(born, died []int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range born {
		if _, ok := l.m[id]; !ok {
			l.m[id] = leaseInfo{}
			l.due.Set(id, now)
		}
	}
	for _, id := range died {
		delete(l.m, id)
		l.due.Set(id, time.Time{})
	}
}

// resync makes the book's leases those of live: it drops the others (a
// keep-alive's answer noted after its lease's last key went) and adds
// those missing, to be looked up now.
func (l *leaseBook) resync(live map[int64]int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.m {
		if live[id] == 0 {
			delete(l.m, id)
			l.due.Set(id, time.Time{})
		}
	}
	for id := range live {
		if _, ok := l.m[id]; !ok {
			l.m[id] = leaseInfo{}
			l.due.Set(id, now)
		}
	}
}

// refresh looks up at most 64 leases that are due (see recheck). A lease
// etcd no longer knows is left to the state (its keys are deleted with
// it) and not looked up again unless noted.
func (l *leaseBook) refresh(ctx context.Context, cli *clientv3.Client, timeout time.Duration) {
	const maxPerPass = 64
	now := time.Now()
	var stale []int64
	l.mu.Lock()
	for len(stale) < maxPerPass {
		id, _, ok := l.due.PopDue(now)
		if !ok {
			break
		}
		stale = append(stale, id)
	}
	l.mu.Unlock()
	for n, id := range stale {
		if ctx.Err() != nil {
			// Due again at the next pass.
			l.mu.Lock()
			for _, id := range stale[n:] {
				if _, ok := l.m[id]; ok {
					l.due.Set(id, now)
				}
			}
			l.mu.Unlock()
			return
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := cli.TimeToLive(tctx, clientv3.LeaseID(id))
		cancel()
		switch {
		case err == nil && resp.TTL > 0:
			l.mu.Lock()
			if _, ok := l.m[id]; ok { // not dropped meanwhile
				l.noteLocked(id, resp.TTL, resp.GrantedTTL, now)
			}
			l.mu.Unlock()
		case err != nil:
			// Asked again in a second.
			l.mu.Lock()
			if _, ok := l.m[id]; ok {
				l.due.Set(id, now.Add(time.Second))
			}
			l.mu.Unlock()
		}
	}
}
