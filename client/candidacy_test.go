package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// journal records what callbacks did, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// record makes cfg's callbacks write to j: "started <term>" when
// OnStartedLeading is called, "returned <term>" when it returns (after its
// context ended) and "stopped <term> <reason>".
func (j *journal) record(cfg *client.CandidacyConfig) {
	cfg.OnStartedLeading = func(ctx context.Context, term uint64) {
		j.add("started %d", term)
		<-ctx.Done()
		j.add("returned %d", term)
	}
	cfg.OnStoppedLeading = func(term uint64, reason string) { j.add("stopped %d %s", term, reason) }
}

// run starts c.Run; stop cancels it and returns its error.
func run(t *testing.T, c *client.Candidacy) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Error("Run did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func newCandidacy(t *testing.T, cfg client.CandidacyConfig) *client.Candidacy {
	t.Helper()
	c, err := client.NewCandidacy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCandidacyCallbacksComeInOrder(t *testing.T) {
	srv := newGateway(t)
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: 3 * time.Second, ErrorTimeout: 500 * time.Millisecond}
	j.record(&cfg)
	a := newCandidacy(t, cfg)
	stop := run(t, a)

	waitUntil(t, 5*time.Second, "leadership", func() bool { return slices.Contains(j.get(), "started 1") })
	if err := a.ReportError(context.Background(), "the work would not start"); err != nil {
		t.Fatal(err)
	}
	// After its error timeout, a campaigns again and, alone, leads again.
	waitUntil(t, 10*time.Second, "a second leadership", func() bool { return slices.Contains(j.get(), "started 2") })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{"started 1", "returned 1", "stopped 1 error", "started 2", "returned 2", "stopped 2 resigned"}
	if got := j.get(); !slices.Equal(got, want) {
		t.Fatalf("callbacks: %q, want %q", got, want)
	}
	if _, err := client.New(srv.URL).Leader(context.Background(), "e"); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("leader after Run ended: %v, want ErrNoLeader (resigned)", err)
	}
	if _, ok := <-a.States(); ok {
		// The latest standing may still be there; after it, the channel is closed.
		if _, ok := <-a.States(); ok {
			t.Error("States is still open after Run returned")
		}
	}
}

// TestCandidacyRunEndingAfterAHeartbeatIsAResignation: a heartbeat
// answered just as Run's context ends finds the leadership's context ended
// with it. That is Run ending, not the step-down rule: the callbacks hear
// of one leadership, stopped as resigned, and of no leadership begun again.
func TestCandidacyRunEndingAfterAHeartbeatIsAResignation(t *testing.T) {
	srv := newGateway(t)
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: 3 * time.Second}
	j.record(&cfg)
	a := newCandidacy(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client.OnHeartbeatAnswer(a, func() {
		if a.Standing().Leading {
			cancel()
		}
	})
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	want := []string{"started 1", "returned 1", "stopped 1 resigned"}
	if got := j.get(); !slices.Equal(got, want) {
		t.Fatalf("callbacks: %q, want %q", got, want)
	}
}

func TestCandidacyLeaderContextEndsBeforeTheGatewayCanPromoteAnother(t *testing.T) {
	srv := newGateway(t)
	proxy := newCuttableProxy(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := client.New(srv.URL).Watch(ctx, "e", "")
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	var aEnded, bBegan atomic.Pointer[time.Time]
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{proxy.URL}, Election: "e", ID: "a", TTL: ttl,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			<-ctx.Done()
			now := time.Now()
			aEnded.Store(&now)
		}})
	run(t, a)
	waitUntil(t, 5*time.Second, "a leads", func() bool { return a.Standing().Leading })
	b := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "b", TTL: ttl,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			now := time.Now()
			bBegan.Store(&now)
		}})
	run(t, b)
	waitUntil(t, 5*time.Second, "b in line", func() bool { return b.Standing().State == client.StateFollower })

	proxy.cut.Store(true) // a's heartbeats fail from now on; the gateway is told nothing
	lastOK := a.LastHeartbeat()
	var expired client.Event
	for expired.Type != client.EventLeaderEnd {
		expired = next(t, events)
	}
	if expired.Data.Reason != "expired" || expired.Data.Candidate.ID != "a" {
		t.Fatalf("leader.end %+v, want a expired", expired.Data)
	}
	waitUntil(t, 5*time.Second, "b leads", func() bool { return bBegan.Load() != nil })
	ended := aEnded.Load()
	if ended == nil {
		t.Fatal("a's leadership context was not cancelled before the gateway expired it")
	}
	if !ended.Before(expired.Timestamp) || !ended.Before(*bBegan.Load()) {
		t.Fatalf("a stopped at %s, the gateway expired it at %s and b began at %s", ended, expired.Timestamp, *bBegan.Load())
	}
	t.Logf("TTL %s: a stopped %s after its last successful heartbeat, %s before the gateway expired it",
		ttl, ended.Sub(lastOK).Round(time.Millisecond), expired.Timestamp.Sub(*ended).Round(time.Millisecond))
}

