package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// routedClient returns the etcd client the backend's code (and Client's
// callers) use: its KV, Lease and Watcher send each request to the members
// of p as do decides, so a member that stops answering costs a request
// about MemberTimeout rather than its whole deadline. Cluster, Auth and
// Maintenance, which only tools and tests use, are the first member's.
// The client ends with ctx; closing it closes no member's client (members
// close does).
func routedClient(ctx context.Context, p *members) *clientv3.Client {
	cli := clientv3.NewCtxClient(ctx, clientv3.WithZapLogger(zap.NewNop()))
	cli.KV = routedKV{p}
	cli.Lease = routedLease{p}
	cli.Watcher = routedWatcher{p}
	if first := p.pick(nil); first != nil {
		c := first.cli.Load()
		cli.Cluster, cli.Auth, cli.Maintenance = c.Cluster, c.Auth, c.Maintenance
	}
	return cli
}

// routedKV is a clientv3.KV over members: every request but a writing
// transaction is idempotent, a writing transaction is guarded (see
// repeat).
type routedKV struct{ p *members }

func (k routedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	return do(ctx, k.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.PutResponse, error) {
		return c.Put(ctx, key, val, opts...)
	})
}

func (k routedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return do(ctx, k.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.GetResponse, error) {
		return c.Get(ctx, key, opts...)
	})
}

// GetStream, which elector does not use, stays with the member it starts
// on.
func (k routedKV) GetStream(ctx context.Context, key string, opts ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	m := k.p.pick(nil)
	if m == nil {
		return nil, errNoMember
	}
	return m.cli.Load().GetStream(ctx, key, opts...)
}

func (k routedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	return do(ctx, k.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.DeleteResponse, error) {
		return c.Delete(ctx, key, opts...)
	})
}

func (k routedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return do(ctx, k.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.CompactResponse, error) {
		return c.Compact(ctx, rev, opts...)
	})
}

func (k routedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	r := idempotent
	if op.IsTxn() {
		r = guarded
	}
	return do(ctx, k.p, r, func(resp clientv3.OpResponse) bool { return resp.Txn() == nil || resp.Txn().Succeeded },
		func(ctx context.Context, c *clientv3.Client) (clientv3.OpResponse, error) { return c.Do(ctx, op) })
}

func (k routedKV) Txn(ctx context.Context) clientv3.Txn { return &routedTxn{ctx: ctx, p: k.p} }

// routedTxn collects a transaction and commits it as do decides:
// idempotent when it only reads, guarded when it writes, then alone or in a
// batch with others (see batcher).
type routedTxn struct {
	ctx              context.Context
	p                *members
	cmps             []clientv3.Cmp
	thens, elses     []clientv3.Op
	cmpSet, thenSet  bool
	elseSet, invalid bool
}

// If, Then and Else keep clientv3's rules (If before Then before Else,
// each once); a transaction breaking them panics at Commit, where each
// attempt builds it anew with its member's client.
func (t *routedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.invalid = t.invalid || t.cmpSet || t.thenSet || t.elseSet
	t.cmpSet, t.cmps = true, cs
	return t
}

func (t *routedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.invalid = t.invalid || t.thenSet || t.elseSet
	t.thenSet, t.thens = true, ops
	return t
}

func (t *routedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.invalid = t.invalid || t.elseSet
	t.elseSet, t.elses = true, ops
	return t
}

func (t *routedTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.invalid {
		panic("etcd: transaction built out of order (If, Then, Else, each once)")
	}
	for _, op := range append(t.thens[:len(t.thens):len(t.thens)], t.elses...) {
		if !op.IsGet() {
			return t.p.batch.commit(t.ctx, txnRequest(t.cmps, t.thens, t.elses))
		}
	}
	return do(t.ctx, t.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
		return c.Txn(ctx).If(t.cmps...).Then(t.thens...).Else(t.elses...).Commit()
	})
}

// routedLease is a clientv3.Lease over members. KeepAlive, a stream that
// only tests and tools use (concurrency.Session), stays with the member it
// starts on.
type routedLease struct{ p *members }

func (l routedLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	return do(ctx, l.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseGrantResponse, error) {
		return c.Grant(ctx, ttl)
	})
}

func (l routedLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	return do(ctx, l.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseRevokeResponse, error) {
		return c.Revoke(ctx, id)
	})
}

func (l routedLease) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	return do(ctx, l.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseTimeToLiveResponse, error) {
		return c.TimeToLive(ctx, id, opts...)
	})
}

func (l routedLease) Leases(ctx context.Context) (*clientv3.LeaseLeasesResponse, error) {
	return do(ctx, l.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseLeasesResponse, error) {
		return c.Leases(ctx)
	})
}

func (l routedLease) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	m := l.p.pick(nil)
	if m == nil {
		return nil, errNoMember
	}
	return m.cli.Load().KeepAlive(ctx, id)
}

func (l routedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return do(ctx, l.p, idempotent, nil, func(ctx context.Context, c *clientv3.Client) (*clientv3.LeaseKeepAliveResponse, error) {
		return c.KeepAliveOnce(ctx, id)
	})
}

// Close does nothing: the members' clients close with the backend.
func (l routedLease) Close() error { return nil }

// routedWatcher is a clientv3.Watcher over members: a watch starts on the
// member pick gives and ends (its channel closes) when that member goes
// down, so that its receiver resumes it, from its last revision, on
// another member. A stopped member sends a watch nothing, not even an
// error; without this the watch would wait for it.
type routedWatcher struct{ p *members }

func (w routedWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	m := w.p.pick(nil)
	if m == nil {
		ch := make(chan clientv3.WatchResponse)
		close(ch)
		return ch
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(m.goneCtx(), cancel)
	context.AfterFunc(wctx, func() { stop() })
	return m.cli.Load().Watch(wctx, key, opts...)
}

// RequestProgress asks every member for a progress notification of the
// watches of ctx's stream; it returns the first error.
func (w routedWatcher) RequestProgress(ctx context.Context) error {
	var first error
	for _, m := range w.p.list {
		if c := m.cli.Load(); c != nil {
			if err := c.RequestProgress(ctx); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Close does nothing: the members' clients close with the backend.
func (w routedWatcher) Close() error { return nil }
