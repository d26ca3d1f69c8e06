package etcd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/electorhq/elector/gateway"
)

// RevokeLease queues the revocation of lease id, as a campaign whose
// transaction's outcome is unknown does, and RevokeFailures counts the
// attempts at one that etcd did not answer.
func (b *Backend) RevokeLease(id int64)  { b.revokeOwn(clientv3.LeaseID(id)) }
func (b *Backend) RevokeFailures() int64 { return b.revokeFails.Load() }

// PrepareRemove computes, from this replica's view of election as it is
// now, the transaction that Resign (reason "resigned") or ReportError
// (reason "error") would commit for candidate id, and returns a function
// that commits it later and reports whether its comparisons held. Tests use
// it to commit a transaction computed from a view that has since gone
// stale, as a replica whose cache lags behind another's write does.
func (b *Backend) PrepareRemove(ctx context.Context, election, id, tokenHash, reason string) (commit func() (bool, error), err error) {
	v, x, cooling, err := b.owned(ctx, "prepare", election, id, tokenHash, true)
	if err != nil {
		return nil, err
	}
	cmps, ops := b.removeTxn(v, x, cooling, id, reason, "", false, time.Now(), b.mono.now(), nil)
	return func() (bool, error) {
		resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return false, err
		}
		if !resp.Succeeded {
			return false, b.catchUp(ctx, resp.Header.Revision)
		}
		return true, b.waitApplied(ctx, resp.Header.Revision)
	}, nil
}

// HoldCache stops the cache from applying what its watch delivers until
// release is called (once or more), as a replica whose watch lags behind
// does.
func (b *Backend) HoldCache() (release func()) {
	b.cache.applying.Lock()
	return sync.OnceFunc(b.cache.applying.Unlock)
}

// HoldWatchResume holds the cache's watch, the next time it resumes after
// ending (its member down or silent), until release is called (once or
// more); held receives the revision it will resume from. Later resumes
// are not held.
func (b *Backend) HoldWatchResume() (held <-chan int64, release func()) {
	ch, gate := make(chan int64, 1), make(chan struct{})
	var once sync.Once
	f := func(from int64) {
		once.Do(func() {
			ch <- from
			<-gate
		})
	}
	b.cache.onResume.Store(&f)
	return ch, sync.OnceFunc(func() { close(gate) })
}

// ProgressAhead feeds the cache a progress notification at rev, as etcd
// members that answer progress requests out of band may send one ahead of
// events still queued for the watch.
func (b *Backend) ProgressAhead(rev int64) {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	b.cache.progressed(rev)
	b.cache.signal()
}

// DistrustProgress makes the cache ignore progress notifications, as it
// does when a member is older than the versions ordersProgress trusts.
func (b *Backend) DistrustProgress() {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	b.cache.ordered = false
}

// TrustsProgress reports whether the cache counts progress notifications
// (see ordersProgress), once it has loaded.
func (b *Backend) TrustsProgress() bool {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	return b.cache.ordered
}

// Status is the Status that writes and heartbeats answer with, from the
// cache as it is.
func (b *Backend) Status(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	return b.status(ctx, "status", election, id, tokenHash)
}

// StatusOfSnapshot is gateway.StatusOf of the whole snapshot of election,
// from the cache as it is: what Status must equal.
func (b *Backend) StatusOfSnapshot(ctx context.Context, election, id string) (gateway.Status, bool, error) {
	v, rev, err := b.cached(ctx, election)
	if err != nil {
		return gateway.Status{}, false, err
	}
	st, ok := gateway.StatusOf(b.snapshot(v, rev, time.Now()), id)
	return st, ok, nil
}

// SetClock replaces the clock that stamps what b writes. Call it before
// b is used; now is called concurrently afterwards.
func (b *Backend) SetClock(now func() time.Time) { b.now = now }