func TestCandidacyResignHandsOverAtOnce(t *testing.T) {
	srv := newGateway(t)
	// With this TTL, b's next scheduled heartbeat is minutes away: b can
	// only learn of its leadership from the event stream.
	const ttl = 10 * time.Minute
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: ttl})
	stopA := run(t, a)
	waitUntil(t, 5*time.Second, "a leads", func() bool { return a.Standing().Leading })
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "b", TTL: ttl}
	j.record(&cfg)
	b := newCandidacy(t, cfg)
	run(t, b)
	waitUntil(t, 5*time.Second, "b in line", func() bool { return b.Standing().State == client.StateFollower })
	followed := b.LastHeartbeat()

	if err := a.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := stopA(); err != nil {
		t.Fatalf("a's Run after Resign: %v", err)
	}
	waitUntil(t, 10*time.Second, "b leads", func() bool { return slices.Equal(j.get(), []string{"started 2"}) })
	if st := b.Standing(); !st.Leading || st.Term != 2 || st.Leader != "b" || st.Reason != client.ReasonElected {
		t.Fatalf("b's standing: %+v", st)
	}
	if !b.LastHeartbeat().After(followed) {
		t.Error("b leads without a heartbeat confirming it")
	}
}

func TestCandidacyPausedPastItsDeadlineNeverActsAsLeader(t *testing.T) {
	srv := newGateway(t)
	const ttl = 3 * time.Second
	var skew atomic.Int64 // how far the candidacy's clock is ahead
	leaderCtx := make(chan context.Context, 2)
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: ttl,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			leaderCtx <- ctx
			<-ctx.Done()
		},
		OnStoppedLeading: func(term uint64, reason string) { j.add("stopped %d %s", term, reason) }}
	a := newCandidacy(t, cfg)
	client.SetClock(a, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	run(t, a)
	var ctx context.Context
	select {
	case ctx = <-leaderCtx:
	case <-time.After(5 * time.Second):
		t.Fatal("a did not lead")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("a fresh leadership's context: %v", err)
	}
	deadline, ok := ctx.Deadline()
	if limit := a.LastHeartbeat().Add(ttl - client.StepDownMargin(ttl)); !ok || deadline.After(limit) {
		t.Fatalf("deadline %s (%v), want at most the step-down deadline %s", deadline, ok, limit)
	}

	// The process is paused past the step-down deadline and resumes: its
	// first look at the context, before the loop has run, says stop.
	skew.Store(int64(ttl))
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the pause, ctx.Err() = %v, want context.Canceled", err)
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("ctx.Err() is set but Done is open")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, client.ErrLeadershipLost) {
		t.Errorf("cause %v, want ErrLeadershipLost", cause)
	}
	// The loop then ends that leadership; a heartbeat sent after the pause
	// confirms a new one before the candidate leads again.
	waitUntil(t, 5*time.Second, "the leadership ended", func() bool { return len(j.get()) > 0 })
	if got := j.get()[0]; got != "stopped 1 heartbeat-timeout" {
		t.Errorf("OnStoppedLeading: %q", got)
	}
	select {
	case ctx = <-leaderCtx:
		if err := ctx.Err(); err != nil {
			t.Errorf("the confirmed leadership's context: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a did not lead again after a heartbeat")
	}
}

func TestCandidacyTriesGatewaysInTurn(t *testing.T) {
	srv := newGateway(t)
	dead := newCuttableProxy(t, srv.URL)
	dead.cut.Store(true)
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{dead.URL, srv.URL}, Election: "e", ID: "a", TTL: 3 * time.Second})
	run(t, a)
	waitUntil(t, 5*time.Second, "a leads through the second gateway", func() bool { return a.Standing().Leading })
}

