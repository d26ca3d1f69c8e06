package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
)

// queued returns how many calls wait to write election on b.
func queued(b *Backend, election string) int {
	b.writes.mu.Lock()
	defer b.writes.mu.Unlock()
	if q, ok := b.writes.queues[election]; ok {
		return len(q.calls)
	}
	return 0
}

// TestWritesOfOneElectionCombine: the campaigns of one election that come
// while a write of it is in flight are stored together, in one record,
// once that write is done; each is answered from it. A call whose caller
// gives up while it waits leaves the queue and is written nowhere.
func TestWritesOfOneElectionCombine(t *testing.T) {
	const el, n = "burst", 50
	b, ctx := withElection(t, el)

	// A write held in its transition, until released.
	release := holdWrite(t, b, el)

	// A caller that gives up while it waits.
	gaveUp, giveUp := context.WithCancel(ctx)
	var ran atomic.Bool
	left := make(chan error, 1)
	go func() {
		_, err := b.apply(gaveUp, "report error", el, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
			ran.Store(true)
			return r.ReportError(now, "first", "", "should never be written")
		})
		left <- err
	}()
	eventually.NoError(t, 30*time.Second, "the call that gives up to wait", func() error {
		if q := queued(b, el); q != 1 {
			return fmt.Errorf("%d calls wait", q)
		}
		return nil
	})
	giveUp()
	if err := <-left; !errors.Is(err, gateway.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a call given up while it waited: %v, want unavailable (cancelled)", err)
	}

	// Campaigns that come meanwhile.
	errs := make(chan error, n)
	for i := range n {
		go func() {
			c := gateway.Candidacy{ID: fmt.Sprintf("c%02d", i), TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}
			st, err := b.Campaign(ctx, el, c, gateway.DefaultSettings())
			if err == nil && (st.Candidate.State != gateway.StateFollower || st.Leader == nil || st.Leader.ID != "first") {
				err = fmt.Errorf("%s: %s, leader %+v; want a follower of first", c.ID, st.Candidate.State, st.Leader)
			}
			errs <- err
		}()
	}
	eventually.NoError(t, 30*time.Second, "the campaigns to wait", func() error {
		if q := queued(b, el); q != n {
			return fmt.Errorf("%d of %d campaigns wait", q, n)
		}
		return nil
	})
	heldSeq := release().seq
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	s, found, err := b.load(ctx, el)
	if err != nil || !found {
		t.Fatalf("load: %v (found %v)", err, found)
	}
	if s.seq != heldSeq+1 {
		t.Fatalf("the %d campaigns took %d records after the held write, want one", n, s.seq-heldSeq)
	}
	if len(s.rec.Line) != 1+n || s.nev != n {
		t.Fatalf("the record after them: %d in line and %d events, want %d and %d joined", len(s.rec.Line), s.nev, 1+n, n)
	}
	if ran.Load() || s.rec.Settings.ErrorCooldown != 42*time.Second || s.rec.Line[0].ID != "first" {
		t.Fatalf("the call that gave up ran: %v; settings %+v, first in line %s", ran.Load(), s.rec.Settings, s.rec.Line[0].ID)
	}
	if err := backendtest.CheckEvents(s.events); err != nil {
		t.Fatal(err)
	}
	if q := queued(b, el); q != 0 {
		t.Fatalf("%d calls left waiting", q)
	}
	b.writes.mu.Lock()
	defer b.writes.mu.Unlock()
	if len(b.writes.queues) != 0 {
		t.Fatalf("queues left: %v", b.writes.queues)
	}
}

// withElection starts a server and a backend on it, whose election has
// one candidate, "first", and returns the backend and a context that ends
// with the test, at most a minute on.
func withElection(t *testing.T, election string) (*Backend, context.Context) {
	t.Helper()
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	campaignT(t, b, election, "first", time.Minute)
	return b, ctx
}

