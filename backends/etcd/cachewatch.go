package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// run loads the keys and follows them until ctx ends (see follow). When it
// cannot load them, or the watch cannot resume (a compaction), it loads
// again, backing off while that fails.
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

// Errors a watch of the cache ends with, besides etcd's.
var (
	errWatchStalled = errors.New("the member sent nothing, not even a progress notification it was asked for")
	errMemberDown   = errors.New("the member went down")
	errWatchClosed  = errors.New("watch closed")
)

// follow loads the keys, then follows them with a watch on one member,
// and, whenever that watch ends (its member went down or stopped sending,
// lost its leader, or the stream broke), resumes it on another member
// from the last revision applied (whose events it skips, see apply): the
// cache loses nothing and reloads nothing. It returns when ctx ends (nil), or when the state
// cannot be loaded or the watch cannot resume because etcd compacted the
// revision it needs.
func (c *cache) follow(ctx context.Context, requestTimeout time.Duration) error {
	gctx, cancel := context.WithTimeout(ctx, requestTimeout)
	kvs, rev, err := loadKeys(gctx, c.cli, c.st.keys, 0)
	ordered := err == nil && ordersProgress(gctx, c.members)
	cancel()
	if err != nil {
		return err
	}
	st := newState(c.st.keys)
	st.clock, st.leases = c.clock, newLeaseCount()
	st.load(kvs, rev)
	c.mu.Lock()
	c.st, c.applied, c.loaded, c.ordered, c.all = st, rev, true, ordered, true
	c.endFeeds()
	c.signal()
	c.mu.Unlock()

	var last *member
	pause := time.Duration(0)
	for {
		m := c.members.pick(func(x *member) bool { return x == last })
		if m == nil {
			m = c.members.pick(nil) // the only member, or none connected
		}
		if m == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(c.members.retryPause()):
			}
			continue
		}
		// From the revision applied, not the one after it: etcd answers no
		// progress request of a watch that starts past its current
		// revision (3.4.24, 3.5.8 and later), so on an etcd nobody writes
		// to, a watch from the next revision would look like a member that
		// stopped answering and be given up again and again. The events of
		// that revision, which the cache holds, are skipped (apply).
		c.mu.Lock()
		from := c.applied
		c.mu.Unlock()
		if f := c.onResume.Load(); f != nil && last != nil {
			(*f)(from)
		}
		heard, err := c.watch(ctx, m, from)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, rpctypes.ErrCompacted):
			return err
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "etcd: watch moving to another member", slog.String("endpoint", m.url), slog.Int64("from", from), slog.String("reason", err.Error()))
		last = m
		// A watch that ends at once again and again (every member down or
		// refusing it) is retried with a growing pause, or as soon as a
		// member comes back.
		pause = min(2*pause+c.members.retryPause()/4, 2*time.Second)
		if heard {
			pause = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.members.changes():
		case <-time.After(pause):
		}
	}
}

// watch follows the prefix with a watch on member m from revision from,
// applying what it delivers, until ctx ends, the member goes down, or the
// watch breaks. A stopped member sends nothing and says nothing; so while
// the watch is quiet for a third of MemberTimeout it asks for a progress
// notification, which every etcd version answers on a live stream with
// nothing pending (events count as an answer, and so does time spent
// applying them), and when none comes within MemberTimeout it gives up
// on the member (errWatchStalled). It also sends the progress requests of
// waiters (askProgress). heard is whether anything came.
func (c *cache) watch(ctx context.Context, m *member, from int64) (heard bool, err error) {
	cli := m.cli.Load()
	c.watching.Store(m)
	defer c.watching.Store(nil)
	defer c.heard.Store(0)
	wctx, cancel := context.WithCancel(watchCtx(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	stop := context.AfterFunc(m.goneCtx(), cancel)
	defer stop()
	wch := cli.Watch(wctx, c.st.keys.root(), clientv3.WithPrefix(), clientv3.WithRev(from))

	quiet, timeout := c.members.retryPause(), c.members.timeout
	var (
		last     atomic.Int64 // when the watch last delivered, or an apply ended (unix ns)
		applying atomic.Bool
		stalled  atomic.Bool
	)
	last.Store(time.Now().UnixNano())
	wg.Go(func() {
		tick := time.NewTicker(quiet)
		defer tick.Stop()
		var asked time.Time
		for {
			select {
			case <-wctx.Done():
				return
			case <-c.progress:
				_ = cli.RequestProgress(wctx)
			case now := <-tick.C:
				heard := time.Unix(0, last.Load())
				switch {
				case applying.Load() || now.Sub(heard) < quiet:
				case asked.Before(heard):
					asked = now
					_ = cli.RequestProgress(wctx)
				case now.Sub(asked) > timeout:
					stalled.Store(true)
					cancel()
					return
				}
			}
		}
	})
	for wr := range wch {
		heard = true
		last.Store(time.Now().UnixNano())
		if err := wr.Err(); err != nil {
			return heard, err
		}
		applying.Store(true)
		c.apply(wr)
		applying.Store(false)
		c.heard.Store(int64(sinceStart()))
		last.Store(time.Now().UnixNano())
	}
	switch {
	case stalled.Load():
		return heard, fmt.Errorf("%w for %s", errWatchStalled, timeout)
	case m.goneCtx().Err() != nil:
		return heard, errMemberDown
	}
	return heard, errWatchClosed
}
