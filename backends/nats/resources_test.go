package nats

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// requestsPerKind is how many requests of each kind the resource test
// drives: 2,000, or 10,000 with ELECTOR_LONG_TESTS set.
func requestsPerKind() int {
	if os.Getenv("ELECTOR_LONG_TESTS") != "" {
		return 10_000
	}
	return 2_000
}

// consumers counts the consumers of the backend's streams.
func consumers(t *testing.T, b *Backend) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]int{}
	for _, s := range []jetstream.Stream{b.records, b.alive, b.timers} {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out[info.Config.Name] = info.State.Consumers
	}
	return out
}

// drive runs do(i) for i in [0, n) on a few workers and fails the test on
// the first error.
func drive(t *testing.T, what string, n int, do func(ctx context.Context, i int) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		first error
		once  sync.Once
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					once.Do(func() { first = fmt.Errorf("%s %d: %w", what, i, err); cancel() })
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// TestNothingPerRequestOutlivesIt drives thousands of campaigns into new
// elections, heartbeats, lists, reads and watch opens and closes against a real
// server, then checks that the streams hold exactly the consumers they
// held before (the reconciler's two), that the goroutines are back where
// they started, and that a campaign into a new election still succeeds.
// Before consumers were deleted, each list and each watch left one behind
// for five minutes, and about a thousand of them made every later list,
// watch and new election fail.
func TestNothingPerRequestOutlivesIt(t *testing.T) {
	n := requestsPerKind()
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	bare := open(t, e, b.cfg) // a replica without Run: lists and reads go to the stream leader
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	campaignT(t, b, "res-seed", "a", time.Minute)
	for b.CaughtUp(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatal("the reconciler never caught up")
		}
	}
	before := consumers(t, b)
	goroutines := runtime.NumGoroutine()

	drive(t, "elections", n, func(ctx context.Context, i int) error {
		be := b
		if i%10 == 0 {
			be = bare
		}
		_, _, err := be.Elections(ctx)
		return err
	})
	drive(t, "watch", n, func(ctx context.Context, i int) error {
		wctx, wcancel := context.WithCancel(ctx)
		election := ""
		if i%2 == 0 {
			election = "res-seed"
		}
		ch, err := b.Watch(wctx, election, "")
		wcancel()
		if err != nil {
			return err
		}
		for range ch {
		}
		return nil
	})
	tokens := make([]string, n)
	drive(t, "campaign", n, func(ctx context.Context, i int) error {
		tokens[i] = gateway.HashToken(gateway.NewToken())
		_, err := b.Campaign(ctx, fmt.Sprintf("res-%d", i), gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: tokens[i]}, gateway.DefaultSettings())
		return err
	})
	drive(t, "heartbeat", n, func(ctx context.Context, i int) error {
		_, err := b.Heartbeat(ctx, fmt.Sprintf("res-%d", i), "a", tokens[i])
		return err
	})
	drive(t, "election", n, func(ctx context.Context, i int) error {
		be := b
		if i%10 == 0 {
			be = bare
		}
		_, err := be.Election(ctx, fmt.Sprintf("res-%d", i))
		return err
	})

	if after := consumers(t, b); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("consumers after %d requests of each kind: %v, before: %v", n, after, before)
	}
	gctx, gcancel := context.WithTimeout(ctx, 10*time.Second)
	defer gcancel()
	if err := eventually.Poll(gctx, func() error {
		if n := runtime.NumGoroutine(); n > goroutines {
			return fmt.Errorf("%d goroutines after the requests, %d before", n, goroutines)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if c, err := b.CountElections(ctx); err != nil || c != n+1 {
		t.Errorf("CountElections = %d, %v; want %d", c, err, n+1)
	}
	campaignT(t, b, "res-after", "a", time.Minute)
	if _, st := campaignT(t, bare, "res-after-bare", "a", time.Minute); st.Candidate.State != gateway.StateLeader {
		t.Errorf("campaign after the load: %+v, want the leader", st)
	}
}