// LeadUntil is the end of the latest handover delay that the lead record
// of election holds in this replica's cache, zero if none is running.
func (b *Backend) LeadUntil(ctx context.Context, election string) (time.Time, error) {
	var until time.Time
	err := b.cache.read(ctx, func(st *state) {
		if e := st.elections[election]; e != nil && e.lead != nil {
			for _, s := range e.lead.Slots {
				if s.Until.After(until) {
					until = s.Until
				}
			}
		}
	})
	return until, err
}

// CooldownUntil is the end of candidate id's cooldown as this replica's
// cache holds it, zero if it is not cooling.
func (b *Backend) CooldownUntil(ctx context.Context, election, id string) (time.Time, error) {
	var until time.Time
	err := b.cache.read(ctx, func(st *state) {
		if e := st.elections[election]; e != nil {
			for _, x := range e.cooling {
				if x.value.ID == id {
					until = x.value.CooldownUntil
				}
			}
		}
	})
	return until, err
}

// WrapKV makes b's reads and writes of keys go through wrap(kv), kv being
// the client's own, once b's cache has loaded: from then on only b's
// callers (and the reconciler they start) use the KV, so call it before
// them. Tests use it to make etcd's answers go wrong.
func (b *Backend) WrapKV(ctx context.Context, wrap func(clientv3.KV) clientv3.KV) error {
	if err := b.cache.read(ctx, func(*state) {}); err != nil {
		return err
	}
	b.cli.KV = wrap(b.cli.KV)
	return nil
}

// WrapLease makes b's lease calls (grants, keep-alives, revocations,
// lookups) go through wrap(lease), lease being the client's own, once b's
// cache has loaded; call it before b's callers, as WrapKV.
func (b *Backend) WrapLease(ctx context.Context, wrap func(clientv3.Lease) clientv3.Lease) error {
	if err := b.cache.read(ctx, func(*state) {}); err != nil {
		return err
	}
	b.cli.Lease = wrap(b.cli.Lease)
	return nil
}

// NewWithClock is New with the clock promises are timed on: now replaces
// time.Now (its readings must only grow), and a receive on moved makes
// Run look at its elections again, as the clock moved.
func NewWithClock(cfg Config, now func() time.Time, moved <-chan struct{}) (*Backend, error) {
	return newBackend(cfg, clock{now: now, moved: moved})
}

// LastPass is what the last pass of Run planned: every election changed up
// to cache revision rev, and every one whose next action was due by mono
// on the promise clock. ok is false before the first pass.
func (b *Backend) LastPass() (rev int64, mono time.Time, ok bool) {
	p := b.lastPass.Load()
	if p == nil {
		return 0, time.Time{}, false
	}
	return p.rev, p.mono, true
}

// PrepareTransfer computes, from this replica's view of election as it is
// now, the transaction that Transfer would commit to move the leadership
// to follower to, and returns a function that commits it later and
// reports whether its comparisons held, as PrepareRemove does.
func (b *Backend) PrepareTransfer(ctx context.Context, election, to string) (commit func() (bool, error), err error) {
	v, _, err := b.current(ctx, election)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(v.line, func(x *entry) bool { return x.value.ID == to })
	if len(v.holders) != 1 || i < 1 {
		return nil, fmt.Errorf("etcd: prepare transfer to %q: not one holder, or not a follower", to)
	}
	cmps, ops := b.transferTxn(v, 0, i, time.Now())
	return func() (bool, error) {
		resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return false, err
		}
		return resp.Succeeded, b.catchUp(ctx, resp.Header.Revision)
	}, nil
}

// WatchEndpoint is the endpoint of the member the cache's watch is on, ""
// while it has none.
func (b *Backend) WatchEndpoint() string {
	if m := b.cache.watching.Load(); m != nil {
		return m.url
	}
	return ""
}

// Requests counts the requests a Backend sends etcd through its KV and
// Lease, by kind ("txn", "get", "put", "grant", "keepalive", "revoke",
// "ttl"); the cache's watch is not counted.
type Requests struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *Requests) add(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[kind]++
}

// Take returns the counts since the last Take and starts again from 0.
func (r *Requests) Take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

