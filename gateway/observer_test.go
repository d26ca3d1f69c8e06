package gateway_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// calls is an Observer that records the operations it is told of.
type calls struct {
	mu   sync.Mutex
	ops  []string
	errs map[string]error
}

func (c *calls) BackendCall(op string, d time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = append(c.ops, op)
	if c.errs == nil {
		c.errs = map[string]error{}
	}
	c.errs[op] = err
}

// take returns the operations recorded since the last take.
func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// leaderReading is a memory backend with the LeaderReader hint.
type leaderReading struct{ *memory.Backend }

func (l leaderReading) ElectionLeader(ctx context.Context, election string) (gateway.Election, error) {
	return electionLeader(ctx, l.Backend, election)
}

// counting is a memory backend with the CandidateCounter hint.
type counting struct{ *memory.Backend }

func (c counting) CountCandidates(ctx context.Context, election string) (int, error) {
	return countCandidates(ctx, c.Backend, election)
}

// bounding is a memory backend with the CursorBound hint.
type bounding struct{ *memory.Backend }

func (b bounding) MaxCursor(ctx context.Context) (string, error) { return b.Head(ctx) }

// readingCounting is a memory backend with LeaderReader and
// CandidateCounter.
type readingCounting struct{ *memory.Backend }

func (r readingCounting) ElectionLeader(ctx context.Context, election string) (gateway.Election, error) {
	return electionLeader(ctx, r.Backend, election)
}

func (r readingCounting) CountCandidates(ctx context.Context, election string) (int, error) {
	return countCandidates(ctx, r.Backend, election)
}

// allHints is a memory backend with every hint.
type allHints struct{ readingCounting }

func (a allHints) MaxCursor(ctx context.Context) (string, error) { return a.Head(ctx) }

func electionLeader(ctx context.Context, b *memory.Backend, election string) (gateway.Election, error) {
	e, err := b.Election(ctx, election)
	e.Candidates = nil
	return e, err
}

func countCandidates(ctx context.Context, b *memory.Backend, election string) (int, error) {
	e, err := b.Election(ctx, election)
	return len(e.Candidates), err
}

// hints says which optional hints b has.
func hints(b gateway.Backend) [3]bool {
	_, lr := b.(gateway.LeaderReader)
	_, cc := b.(gateway.CandidateCounter)
	_, cb := b.(gateway.CursorBound)
	return [3]bool{lr, cc, cb}
}

// TestObserveKeepsTheHintsOfTheBackend: an observed backend has exactly
// the optional hints of the backend it wraps, so a Gateway over it takes
// the same paths (a LeaderReader stays one, a backend without the hint
// does not gain it), and names the wrapped backend's package.
func TestObserveKeepsTheHintsOfTheBackend(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		b    gateway.Backend
	}{
		{"none", memory.New()},
		{"LeaderReader", leaderReading{memory.New()}},
		{"CandidateCounter", counting{memory.New()}},
		{"CursorBound", bounding{memory.New()}},
		{"LeaderReader and CandidateCounter", readingCounting{memory.New()}},
		{"all", allHints{readingCounting{memory.New()}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := hints(tt.b)
			once := gateway.Observe(tt.b, gateway.NopObserver{})
			twice := gateway.Observe(once, gateway.NopObserver{})
			for name, got := range map[string]gateway.Backend{"observed": once, "observed twice": twice} {
				if h := hints(got); h != want {
					t.Errorf("%s: hints (LeaderReader, CandidateCounter, CursorBound) %v, want %v", name, h, want)
				}
			}
		})
	}
	// A Gateway over an observed memory backend names memory in what it
	// refuses, not the decorator.
	gw := gateway.New(gateway.Observe(oneHolder{memory.New()}, gateway.NopObserver{}), gateway.Config{})
	var ue *gateway.UnsupportedError
	if _, err := gw.Configure(context.Background(), "named", gateway.SettingsPatch{Holders: ptr(2)}); !errors.As(err, &ue) || ue.Backend != "gateway_test" {
		t.Fatalf("Configure with 2 holders: %v, want an UnsupportedError naming the test's backend", err)
	}
}

// oneHolder is a memory backend that says it takes one holder.
type oneHolder struct{ *memory.Backend }

func (oneHolder) MaxHolders() int { return 1 }

func ptr[T any](v T) *T { return &v }