// A leader whose gateway stops answering keeps its leadership: the
// heartbeat that hangs fails at its deadline, and the retry goes to the
// next gateway before the step-down deadline. Every later request goes
// there too.
func TestCandidacyLeaderMovesOffAGatewayThatHangs(t *testing.T) {
	t.Parallel()
	srv := newGateway(t)
	p1, p2 := newCuttableProxy(t, srv.URL), newCuttableProxy(t, srv.URL)
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{p1.URL, p2.URL}, Election: "e", ID: "a", TTL: 10 * time.Second}
	j.record(&cfg)
	a := newCandidacy(t, cfg)
	run(t, a)
	waitUntil(t, 10*time.Second, "a leads", func() bool { return a.Standing().Leading })
	p1.stall.Store(true)
	stalled := time.Now()
	// A heartbeat every TTL/3: the first after the stall hangs until its
	// deadline, the retry goes to p2, and the one after it too.
	waitUntil(t, 30*time.Second, "two heartbeats after the stall", func() bool {
		return a.LastHeartbeat().After(stalled.Add(4 * time.Second))
	})
	if st := a.Standing(); !st.Leading || st.Term != 1 {
		t.Fatalf("a's standing after its gateway hung: %+v", st)
	}
	if got := j.get(); !slices.Equal(got, []string{"started 1"}) {
		t.Fatalf("callbacks %q: want a's leadership never to end", got)
	}
}

// A follower whose first gateway never answers campaigns through the next
// one, and its event stream moves there too, also while it is still
// connecting to the first: with this TTL its next heartbeat is 10 s away,
// so only the stream can tell it at once that it leads.
func TestCandidacyStreamMovesOffAGatewayThatHangs(t *testing.T) {
	t.Parallel()
	srv := newGateway(t)
	hung := "http://" + silentAddr(t)
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: time.Minute})
	stopA := run(t, a)
	waitUntil(t, 10*time.Second, "a leads", func() bool { return a.Standing().Leading })
	b := newCandidacy(t, client.CandidacyConfig{Gateways: []string{hung, srv.URL}, Election: "e", ID: "b", TTL: 30 * time.Second})
	run(t, b)
	// The first campaign hangs for TTL/3; the retry goes to srv.
	waitUntil(t, 30*time.Second, "b in line", func() bool { return b.Standing().State == client.StateFollower })
	if err := a.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := stopA(); err != nil {
		t.Fatalf("a's Run after Resign: %v", err)
	}
	waitUntil(t, 5*time.Second, "b leads, told by the stream of the gateway it moved to", func() bool { return b.Standing().Leading })
}

func TestNewCandidacyRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  client.CandidacyConfig
	}{
		{name: "no gateway", cfg: client.CandidacyConfig{Election: "e", ID: "a"}},
		{name: "bad gateway", cfg: client.CandidacyConfig{Gateways: []string{"127.0.0.1:8080"}, Election: "e", ID: "a"}},
		{name: "no election", cfg: client.CandidacyConfig{Gateways: []string{"http://x"}, ID: "a"}},
		{name: "no id", cfg: client.CandidacyConfig{Gateways: []string{"http://x"}, Election: "e"}},
		{name: "short TTL", cfg: client.CandidacyConfig{Gateways: []string{"http://x"}, Election: "e", ID: "a", TTL: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := client.NewCandidacy(tt.cfg); !errors.Is(err, client.ErrInvalidConfig) {
				t.Fatalf("err %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestCandidacyRunEndsOnARefusedCampaign(t *testing.T) {
	srv := newGateway(t)
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "Not A Name", ID: "a"})
	if err := a.Run(context.Background()); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("Run: %v, want ErrInvalidRequest", err)
	}
}

func TestObserveReportsLeaderChangesAndNoLeader(t *testing.T) {
	srv := newGateway(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := client.New(srv.URL)
	_, tokA, err := c.Campaign(ctx, "e", client.CampaignRequest{ID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	leaders, err := c.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	_, tokB, _ := c.Campaign(ctx, "e", client.CampaignRequest{ID: "b", TTL: time.Minute})
	_ = c.Resign(ctx, "e", "a", tokA)
	_ = c.Resign(ctx, "e", "b", tokB)
	var got []string
	for len(got) < 4 {
		select {
		case l := <-leaders:
			got = append(got, fmt.Sprintf("%q %d", l.ID, l.Term))
		case <-time.After(5 * time.Second):
			t.Fatalf("leaders so far: %q", got)
		}
	}
	if want := []string{`"a" 1`, `"" 1`, `"b" 2`, `"" 2`}; !slices.Equal(got, want) {
		t.Fatalf("leaders %q, want %q", got, want)
	}
}

func TestCandidacyKeepOnExitLeavesTheCandidacyToExpire(t *testing.T) {
	srv := newGateway(t)
	var j journal
	cfg := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: time.Minute, KeepOnExit: true}
	j.record(&cfg)
	a := newCandidacy(t, cfg)
	stop := run(t, a)
	waitUntil(t, 5*time.Second, "a leads", func() bool { return a.Standing().Leading })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// It stopped acting as leader, but did not hand over.
	if want := []string{"started 1", "returned 1", "stopped 1 resigned"}; !slices.Equal(j.get(), want) {
		t.Fatalf("callbacks %q, want %q", j.get(), want)
	}
	if l, err := client.New(srv.URL).Leader(context.Background(), "e"); err != nil || l.ID != "a" {
		t.Fatalf("leader %+v, %v; want a until its TTL runs out", l, err)
	}
}

func TestCandidacyWaitsAsLongAsRetryAfterSays(t *testing.T) {
	srv := newGateway(t, "--limits-writes-per-second", "0.5", "--limits-write-burst", "1")
	ctx := context.Background()
	c := client.New(srv.URL)
	if _, _, err := c.Campaign(ctx, "other", client.CampaignRequest{ID: "x", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// The burst is spent: the next write is refused for two seconds.
	_, _, err := c.Campaign(ctx, "other", client.CampaignRequest{ID: "y", TTL: time.Minute})
	var p *client.Problem
	if !errors.Is(err, client.ErrRateLimited) || !errors.As(err, &p) || p.RetryAfter != 2*time.Second {
		t.Fatalf("campaign over the rate: %v (%+v), want ErrRateLimited with RetryAfter 2s", err, p)
	}

	var logs syncLog
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: 3 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	run(t, a)
	waitUntil(t, 10*time.Second, "a leads after its wait", func() bool { return a.Standing().Leading })
	m := regexp.MustCompile(`campaign failed; retrying with back-off".* retry_in=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no rate-limited campaign in the logs:\n%s", logs.String())
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d < 2*time.Second {
		t.Fatalf("retried after %s (%v), want at least the 2s of Retry-After", m[1], err)
	}
}

// syncLog is a buffer a logger writes to while a test reads it.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCandidacyResignBeforeRunEndsItForGood: a Resign that returns before
// Run has begun still ends the candidacy. Run then returns nil at once,
// States closed, and the gateway never holds the candidate, whichever of
// the two calls comes first.
func TestCandidacyResignBeforeRunEndsItForGood(t *testing.T) {
	srv := newGateway(t)
	gw := client.New(srv.URL)
	for _, order := range []string{"resign, then run", "run and resign at once"} {
		t.Run(order, func(t *testing.T) {
			id := strings.ReplaceAll(order, " ", "-")
			c := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "early", ID: id, TTL: 10 * time.Minute})
			ran := make(chan error, 1)
			if order == "resign, then run" {
				if err := c.Resign(context.Background()); err != nil {
					t.Fatal(err)
				}
				go func() { ran <- c.Run(context.Background()) }()
			} else {
				go func() { ran <- c.Run(context.Background()) }()
				if err := c.Resign(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-ran:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run goes on after a Resign that returned")
			}
			for range c.States() {
			}
			if c.Running() {
				t.Error("Running after Run returned")
			}
			if err := c.Run(context.Background()); !errors.Is(err, client.ErrAlreadyRunning) {
				t.Errorf("a second Run: %v, want ErrAlreadyRunning", err)
			}
			cs, err := gw.Candidates(context.Background(), "early")
			if err != nil && !errors.Is(err, client.ErrElectionNotFound) {
				t.Fatal(err)
			}
			for _, cand := range cs.Candidates {
				if cand.ID == id {
					t.Fatalf("the gateway holds %s after its Resign: %+v", id, cand)
				}
			}
		})
	}
}
