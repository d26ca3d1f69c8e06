package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/etcdtest"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/testnet"
)

// request is one call to a replica, as a load loop saw it.
type request struct {
	kind       string // "heartbeat", "read" or "write"
	replica    int
	start, end time.Time
	err        error
}

// load runs, on every replica until stop is called, two candidates that
// heartbeat every 100ms, a reader of their election and a writer that
// campaigns and resigns, and records every call.
type load struct {
	mu   sync.Mutex
	reqs []request
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func startLoad(t *testing.T, bs []*etcd.Backend) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{stop: cancel}
	record := func(kind string, i int, start time.Time, err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.reqs = append(l.reqs, request{kind, i, start, time.Now(), err})
	}
	// pace spaces out one loop's calls: pacing, not a wait for something.
	pace := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for i, b := range bs {
		e := fmt.Sprintf("frozen-%d", i)
		for j := range 2 {
			th := gateway.HashToken(gateway.NewToken())
			id := fmt.Sprintf("c%d", j)
			if _, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 5 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
				t.Fatal(err)
			}
			l.wg.Go(func() {
				for pace(100 * time.Millisecond) {
					start := time.Now()
					_, err := b.Heartbeat(ctx, e, id, th)
					record("heartbeat", i, start, err)
				}
			})
		}
		l.wg.Go(func() {
			for pace(50 * time.Millisecond) {
				start := time.Now()
				_, err := b.Election(ctx, e)
				record("read", i, start, err)
			}
		})
		l.wg.Go(func() {
			for n := 0; pace(100 * time.Millisecond); n++ {
				th := gateway.HashToken(gateway.NewToken())
				id := fmt.Sprintf("churn-%d", n)
				start := time.Now()
				_, err := b.Campaign(ctx, e+"-churn", gateway.Candidacy{ID: id, TTL: 5 * time.Second, TokenHash: th}, gateway.DefaultSettings())
				if err == nil {
					err = b.Resign(ctx, e+"-churn", id, th)
				}
				record("write", i, start, err)
			}
		})
	}
	t.Cleanup(func() { l.stop(); l.wg.Wait() })
	return l
}

// between returns the calls that started from from to to.
func (l *load) between(from, to time.Time) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []request
	for _, r := range l.reqs {
		if !r.start.Before(from) && !r.start.After(to) {
			out = append(out, r)
		}
	}
	return out
}

// TestRequestsGoOnWhileAFollowerIsFrozen stops (SIGSTOP) an etcd follower
// that a replica's watch follows, for twice the request timeout, while on
// three replicas connected to all three members candidates heartbeat,
// readers read and writers campaign and resign. A request sent to the
// stopped member would wait for its deadline and fail; instead every
// heartbeat and every read succeeds, every replica stays ready (Ping, and
// its cache catches up once its watch has moved). It logs the longest time a call took while the
// member was stopped, which MemberTimeout bounds to about its length (not
// asserted: timing).
func TestRequestsGoOnWhileAFollowerIsFrozen(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds etcd and runs three members: not in -short")
	}
	c := etcdtest.StartCluster(t, etcdtest.BuildModule(t), 3)
	ctx := context.Background()
	// watchedFollower returns a follower that a replica of bs watches
	// through, nil if none.
	watchedFollower := func(bs []*etcd.Backend) *etcdtest.Member {
		t.Helper()
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		leader, err := c.Leader(lctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			for _, m := range c.Members {
				if m != leader && m.ClientURL == b.WatchEndpoint() {
					return m
				}
			}
		}
		return nil
	}
	const requestTimeout = 3 * time.Second
	// Replicas until one watches through a follower (each starts its round
	// robin at a random member): that follower is stopped.
	var bs []*etcd.Backend
	for len(bs) < 3 || watchedFollower(bs) == nil {
		if len(bs) == 20 {
			t.Fatal("20 replicas, each watching through the raft leader")
		}
		b := newBackendOn(t, c.Endpoints(), "elector", func(cfg *etcd.Config) { cfg.RequestTimeout = requestTimeout })
		run(t, b)
		eventually.True(t, 10*time.Second, "the replica's watch", func() bool { return b.WatchEndpoint() != "" })
		bs = append(bs, b)
	}
	l := startLoad(t, bs)
	eventually.True(t, 10*time.Second, "the load under way", func() bool { return len(l.between(time.Time{}, time.Now())) > 50 })

	// Once more, now: the raft leader may have moved meanwhile.
	frozen := watchedFollower(bs)
	if frozen == nil {
		t.Fatal("no replica watches through a follower any more: the raft leader moved")
	}
	t.Logf("stopping follower %s for %s; replicas: %d", frozen.Name, 2*requestTimeout, len(bs))
	from := time.Now()
	frozen.Pause()
	ready := make([]bool, len(bs))
	for time.Since(from) < 2*requestTimeout {
		for i, b := range bs {
			pctx, cancel := context.WithTimeout(ctx, requestTimeout)
			if err := b.Ping(pctx); err != nil {
				t.Errorf("replica %d: ping %s into the stop: %v", i, time.Since(from).Round(time.Millisecond), err)
			}
			ready[i] = ready[i] || b.CaughtUp(pctx) == nil
			cancel()
		}
	}
	frozen.Resume()
	to := time.Now()
	for i, ok := range ready {
		if !ok {
			t.Errorf("replica %d: its cache did not catch up while the follower was stopped", i)
		}
	}
	eventually.True(t, 10*time.Second, "calls after the stop", func() bool { return len(l.between(to, time.Now())) > 50 })
	l.stop()
	l.wg.Wait()

	reqs := l.between(from, to)
	var longest request
	byKind := map[string]time.Duration{}
	failed := 0
	for _, r := range reqs {
		d := r.end.Sub(r.start)
		byKind[r.kind] = max(byKind[r.kind], d)
		if d > longest.end.Sub(longest.start) {
			longest = r
		}
		switch {
		case r.err != nil && r.kind != "write":
			failed++
			if failed <= 10 {
				t.Errorf("replica %d: %s %s into the stop failed after %s: %v", r.replica, r.kind, r.start.Sub(from).Round(time.Millisecond), d.Round(time.Millisecond), r.err)
			}
		case r.err != nil:
			// A write whose attempt waited on the stopped member, and whose
			// next attempt found the election changed, cannot tell whether
			// the first applied: it fails as a timeout would.
			t.Logf("replica %d: write %s into the stop failed after %s: %v", r.replica, r.start.Sub(from).Round(time.Millisecond), d.Round(time.Millisecond), r.err)
		}
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var longestBy []string
	for _, k := range kinds {
		longestBy = append(longestBy, fmt.Sprintf("%s %s", k, byKind[k].Round(time.Millisecond)))
	}
	t.Logf("%d calls while the follower was stopped (%s); %d failed; the longest took %s (%s on replica %d, %s into the stop); longest by kind: %v",
		len(reqs), to.Sub(from).Round(time.Millisecond), failed, longest.end.Sub(longest.start).Round(time.Millisecond), longest.kind, longest.replica,
		longest.start.Sub(from).Round(time.Millisecond), longestBy)
}

