package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/electorhq/elector/gateway"
)

// cache is a replica's copy of every key under the prefix, fed by one
// watch. Reads are served from it; writers wait until it has applied the
// revision of their write, so a replica reads its own writes.
//
// The cache knows two revisions. applied is the last revision whose events
// it has applied (or the revision it loaded at): everything etcd holds
// under the prefix up to applied is in the cache, because a watch delivers
// the events of one key range in revision order. st.rev, the revision the
// cache answers as of, is at least applied, and more when etcd said in a
// progress notification that nothing under the prefix changed up to a
// later revision. Only progress notifications that etcd sends in order
// with the events count (see ordersProgress); the others are ignored.
type cache struct {
	cli      *clientv3.Client
	members  *members // whose member the watch is on
	watching atomic.Pointer[member]
	// heard is when the watch following etcd last delivered (events or
	// a progress notification, applied), on the monotonic clock (sinceStart);
	// 0 while no watch follows (none open, or it has not delivered since
	// it opened). Local reads (gateway.WithLocalRead) are served from the
	// copy as it is only while it is recent (following).
	heard atomic.Int64
	log   *slog.Logger

	// applying is held while a watch response is applied. Tests hold it to
	// keep the cache behind etcd.
	applying sync.Mutex
	progress chan struct{} // a waiter asks the watch for a progress notification
	// onResume, when a test sets it, is called before a watch resumes
	// (on another member, or the same one again) from revision from; it
	// may block to hold the resume.
	onResume atomic.Pointer[func(from int64)]

	mu      sync.Mutex
	st      *state
	applied int64
	loaded  bool
	ordered bool          // every member sends progress notifications in order (ordersProgress)
	changed chan struct{} // closed and replaced whenever st moves
	dirty   map[string]bool
	all     bool           // every election is dirty (after a load)
	feeds   map[*feed]bool // the Watches fed the events derived here (feed.go)
	backlog int            // of each feed; 0 for feedBacklog (tests set it)

	// clock is the promise clock of the states it loads (promise.go);
	// departed, if set, is called under mu with the elector candidacies
	// that etcd removed in the revisions of one watch response (revoked.go).
	clock    func() time.Time
	departed func([]departure, time.Time)
}

func newCache(cli *clientv3.Client, p *members, k keys, log *slog.Logger) *cache {
	return &cache{cli: cli, members: p, log: log, st: newState(k), changed: make(chan struct{}), progress: make(chan struct{}, 1), dirty: map[string]bool{}}
}

// watchCtx gives the cache's watch a gRPC stream of its own: the client
// multiplexes watches whose contexts carry the same metadata onto one
// stream, and the stream of the per-subscriber watches (Watch) can be far
// busier than the cache's.
func watchCtx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), "elector-watch", "cache")
}

// apply applies one watch response.
func (c *cache) apply(wr clientv3.WatchResponse) {
	c.applying.Lock()
	defer c.applying.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if wr.IsProgressNotify() {
		c.progressed(wr.Header.Revision)
	}
	var gone []departure
	for _, batch := range byRevision(wr.Events) {
		rev := batch[0].Kv.ModRevision
		if rev <= c.applied {
			continue // a watch resumes from the last revision applied (follow)
		}
		c.st.dirty, c.st.departed = c.dirty, &gone
		c.publish(c.st.applyRevision(rev, batch, true)) // to the feeds, and to know st.last
		c.st.dirty, c.st.departed = nil, nil
		c.applied = max(c.applied, rev)
	}
	if len(gone) > 0 && c.departed != nil {
		c.departed(gone, time.Now()) // before waiters wake, so that they hear of it
	}
	c.signal()
}

// progressed takes in a progress notification at rev. Callers hold c.mu.
func (c *cache) progressed(rev int64) {
	if c.ordered {
		c.st.rev = max(c.st.rev, rev)
	}
}

