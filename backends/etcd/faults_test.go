package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
)

func TestConformanceThreeMembers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three etcd members: not in -short")
	}
	ms := startCluster(t, 3)
	// Three members share this machine's cores with everything else.
	backendtest.Run(t, conformance(ms, 40, modelOpsBeside))
	t.Run("KV", func(t *testing.T) {
		backendtest.RunKV(t, func(t *testing.T) gateway.KV { return newBackend(t, ms, "elector") })
	})
}

// candidate campaigns and heartbeats every ttl/6, ignoring failures (etcd
// may be between leaders), until the test ends.
func candidate(t *testing.T, b gateway.Backend, e, id string, ttl time.Duration) (string, gateway.Status) {
	t.Helper()
	th := gateway.HashToken(gateway.NewToken())
	st, err := b.Campaign(context.Background(), e, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, gateway.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 6)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = b.Heartbeat(ctx, e, id, th)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return th, st
}

// follow records the events of election e until the test ends, resuming
// from the last event whenever the stream closes (its member lost its
// leader or stopped).
func follow(t *testing.T, b gateway.Backend, e string) (get func() []gateway.Event) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu  sync.Mutex
		got []gateway.Event
	)
	first, err := b.Watch(ctx, e, "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch, last := first, ""
		for ctx.Err() == nil {
			for ev := range ch {
				mu.Lock()
				got = append(got, ev)
				mu.Unlock()
				last = ev.ID
			}
			for ctx.Err() == nil {
				if ch, err = b.Watch(ctx, e, last); err == nil {
					break
				}
				if errors.Is(err, gateway.ErrCursorExpired) {
					t.Errorf("resume after %q: %v", last, err)
					return
				}
				// Spaces out the attempts while etcd is between leaders:
				// pacing, not a wait for something.
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []gateway.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// churn has n candidates campaign and resign in turn in election e until
// stop is called, ignoring failures while etcd is between leaders.
func churn(b gateway.Backend, e string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("churn-%d", i)
			for ctx.Err() == nil {
				th := gateway.HashToken(gateway.NewToken())
				// The sleeps space out the load (a campaign refused while
				// etcd is between leaders, a leadership held for a while);
				// nothing waits on them.
				if _, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 2 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
				_ = b.Resign(ctx, e, id, th)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// TestStoppingRaftLeaderKeepsElectionsWorking stops the member that is
// etcd's raft leader while candidates heartbeat and others campaign and
// resign, through a backend connected to all three members: nobody who
// heartbeats is dropped, the leader keeps its term, the elections go on on
// the two members left, and the event stream (resumed across the stop) is
// a valid succession of leaderships.
func TestStoppingRaftLeaderKeepsElectionsWorking(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three etcd members: not in -short")
	}
	ms := startCluster(t, 3)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx := context.Background()
	const e, busy = "failover", "failover-churn"
	tha, a := candidate(t, b, e, "a", 3*time.Second)
	candidate(t, b, e, "b", 3*time.Second)
	waitLine(t, b, e, "a:leader", "b:follower")
	events := follow(t, b, busy)
	stopChurn := churn(b, busy, 4)
	defer stopChurn()

	leaderships := func(after time.Time) int {
		n := 0
		for _, ev := range events() {
			if ev.Type == gateway.EventLeaderBegin && !ev.Time.Before(after) {
				n++
			}
		}
		return n
	}
	eventually.True(t, 10*time.Second, "the churn under way", func() bool { return leaderships(time.Time{}) >= 3 })
	var stopped time.Time
	for _, m := range ms {
		if m.e.Server.Leader() == m.e.Server.MemberID() {
			t.Logf("stopping raft leader %s", m.name)
			stopped = time.Now()
			m.stop()
			break
		}
	}
	// Two TTLs later, through the leader election of the two members left,
	// both candidates are still there and a still leads its term: wait
	// until a heartbeat of a after that has been answered (its expiry is
	// then more than three TTLs past the stop) and the churn has gone on.
	ttl := 3 * time.Second
	eventually.True(t, 30*time.Second, "a heartbeat of a answered two TTLs after the raft leader stopped, and the churn going on", func() bool {
		s, err := b.Election(ctx, e)
		return err == nil && s.Leader != nil && s.Leader.ExpiresAt.After(stopped.Add(3*ttl)) && leaderships(stopped) >= 3
	})
	stopChurn()
	s, err := b.Election(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if s.Leader == nil || s.Leader.ID != "a" || s.Term != a.Term || len(s.Candidates) != 2 {
		t.Fatalf("after the raft leader stopped: leader %+v term %d candidates %d, want a still leading term %d with b behind", s.Leader, s.Term, len(s.Candidates), a.Term)
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ping with two members of three: %v", err)
	}
	if err := b.Resign(ctx, e, "a", tha); err != nil {
		t.Fatal(err)
	}
	waitLine(t, b, e, "b:leader")
	candidate(t, b, e, "c", 3*time.Second)
	waitLine(t, b, e, "b:leader", "c:follower")

	// A last candidacy marks the end: once the stream has delivered its
	// event, it has delivered every event before it.
	candidate(t, b, busy, "marker", 3*time.Second)
	eventually.True(t, 10*time.Second, "the churn's stream to catch up", func() bool {
		return slices.ContainsFunc(events(), func(ev gateway.Event) bool {
			return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "marker"
		})
	})
	got := events()
	if err := backendtest.CheckEvents(got); err != nil {
		t.Fatalf("churn events across the stop: %v", err)
	}
	before, after := 0, 0
	for _, ev := range got {
		if ev.Type == gateway.EventLeaderBegin {
			if ev.Time.Before(stopped) {
				before++
			} else {
				after++
			}
		}
	}
	t.Logf("churn: %d events, %d leaderships before the stop and %d after", len(got), before, after)
	if after < 3 {
		t.Fatalf("only %d leaderships in the churn after the raft leader stopped", after)
	}
}

// TestRestartKeepsCandidates stops the only etcd member: Ping fails and
// calls fail with ErrUnavailable; once it is back, the candidates whose
// leases are valid are still there, with the same leader and term.
func TestRestartKeepsCandidates(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx := context.Background()
	const e = "restart"
	th, a := candidate(t, b, e, "a", 10*time.Second)
	candidate(t, b, e, "b", 10*time.Second)
	waitLine(t, b, e, "a:leader", "b:follower")

	ms[0].stop() // takes etcd's request timeout: it waits for the backend's watch streams
	down, cancel := context.WithTimeout(ctx, time.Second)
	err := b.Ping(down)
	if !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("ping with etcd down: %v, want ErrUnavailable", err)
	}
	cancel()
	down, cancel = context.WithTimeout(ctx, time.Second)
	_, err = b.Heartbeat(down, e, "a", th)
	cancel()
	if !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("heartbeat with etcd down: %v, want ErrUnavailable", err)
	}
	t0 := time.Now()
	if err := ms[0].start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd restarted in %s", time.Since(t0).Round(time.Millisecond))
	eventually.NoError(t, 10*time.Second, "a ping after etcd restarted", func() error { return b.Ping(ctx) })
	t.Logf("ping succeeds %s after the restart began", time.Since(t0).Round(time.Millisecond))
	st, err := b.Heartbeat(ctx, e, "a", th)
	if err != nil {
		t.Fatalf("heartbeat after the restart: %v", err)
	}
	if st.Candidate.State != gateway.StateLeader || st.Term != a.Term {
		t.Fatalf("after the restart: %+v, want a leading term %d", st, a.Term)
	}
	waitLine(t, b, e, "a:leader", "b:follower")
}

// TestCompactedCursorIsExpired resumes from an event older than etcd's
// compaction.
func TestCompactedCursorIsExpired(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := b.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	candidate(t, b, "compact", "a", 10*time.Second)
	first := events{w}.next(t, gateway.EventCandidateJoined, 5*time.Second)
	if _, err := b.Watch(ctx, "", first.ID); err != nil {
		t.Fatalf("watch after %s before compaction: %v", first.ID, err)
	}
	candidate(t, b, "compact", "b", 10*time.Second)
	resp, err := b.Client().Get(ctx, "elector/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Watch(ctx, "", first.ID); !errors.Is(err, gateway.ErrCursorExpired) {
		t.Fatalf("watch after %s, compacted: %v, want ErrCursorExpired", first.ID, err)
	}
	s, err := b.Election(ctx, "compact")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Watch(ctx, "compact", s.Cursor); err != nil {
		t.Fatalf("watch from a fresh snapshot's cursor %s: %v", s.Cursor, err)
	}
}