// TestReplicaCutOffFromEveryMemberComesBack cuts a replica off from all
// three members (every connection dropped, new ones refused) for longer
// than its request timeout, then heals: the replica is unavailable
// meanwhile (Ping fails, as /readyz must), and ready again after the heal
// (Ping, and its cache catches up), which it reaches by itself. It logs how
// long after the heal that took.
func TestReplicaCutOffFromEveryMemberComesBack(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three etcd members: not in -short")
	}
	ms := startCluster(t, 3)
	var proxies []*testnet.Proxy
	var eps []string
	for _, m := range ms {
		p := testnet.NewProxy(t, m.client.Host)
		proxies = append(proxies, p)
		eps = append(eps, "http://"+p.Addr())
	}
	b := newBackendOn(t, eps, "elector")
	run(t, b)
	other := newBackend(t, ms, "elector")
	candidate(t, b, "cut", "a", 10*time.Second) // outlives the cut
	ctx := context.Background()
	eventually.True(t, 10*time.Second, "the replica ready", func() bool { return b.Ping(ctx) == nil && b.CaughtUp(ctx) == nil })

	for _, p := range proxies {
		p.Cut()
	}
	cut := time.Now()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	if err := b.Ping(pctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("ping cut off from every member: %v, want ErrUnavailable", err)
	}
	cancel()
	// A write through another replica meanwhile, which the cut off one
	// must catch up with.
	candidate(t, other, "cut", "b", 5*time.Second)
	hold := time.NewTimer(5*time.Second - time.Since(cut)) // the cut's length, past the request timeout
	<-hold.C
	for _, p := range proxies {
		p.Heal()
	}
	healed := time.Now()
	eventually.True(t, 10*time.Second, "the replica ready after the heal", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return b.Ping(pctx) == nil && b.CaughtUp(pctx) == nil
	})
	t.Logf("ready %s after the heal", time.Since(healed).Round(time.Millisecond))
	waitLine(t, b, "cut", "a:leader", "b:follower")
}

// TestRevocationOutlastsAnOutage: a lease whose revocation etcd did not
// answer (the replica cut off from it) is revoked once etcd answers again,
// not left to its TTL: a candidacy whose campaign's outcome was unknown
// leaves the line then, and its candidate can campaign again.
func TestRevocationOutlastsAnOutage(t *testing.T) {
	ms := startCluster(t, 1)
	p := testnet.NewProxy(t, ms[0].client.Host)
	b := newBackendOn(t, []string{"http://" + p.Addr()}, "elector")
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints(ms), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 120)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "elector-revoke-test", "x", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}

	p.Cut()
	b.RevokeLease(int64(lease.ID))
	eventually.True(t, 20*time.Second, "a revocation to fail while the replica is cut off", func() bool { return b.RevokeFailures() > 0 })
	if ttl, err := cli.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL <= 0 {
		t.Fatalf("the lease during the cut: %+v, %v; want it alive", ttl, err)
	}
	p.Heal()
	eventually.NoError(t, 30*time.Second, "the lease revoked after the cut", func() error {
		ttl, err := cli.TimeToLive(ctx, lease.ID)
		if err != nil {
			return err
		}
		if ttl.TTL != -1 {
			return fmt.Errorf("lease alive, %d s left", ttl.TTL)
		}
		return nil
	})
	if res, err := cli.Get(ctx, "elector-revoke-test"); err != nil || len(res.Kvs) != 0 {
		t.Fatalf("the key on the lease: %v, %v; want it gone with the lease", res, err)
	}
}