// ordersProgress reports whether every member of p sends the progress notifications a client
// requests in order with the events of its watches, and only for watches that have been sent every event up to
// the notified revision. Older members answer such a request at once, out
// of band, possibly ahead of events still queued for the stream (etcd
// issues 15220 and 17507): a cache that believed them could claim a
// revision whose events it has not applied. The fixes are in etcd 3.4.31,
// 3.5.13 and 3.6, the versions Kubernetes requires for the same use. A
// member that cannot be asked counts as an older one.
func ordersProgress(ctx context.Context, p *members) bool {
	ok := make([]bool, len(p.list))
	var wg sync.WaitGroup
	for i, m := range p.list {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			resp, err := m.status(sctx)
			ok[i] = err == nil && progressInOrder(resp.Version)
		})
	}
	wg.Wait()
	return len(ok) > 0 && !slices.Contains(ok, false)
}

// statusTimeout bounds the version check of one member, so that a member
// that is down delays a reload by no more than that.
const statusTimeout = time.Second

// progressInOrder reports whether etcd version v ("3.5.17") orders
// requested progress notifications with events (see ordersProgress).
func progressInOrder(v string) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		return false
	}
	n := make([]int, 3)
	for i, p := range parts {
		p, _, _ = strings.Cut(p, "-") // "3.6.0-rc.1"
		x, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		n[i] = x
	}
	switch {
	case n[0] != 3:
		return n[0] > 3
	case n[1] == 4:
		return n[2] >= 31
	case n[1] == 5:
		return n[2] >= 13
	default:
		return n[1] > 5
	}
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

// tryRead runs f under the cache's lock if the state is loaded, and
// reports whether it was.
func (c *cache) tryRead(f func(st *state)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded {
		f(c.st)
	}
	return c.loaded
}

// holds reports whether the state is loaded and has applied the events of
// revision rev (as waitApplied waits for).
func (c *cache) holds(rev int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loaded && c.applied >= rev
}

// waitApplied waits until the cache has applied the events of revision
// rev, which must be the revision of a write under the prefix (its events
// come on the watch). Progress notifications do not count.
func (c *cache) waitApplied(ctx context.Context, rev int64) error {
	return c.wait(ctx, rev, false)
}

// waitRev waits until the cache answers as of revision rev or later: its
// events are applied, or etcd said in order that nothing under the prefix
// changed up to it. It asks the watch for progress notifications while it
// waits, so a revision that touched nothing under the prefix counts too
// when the members send them in order; with older members only events
// move the cache, and a revision of no event under the prefix is reached
// only by a later write (see Backend.catchUp).
func (c *cache) waitRev(ctx context.Context, rev int64) error {
	return c.wait(ctx, rev, true)
}

func (c *cache) wait(ctx context.Context, rev int64, progress bool) error {
	var tick <-chan time.Time
	for {
		c.mu.Lock()
		at := c.applied
		if progress {
			at = c.st.rev
		}
		ok := c.loaded && at >= rev
		ask := progress && c.ordered
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		if ask && tick == nil {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			tick = t.C
			c.askProgress()
		}
		select {
		case <-ch:
		case <-tick:
			c.askProgress()
		case <-ctx.Done():
			return fmt.Errorf("etcd: waiting for revision %d: %w", rev, gateway.ErrUnavailable)
		}
	}
}

// askProgress asks the watch for a progress notification, unless a request
// is already queued.
func (c *cache) askProgress() {
	select {
	case c.progress <- struct{}{}:
	default:
	}
}

// changes returns a channel closed at the next change.
func (c *cache) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// takeDirty returns the elections touched since the last call, or all set
// when the state was loaded afresh (every election may have changed).
func (c *cache) takeDirty() (names []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, c.all = c.all, false
	for n := range c.dirty {
		names = append(names, n)
	}
	clear(c.dirty)
	return names, all
}

// following reports whether a watch follows etcd and has delivered within
// d (a quiet watch asks for a progress notification after a third of
// MemberTimeout, so a healthy one is heard from more often than that).
func (c *cache) following(d time.Duration) bool {
	h := c.heard.Load()
	return h != 0 && sinceStart()-time.Duration(h) < d
}

// processStart is when the process started, as a reading of the monotonic
// clock; sinceStart is the time since, which a step of the wall clock
// does not move (a copy must not pass for recent because the clock was
// set back).
var processStart = time.Now()

func sinceStart() time.Duration { return max(time.Since(processStart), 1) }

// status returns the cache's revision and whether the state is loaded.
func (c *cache) status() (rev int64, loaded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.rev, c.loaded
}