// holdWrite starts a write of election on b (its error cooldown set to
// 42 s) whose transition waits until the returned release is called, and
// returns once it is in flight. release returns the record it stored.
func holdWrite(t *testing.T, b *Backend, election string) (release func() stored) {
	t.Helper()
	entered, rel := make(chan struct{}), make(chan struct{})
	var once sync.Once
	type result struct {
		s   stored
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := b.apply(context.Background(), "configure", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
			once.Do(func() { close(entered) })
			<-rel
			set := r.Settings
			set.ErrorCooldown = 42 * time.Second
			return r.Configure(now, set), nil
		})
		done <- result{s, err}
	}()
	<-entered
	return func() stored {
		close(rel)
		r := <-done
		if r.err != nil {
			t.Errorf("the held write: %v", r.err)
		}
		return r.s
	}
}

// waitQueued waits until n calls wait to write election on b.
func waitQueued(t *testing.T, b *Backend, election string, n int) {
	t.Helper()
	eventually.NoError(t, 30*time.Second, fmt.Sprintf("%d calls to wait", n), func() error {
		if q := queued(b, election); q != n {
			return fmt.Errorf("%d calls wait", q)
		}
		return nil
	})
}

// TestATransitionThatPanicsFailsOnlyItsOwnCall: a transition that panics
// in a combined write panics on its own caller's stack; the write goes on
// without it for the others, and the election's later writes are not
// held up.
func TestATransitionThatPanicsFailsOnlyItsOwnCall(t *testing.T) {
	const el = "panics"
	b, ctx := withElection(t, el)

	release := holdWrite(t, b, el)
	type outcome struct {
		err       error
		recovered any
	}
	call := func(fn transition) <-chan outcome {
		out := make(chan outcome, 1)
		go func() {
			var o outcome
			defer func() {
				o.recovered = recover()
				out <- o
			}()
			_, o.err = b.apply(ctx, "test", el, nil, writeOnSuccess, fn)
		}()
		return out
	}
	set := func(cooldown time.Duration) transition {
		return func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
			s := r.Settings
			s.ErrorCooldown = cooldown
			return r.Configure(now, s), nil
		}
	}
	before := call(set(7 * time.Second))
	waitQueued(t, b, el, 1)
	bad := call(func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		r.Line = nil // half changed, then a bug
		panic("a bug in a transition")
	})
	waitQueued(t, b, el, 2)
	after := call(func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		s := r.Settings
		s.HandoverDelay = 3 * time.Second
		return r.Configure(now, s), nil
	})
	waitQueued(t, b, el, 3)
	release()

	if o := <-bad; o.recovered == nil || !strings.Contains(fmt.Sprint(o.recovered), "a bug in a transition") {
		t.Fatalf("the call whose transition panicked: %+v, want its own panic", o)
	}
	for _, ch := range []<-chan outcome{before, after} {
		if o := <-ch; o.err != nil || o.recovered != nil {
			t.Fatalf("a call written with the one that panicked: %+v", o)
		}
	}
	el2, err := b.Election(ctx, el)
	if err != nil {
		t.Fatal(err)
	}
	if len(el2.Candidates) != 1 || el2.Settings.ErrorCooldown != 7*time.Second || el2.Settings.HandoverDelay != 3*time.Second {
		t.Fatalf("after the write: candidates %v, settings %+v; want first still in line and both others' settings", el2.Candidates, el2.Settings)
	}
	if _, err := b.apply(ctx, "test", el, nil, writeOnSuccess, set(9*time.Second)); err != nil {
		t.Fatalf("a later write: %v", err)
	}
}

// TestACallerPastItsDeadlineIsToldSo: a combined write that fails because
// its callers' deadlines passed tells each that its deadline passed, as a
// write of its own would have (readiness counts deadlines, not callers
// that went away).
func TestACallerPastItsDeadlineIsToldSo(t *testing.T) {
	const el = "late"
	b, _ := withElection(t, el)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := b.apply(ctx, "configure", el, nil, writeOnSuccess, func(ctx context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		<-ctx.Done()
		return r.Configure(now, r.Settings), nil
	})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("apply past its deadline: %v, want unavailable (deadline exceeded)", err)
	}
}
