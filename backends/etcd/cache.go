package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// cache is a replica's copy of every key under the prefix, fed by one
// watch. Reads are served from it; writers wait until it has caught up with
// the revision of their write, so a replica reads its own writes.
type cache struct {
	cli *clientv3.Client
	log *slog.Logger

	mu      sync.Mutex
	st      *state
	loaded  bool
	changed chan struct{} // closed and replaced whenever st moves
}

func newCache(cli *clientv3.Client, k keys, log *slog.Logger) *cache {
	return &cache{cli: cli, log: log, st: newState(k), changed: make(chan struct{})}
}

// run loads the keys and follows them until ctx ends. When the watch
// breaks (no leader, compaction, connection lost for good) it loads again.
func (c *cache) run(ctx context.Context, requestTimeout time.Duration) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := c.follow(ctx, requestTimeout); err != nil && ctx.Err() == nil {
			c.log.LogAttrs(ctx, slog.LevelWarn, "etcd: reloading election state", slog.String("error", err.Error()))
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

func (c *cache) follow(ctx context.Context, requestTimeout time.Duration) error {
	gctx, cancel := context.WithTimeout(ctx, requestTimeout)
	kvs, rev, err := loadKeys(gctx, c.cli, c.st.keys, 0)
	cancel()
	if err != nil {
		return err
	}
	st := newState(c.st.keys)
	st.load(kvs, rev)
	c.mu.Lock()
	c.st, c.loaded = st, true
	c.signal()
	c.mu.Unlock()

	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := c.cli.Watch(wctx, c.st.keys.root(), clientv3.WithPrefix(), clientv3.WithRev(st.rev+1))
	for wr := range wch {
		if err := wr.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		if wr.IsProgressNotify() {
			c.st.rev = max(c.st.rev, wr.Header.Revision)
		}
		for _, batch := range byRevision(wr.Events) {
			c.st.applyRevision(batch[0].Kv.ModRevision, batch, time.Time{}, false)
		}
		c.signal()
		c.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("watch closed")
}

// loadKeys reads the keys under the prefix at revision rev (0: the current
// one) and returns them with etcd's current revision. It leaves out the
// KV's keys, with two range reads at that revision: no state needs them,
// and the KV may hold far more bytes than the elections.
func loadKeys(ctx context.Context, cli *clientv3.Client, k keys, rev int64) ([]*mvccpb.KeyValue, int64, error) {
	before, err := cli.Get(ctx, k.root(), clientv3.WithRange(k.kvDir()), clientv3.WithRev(rev))
	if err != nil {
		return nil, 0, err
	}
	at := rev
	if at == 0 {
		at = before.Header.Revision
	}
	after, err := cli.Get(ctx, k.kvEnd(), clientv3.WithRange(k.rootEnd()), clientv3.WithRev(at))
	if err != nil {
		return nil, 0, err
	}
	return append(before.Kvs, after.Kvs...), before.Header.Revision, nil
}

// byRevision splits a watch response's events by revision (a response
// never splits one revision).
func byRevision(evs []*clientv3.Event) [][]*clientv3.Event {
	var out [][]*clientv3.Event
	for i := 0; i < len(evs); {
		j := i + 1
		for j < len(evs) && evs[j].Kv.ModRevision == evs[i].Kv.ModRevision {
			j++
		}
		out = append(out, evs[i:j])
		i = j
	}
	return out
}

// signal wakes waiters. Callers hold c.mu.
func (c *cache) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// read calls f with the state once it is loaded (waiting as long as ctx
// allows). f must not keep st.
func (c *cache) read(ctx context.Context, f func(st *state)) error {
	for {
		c.mu.Lock()
		if c.loaded {
			f(c.st)
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("etcd: election state not loaded: %w", gateway.ErrUnavailable)
		}
	}
}

// waitRev waits until the cache holds revision rev. When the revision
// touched nothing under the prefix, the watch is asked for a progress
// notification, which moves the cache to the store's revision.
func (c *cache) waitRev(ctx context.Context, rev int64) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		ok := c.loaded && c.st.rev >= rev
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-tick.C:
			_ = c.cli.RequestProgress(clientv3.WithRequireLeader(ctx))
		case <-ctx.Done():
			return fmt.Errorf("etcd: waiting for revision %d: %w", rev, gateway.ErrUnavailable)
		}
	}
}

// changes returns a channel closed at the next change.
func (c *cache) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// status returns the cache's revision and whether the state is loaded.
func (c *cache) status() (rev int64, loaded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.rev, c.loaded
}