// CountRequests makes b count its requests to etcd, once its cache has
// loaded (as WrapKV).
func (b *Backend) CountRequests(ctx context.Context) (*Requests, error) {
	r := &Requests{n: map[string]int{}}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { return countedKV{kv, r} }); err != nil {
		return nil, err
	}
	b.cli.Lease = countedLease{b.cli.Lease, r}
	return r, nil
}

type countedKV struct {
	clientv3.KV
	r *Requests
}

func (k countedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.r.add("get")
	return k.KV.Get(ctx, key, opts...)
}

func (k countedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	k.r.add("put")
	return k.KV.Put(ctx, key, val, opts...)
}

func (k countedKV) Txn(ctx context.Context) clientv3.Txn {
	k.r.add("txn") // every transaction the backend builds, it commits
	return k.KV.Txn(ctx)
}

type countedLease struct {
	clientv3.Lease
	r *Requests
}

func (l countedLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	l.r.add("grant")
	return l.Lease.Grant(ctx, ttl)
}

func (l countedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	l.r.add("keepalive")
	return l.Lease.KeepAliveOnce(ctx, id)
}

func (l countedLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	l.r.add("revoke")
	return l.Lease.Revoke(ctx, id)
}

func (l countedLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	l.r.add("ttl")
	return l.Lease.TimeToLive(ctx, id, opts...)
}

// PooledLeases returns how many leases of ttl (rounded up to whole
// seconds, as Campaign grants them) the pool holds.
func (b *Backend) PooledLeases(ttl time.Duration) int {
	secs := int64((ttl + time.Second - 1) / time.Second)
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	if c := b.pool.classes[secs]; c != nil {
		return len(c.free)
	}
	return 0
}

// AgePooledLeases makes the pooled leases look d older to the pool, as if
// granted d earlier.
func (b *Backend) AgePooledLeases(d time.Duration) {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	for _, c := range b.pool.classes {
		for i := range c.free {
			c.free[i].sent = c.free[i].sent.Add(-d)
		}
	}
}

// Feeds is how many Watches the cache feeds (feed.go).
func (b *Backend) Feeds() int {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	return len(b.cache.feeds)
}

// SetFeedBacklog sets how far behind the cache a Watch it feeds may fall
// before its channel closes (feedBacklog by default), for the feeds
// subscribed from now on.
func (b *Backend) SetFeedBacklog(n int) {
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	b.cache.backlog = n
}

// OnWriteBatch makes b call f with the size of each batch of writing
// transactions (1: one sent alone) before it is sent; f may block to hold
// the batch. Set it before b writes.
func (b *Backend) OnWriteBatch(f func(n int)) { b.members.batch.onSend.Store(&f) }

// QueuedWrites is how many writing transactions wait for a batch.
func (b *Backend) QueuedWrites() int {
	b.members.batch.mu.Lock()
	defer b.members.batch.mu.Unlock()
	return len(b.members.batch.queue)
}

// Following reports whether the cache follows etcd, as local reads
// require (cache.following).
func (b *Backend) Following() bool { return b.cache.following(b.members.timeout) }

// ErrOutcomeUnknown is what a guarded write whose outcome is unknown wraps.
var ErrOutcomeUnknown = errOutcomeUnknown

// LoseBatchAnswer makes etcd's answer to the next batch of writes that
// applies lost, as a connection cut after etcd applied it loses it: the
// attempt fails with an unavailable member's error.
func (b *Backend) LoseBatchAnswer() {
	var once sync.Once
	f := func(resp *clientv3.TxnResponse, err error) (*clientv3.TxnResponse, error) {
		lost := false
		if err == nil {
			once.Do(func() { lost = true })
		}
		if lost {
			return nil, status.Error(codes.Unavailable, "the connection was cut before the answer came")
		}
		return resp, err
	}
	b.members.batch.onAnswer.Store(&f)
}

// HeardAt is when the cache's watch last delivered, on the cache's
// monotonic clock (cache.heard); 0 while no watch follows.
func (b *Backend) HeardAt() time.Duration { return time.Duration(b.cache.heard.Load()) }
