package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestConformanceThreeMembers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three etcd members: not in -short")
	}
	ms := startCluster(t, 3)
	backendtest.Run(t, backendtest.Harness{
		New:     func(t *testing.T) gateway.Backend { return newBackend(t, ms, "elector") },
		Replica: func(t *testing.T, _ gateway.Backend) gateway.Backend { return newBackend(t, ms, "elector") },
		// Three members share this machine's cores with everything else.
		Candidates: 40,
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

// TestStoppingRaftLeaderKeepsElectionsWorking stops the member that is
// etcd's raft leader while candidates heartbeat through a backend connected
// to all three members: nobody is dropped, the leader keeps its term, and
// a handover and a new campaign work on the two members left.
func TestStoppingRaftLeaderKeepsElectionsWorking(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("three etcd members: not in -short")
	}
	ms := startCluster(t, 3)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx := context.Background()
	const e = "failover"
	tha, a := candidate(t, b, e, "a", 3*time.Second)
	candidate(t, b, e, "b", 3*time.Second)
	waitLine(t, b, e, "a:leader", "b:follower")

	for _, m := range ms {
		if m.e.Server.Leader() == m.e.Server.MemberID() {
			t.Logf("stopping raft leader %s", m.name)
			m.stop()
			break
		}
	}
	// Two TTLs later, through the leader election of the two members left,
	// both candidates are still there and a still leads its term.
	time.Sleep(6 * time.Second)
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
	deadline := time.Now().Add(10 * time.Second)
	for b.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("ping still failing 10s after etcd restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
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
