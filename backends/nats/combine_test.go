package nats

import (
	"context"
	"errors"
	"fmt"
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
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const el, n = "burst", 50
	campaignT(t, b, el, "first", time.Minute)

	// A write held in its transition, until released.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := make(chan error, 1)
	var heldSeq uint64
	go func() {
		s, err := b.apply(ctx, "configure", el, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
			once.Do(func() { close(entered) })
			<-release
			set := r.Settings
			set.ErrorCooldown = 42 * time.Second
			return r.Configure(now, set), nil
		})
		heldSeq = s.seq
		held <- err
	}()
	<-entered

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
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the held write: %v", err)
	}
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
