package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// fakeClock is a promise clock that moves only when the test says so.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	moved []chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d and wakes the reconcilers of the backends
// on it.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, ch := range c.moved {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (c *fakeClock) subscribe() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{}, 1)
	c.moved = append(c.moved, ch)
	return ch
}

// newClocked is newBackend with promises timed on c.
func newClocked(t *testing.T, ms []*member, prefix string, c *fakeClock) *etcd.Backend {
	t.Helper()
	b, err := etcd.NewWithClock(etcd.Config{
		Endpoints:      endpoints(ms),
		Prefix:         prefix,
		DialTimeout:    2 * time.Second,
		RequestTimeout: 3 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, c.Now, c.subscribe())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// runStoppable runs b's reconciler until stop is called or the test ends.
func runStoppable(t *testing.T, b *etcd.Backend) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// reconciled waits until a pass of b's reconciler has planned every
// election changed up to revision rev, and every one due by c's time now.
func reconciled(t *testing.T, b *etcd.Backend, rev int64, c *fakeClock) {
	t.Helper()
	now := c.Now()
	eventually.True(t, 10*time.Second, "a reconciler's pass", func() bool {
		r, mono, ok := b.LastPass()
		return ok && r >= rev && !mono.Before(now)
	})
}

// leaseOf returns the lease of elector candidate id, read from its id key.
func leaseOf(t *testing.T, b *etcd.Backend, prefix, election, id string) clientv3.LeaseID {
	t.Helper()
	resp, err := b.Client().Get(context.Background(), prefix+"/_elector/ids/"+election+"/"+id)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("id key of %s: %v, %d keys", id, err, len(resp.Kvs))
	}
	n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return clientv3.LeaseID(n)
}

// revokeLease revokes lease with the replica's own etcd client, as a
// resumed etcd leader does, and returns the revision that deleted its keys.
func revokeLease(t *testing.T, b *etcd.Backend, lease clientv3.LeaseID) int64 {
	t.Helper()
	resp, err := b.Client().Revoke(context.Background(), lease)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// noLeaderBut checks, through every replica in bs, that nobody leads
// election e and that follower f is told it follows.
func noLeaderBut(t *testing.T, bs []*etcd.Backend, e, f, thf string) {
	t.Helper()
	ctx := context.Background()
	for i, b := range bs {
		s, err := b.Election(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if s.Leader != nil {
			t.Fatalf("replica %d: %s leads term %d while the revoked leader's promise runs", i, s.Leader.ID, s.Term)
		}
		st, err := b.Heartbeat(ctx, e, f, thf)
		if err != nil {
			t.Fatalf("replica %d: heartbeat of %s: %v", i, f, err)
		}
		if st.Candidate.State != gateway.StateFollower || st.Leader != nil {
			t.Fatalf("replica %d: %s is told %s (leader %+v) while the revoked leader's promise runs", i, f, st.Candidate.State, st.Leader)
		}
	}
}

// TestEarlyRevokedLeaderIsSucceededOnlyAfterItsPromise reproduces what a
// frozen etcd leader does when it resumes: right after a heartbeat
// answered "leader", the leader's lease is revoked with an etcd client,
// long before its TTL. No replica acknowledges the next candidate (no
// leader in reads, heartbeats answering "follower", no leader.begin)
// until the promise of that heartbeat has lapsed on its clock: the
// replicas that held it count from when they saw it, a replica started
// later from when it loaded the state. Then the next candidate leads.
func TestEarlyRevokedLeaderIsSucceededOnlyAfterItsPromise(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	fc := newFakeClock()
	const prefix, e, ttl = "promise", "revoked", 10 * time.Second
	b1, b2 := newClocked(t, ms, prefix, fc), newClocked(t, ms, prefix, fc)
	stop1 := runStoppable(t, b1)
	ctx := context.Background()
	events := follow(t, b2, e)

	thl := campaignAs(t, b1, e, "l", ttl)
	thf := campaignAs(t, b1, e, "f", ttl)
	keepBeating(t, b1, e, "f", thf) // its lease lives on in real time; only the promise clock is fake
	st, err := b1.Heartbeat(ctx, e, "l", thl)
	if err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of l: %+v, %v; want it leading", st, err)
	}
	rev := revokeLease(t, b1, leaseOf(t, b1, prefix, e, "l"))
	reconciled(t, b1, rev, fc)
	noLeaderBut(t, []*etcd.Backend{b1, b2}, e, "f", thf)
	if s, err := b2.Election(ctx, e); err != nil || !s.HandoverUntil.After(time.Now()) {
		t.Fatalf("nobody leads: handover_until %v, %v; want when the promise lapses", s.HandoverUntil, err)
	}

	// The revoked leader learns it at its next heartbeat, and when.
	_, err = b1.Heartbeat(ctx, e, "l", thl)
	var revoked *gateway.CandidacyRevokedError
	if !errors.As(err, &revoked) || !errors.Is(err, gateway.ErrCandidateNotFound) || !revoked.ExpiresAt.After(revoked.At) {
		t.Fatalf("heartbeat of the revoked leader: %v; want a CandidacyRevokedError that is ErrCandidateNotFound", err)
	}

	// A newcomer's campaign reconciles the election where it lands: it
	// must not lead either. Its candidate.joined marks the stream.
	stm, err := b2.Campaign(ctx, e, gateway.Candidacy{ID: "m", TTL: ttl, TokenHash: gateway.HashToken("m")}, gateway.DefaultSettings())
	if err != nil || stm.Candidate.State != gateway.StateFollower {
		t.Fatalf("campaign of m: %+v, %v; want a follower", stm, err)
	}

	// A replica started now, half a TTL on, counts from its load.
	stop1()
	fc.Advance(ttl / 2)
	b3 := newClocked(t, ms, prefix, fc)
	runStoppable(t, b3)
	reconciled(t, b3, rev, fc)
	noLeaderBut(t, []*etcd.Backend{b1, b2, b3}, e, "f", thf)
	fc.Advance(ttl / 2) // the promise has lapsed for b1 and b2, not for b3
	reconciled(t, b3, rev, fc)
	noLeaderBut(t, []*etcd.Backend{b1, b2, b3}, e, "f", thf)

	fc.Advance(ttl / 2) // and for b3
	eventually.True(t, 10*time.Second, "f leads once the promise lapsed", func() bool {
		s, err := b2.Election(ctx, e)
		return err == nil && s.Leader != nil && s.Leader.ID == "f"
	})
	st, err = b2.Heartbeat(ctx, e, "f", thf)
	if err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of f after the promise lapsed: %+v, %v; want it leading", st, err)
	}
	if p, err := b2.Client().Get(ctx, prefix+"/_elector/promise/"+e); err != nil || len(p.Kvs) != 1 || !strings.Contains(string(p.Kvs[0].Value), fmt.Sprintf(`"term":%d,`, st.Term)) {
		t.Fatalf("promise record after f's heartbeat answered it leads term %d: %v, %v", st.Term, p, err)
	}
	var got []gateway.Event
	eventually.True(t, 10*time.Second, "f's leader.begin in the stream", func() bool {
		got = events()
		return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "f" })
	})
	joined := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "m" })
	begin := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "f" })
	end := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderEnd && ev.Candidate.ID == "l" })
	if end < 0 || joined < end || begin < joined || got[begin].Reason != gateway.ReasonExpired || got[begin].Previous == nil || got[begin].Previous.ID != "l" {
		t.Fatalf("events %v: want l's leader.end, m's candidate.joined, then f's leader.begin after l expired", got)
	}
}