// TestObserveReportsEachCallByItsOperation: each method of an observed
// backend is reported once under its operation's name with its error;
// ElectionLeader as "election", as the read it stands for; a local read
// as "election_local" or "elections_local".
func TestObserveReportsEachCallByItsOperation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &calls{}
	b := gateway.Observe(allHints{readingCounting{memory.New()}}, obs)
	const e = "observed"
	defaults := gateway.DefaultSettings()
	var token string
	for _, tt := range []struct {
		op   string
		call func() error
	}{
		{"campaign", func() error {
			token = gateway.HashToken("t")
			_, err := b.Campaign(ctx, e, gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: token}, defaults)
			return err
		}},
		{"heartbeat", func() error { _, err := b.Heartbeat(ctx, e, "a", token); return err }},
		{"check_token", func() error { return b.CheckToken(ctx, e, "a", token) }},
		{"election", func() error { _, err := b.Election(ctx, e); return err }},
		{"election", func() error { _, err := b.(gateway.LeaderReader).ElectionLeader(ctx, e); return err }},
		{"elections", func() error { _, _, err := b.Elections(ctx); return err }},
		{"election_local", func() error { _, err := b.Election(gateway.WithLocalRead(ctx), e); return err }},
		{"election_local", func() error {
			_, err := b.(gateway.LeaderReader).ElectionLeader(gateway.WithLocalRead(ctx), e)
			return err
		}},
		{"elections_local", func() error { _, _, err := b.Elections(gateway.WithLocalRead(ctx)); return err }},
		{"count_elections", func() error { _, err := b.CountElections(ctx); return err }},
		{"count_candidates", func() error { _, err := b.(gateway.CandidateCounter).CountCandidates(ctx, e); return err }},
		{"head", func() error { _, err := b.Head(ctx); return err }},
		{"max_cursor", func() error { _, err := b.(gateway.CursorBound).MaxCursor(ctx); return err }},
		{"watch", func() error { _, err := b.Watch(ctx, e, ""); return err }},
		{"configure", func() error { _, err := b.Configure(ctx, e, defaults); return err }},
		{"transfer", func() error { _, err := b.Transfer(ctx, e, "nobody", ""); return err }},
		{"transfer", func() error { _, err := b.TransferFrom(ctx, e, "", "nobody", ""); return err }},
		{"cancel_transfer", func() error { _, err := b.CancelTransfer(ctx, e, ""); return err }},
		{"handover", func() error { _, err := b.Handover(ctx, e, "a", token); return err }},
		{"fail_leader", func() error { _, err := b.FailLeader(ctx, e, "a", token, 99, "late"); return err }},
		{"report_error", func() error { _, err := b.ReportError(ctx, e, "a", token, "broken"); return err }},
		{"resign", func() error { return b.Resign(ctx, e, "a", token) }},
		{"delete_election", func() error { return b.DeleteElection(ctx, e) }},
		{"ping", func() error { return b.Ping(ctx) }},
		{"caught_up", func() error { return b.CaughtUp(ctx) }},
		{"kv_create", func() error { _, err := b.Create(ctx, "k", []byte("v")); return err }},
		{"kv_get", func() error { _, err := b.Get(ctx, "k"); return err }},
		{"kv_update", func() error { _, err := b.Update(ctx, "k", []byte("w"), 1); return err }},
		{"kv_list", func() error { _, err := b.List(ctx, ""); return err }},
		{"kv_delete", func() error { return b.Delete(ctx, "k", 0) }},
	} {
		err := tt.call()
		if got := obs.take(); !slices.Equal(got, []string{tt.op}) {
			t.Errorf("%s: reported %v", tt.op, got)
			continue
		}
		if got := obs.errs[tt.op]; !errors.Is(got, err) || (got == nil) != (err == nil) {
			t.Errorf("%s: reported error %v, the call returned %v", tt.op, got, err)
		}
	}
	// MaxHolders states a limit and Run is the backend's loop: neither is
	// a call to time.
	b.MaxHolders()
	runCtx, stop := context.WithCancel(ctx)
	stop()
	_ = b.Run(runCtx)
	if got := obs.take(); len(got) != 0 {
		t.Errorf("MaxHolders and Run reported %v", got)
	}
}

// sessioning is a memory backend with sessions of its own, which answer
// whatever is asked.
type sessioning struct{ *memory.Backend }

func (sessioning) OpenSession(_ context.Context, id string, ttl time.Duration, _ string) (gateway.Session, error) {
	return gateway.Session{ID: id, TTL: ttl}, nil
}

func (sessioning) KeepSession(_ context.Context, id, _ string) (gateway.Session, error) {
	return gateway.Session{ID: id}, nil
}

func (sessioning) CloseSession(context.Context, string, string) error { return nil }

// recording is an Observer that keeps the ops it is told of.
type recording struct {
	mu  sync.Mutex
	ops []string
}

func (r *recording) BackendCall(op string, _ time.Duration, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// A backend's own sessions are observed as its other calls are: a Gateway
// finds them under the observer, and times them through it.
func TestObservedBackendsSessionsAreObserved(t *testing.T) {
	t.Parallel()
	var rec recording
	gw := gateway.New(gateway.Observe(sessioning{memory.New()}, &rec), gateway.Config{})
	ctx := t.Context()
	s, token, err := gw.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.KeepSession(ctx, s.ID, token); err != nil {
		t.Fatal(err)
	}
	if err := gw.CloseSession(ctx, s.ID, token); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []string{"open_session", "keep_session", "close_session"}; !slices.Equal(rec.ops, want) {
		t.Errorf("observed %v, want %v", rec.ops, want)
	}
}
