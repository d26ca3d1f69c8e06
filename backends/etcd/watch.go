package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// watchBuffer is how many events a watcher's channel holds.
const watchBuffer = 64

// Watch implements gateway.Backend. A watcher that starts where this
// replica's cache is (after "", or after the cache's Head: a hub that
// follows every election) gets the events the cache derives (see feed).
// Any other follows etcd with a watch of its own from the revision after
// its cursor and derives the events from the keys at the revision before
// (see applyRevision). Both derive the same events with the same ids from
// etcd's history, so a watcher resumes on any replica. It returns
// gateway.ErrCursorExpired when after does not parse, names a revision
// etcd has not reached, or one it has compacted, and
// gateway.ErrUnavailable when etcd cannot be read. The channel closes when
// ctx ends, when the backend closes, when the etcd watch breaks (a
// compaction, a member without leader; the cache's watch, which moves to
// another member by itself, only when it must load the state afresh), or
// when a watcher fed by the cache falls more than feedBacklog events
// behind; the receiver resumes with the id of the last event it got.
func (b *Backend) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	for {
		if f := b.cache.subscribe(election, after); f != nil {
			return b.cache.deliver(ctx, b.done.Done(), f), nil
		}
		if after != "" {
			break // a cursor elsewhere than the cache: a watch of its own
		}
		// No cursor: a feed from where the cache is, once it has loaded the
		// state (again, if it reloads between the wait and the subscription).
		rctx, cancel := b.reqCtx(ctx)
		err := b.cache.read(rctx, func(*state) {})
		cancel()
		if err != nil {
			return nil, err
		}
	}
	rev, index, ok := parseCursor(after)
	if !ok {
		return nil, fmt.Errorf("etcd: watch after %q: %w", after, gateway.ErrCursorExpired)
	}
	load, from := rev, rev+1
	skip := -1 // the events of revision from with an index up to skip were delivered
	if index >= 0 {
		load, from, skip = rev-1, rev, index
	}
	if load < 1 {
		return nil, fmt.Errorf("etcd: watch after %q: %w", after, gateway.ErrCursorExpired)
	}
	rctx, cancel := b.reqCtx(ctx)
	kvs, current, err := loadKeys(rctx, b.cli, b.keys, load)
	cancel()
	if err != nil {
		return nil, translate(ctx, fmt.Sprintf("watch after %q", after), err)
	}
	if current < rev {
		return nil, fmt.Errorf("etcd: watch after %q: revision %d is in the future: %w", after, rev, gateway.ErrCursorExpired)
	}
	st := newState(b.keys)
	st.load(kvs, load)

	// The watch ends with ctx or with the backend.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stop := context.AfterFunc(b.done, cancel)
	wch := b.cli.Watch(wctx, b.keys.root(), clientv3.WithPrefix(), clientv3.WithRev(from))
	out := make(chan gateway.Event, watchBuffer)
	go func() {
		defer close(out)
		defer stop()
		defer cancel()
		for wr := range wch {
			if wr.Err() != nil || wr.Canceled {
				return
			}
			for _, batch := range byRevision(wr.Events) {
				rev := batch[0].Kv.ModRevision
				for _, e := range st.applyRevision(rev, batch, true) {
					if (election != "" && e.Election != election) || (rev == from && skip >= 0 && indexOf(e.ID) <= skip) {
						continue
					}
					select {
					case out <- e:
					case <-wctx.Done():
						return
					}
				}
			}
		}
	}()
	return out, nil
}

// indexOf returns the index part of an event id made by eventID.
func indexOf(id string) int {
	_, i, _ := parseCursor(id)
	return i
}