// TestEarlyRevokedFollowerIsToldSo: a follower's lease is revoked while
// the TTL of a keep-alive etcd answered still runs. Its next heartbeat, or
// its resignation, through the replica that answered the keep-alive and,
// once the record is written, through any other, is a
// CandidacyRevokedError (still ErrCandidateNotFound: it campaigns again)
// saying when. A candidate that expired on time, and one that campaigned
// again under the same id, are told a plain ErrCandidateNotFound.
func TestEarlyRevokedFollowerIsToldSo(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	const prefix, e = "revoked", "followers"
	b1, b2 := newBackend(t, ms, prefix), newBackend(t, ms, prefix)
	run(t, b1)
	ctx := context.Background()
	campaignAs(t, b1, e, "l", 10*time.Second)
	thf := campaignAs(t, b1, e, "f", 10*time.Second)
	if _, err := b1.Heartbeat(ctx, e, "f", thf); err != nil {
		t.Fatal(err)
	}
	revokeLease(t, b1, leaseOf(t, b1, prefix, e, "f"))

	isRevoked := func(err error) bool {
		var r *gateway.CandidacyRevokedError
		return errors.As(err, &r) && errors.Is(err, gateway.ErrCandidateNotFound) && r.ID == "f" && r.ExpiresAt.Sub(r.At) > 5*time.Second
	}
	_, err := b1.Heartbeat(ctx, e, "f", thf)
	if !isRevoked(err) {
		t.Fatalf("heartbeat through the replica that answered the keep-alive: %v; want a CandidacyRevokedError", err)
	}
	eventually.True(t, 10*time.Second, "the other replica to tell it too", func() bool {
		_, err := b2.Heartbeat(ctx, e, "f", thf)
		return isRevoked(err)
	})
	if err := b2.Resign(ctx, e, "f", thf); !isRevoked(err) {
		t.Fatalf("resignation of the revoked candidate: %v; want a CandidacyRevokedError", err)
	}

	// Campaigning again under the same id is a new candidacy: its own
	// end is its own.
	thf2 := campaignAs(t, b2, e, "f", 10*time.Second)
	if err := b2.Resign(ctx, e, "f", thf2); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Heartbeat(ctx, e, "f", thf2); !errors.Is(err, gateway.ErrCandidateNotFound) || errors.Is(err, gateway.ErrCandidacyRevoked) {
		t.Fatalf("heartbeat after resigning the new candidacy: %v; want a plain ErrCandidateNotFound", err)
	}

	// An expiry on time is no revocation.
	thx := campaignAs(t, b1, e, "x", time.Second)
	eventually.True(t, 10*time.Second, "x to expire", func() bool {
		s, err := b1.Election(ctx, e)
		return err == nil && !slices.ContainsFunc(s.Candidates, func(c gateway.Candidate) bool { return c.ID == "x" })
	})
	for i, b := range []*etcd.Backend{b1, b2} {
		if _, err := b.Heartbeat(ctx, e, "x", thx); !errors.Is(err, gateway.ErrCandidateNotFound) || errors.Is(err, gateway.ErrCandidacyRevoked) {
			t.Fatalf("replica %d: heartbeat of a candidate that expired on time: %v; want a plain ErrCandidateNotFound", i, err)
		}
	}
}
