package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// A campaign whose transaction succeeded answers with the candidate, even
// when the replica's watch lags and a progress notification claims a
// revision far ahead of the events it has applied (etcd 3.4 answers
// progress requests out of band, ahead of events queued for a busy watch
// stream; with thousands of watches on the stream, the campaign was
// answered 404 although its candidacy was written).
func TestCampaignIsAnsweredFromItsOwnWrite(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "ahead")
	run(t, b)
	ctx := context.Background()
	if _, _, err := b.Elections(ctx); err != nil { // the cache is loaded
		t.Fatal(err)
	}

	release := b.HoldCache()
	defer release()
	b.ProgressAhead(math.MaxInt32)
	type result struct {
		st  gateway.Status
		err error
	}
	res := make(chan result, 1)
	th := gateway.HashToken(gateway.NewToken())
	go func() {
		st, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings())
		res <- result{st, err}
	}()
	eventually.True(t, 10*time.Second, "candidacy written", func() bool {
		resp, err := b.Client().Get(ctx, "ahead/_elector/ids/e/a")
		return err == nil && len(resp.Kvs) == 1
	})
	select {
	case r := <-res:
		t.Fatalf("campaign answered before its replica saw its write: %+v, %v", r.st, r.err)
	default:
	}
	release()
	r := <-res
	if r.err != nil {
		t.Fatalf("campaign whose write succeeded: %v", r.err)
	}
	if r.st.Candidate.ID != "a" || r.st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign: %+v, want a leading", r.st)
	}
}

// Reads through a replica whose watch lags behind a write made through
// another replica wait until the replica has seen it, whatever they read:
// a leader deposed elsewhere is never told, nor shown, that it leads.
func TestReadsWaitForWritesOfOtherReplicas(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	a := newBackend(t, ms, "fresh")
	other := newBackend(t, ms, "fresh")
	run(t, a)
	run(t, other)
	ctx := context.Background()

	leads := func(st gateway.Status) bool { return st.Candidate.State == gateway.StateLeader }
	reads := []struct {
		name string
		// read reports whether a shows x as leader, through a.
		read func(ctx context.Context, e, th string) (bool, error)
	}{
		{"heartbeat", func(ctx context.Context, e, th string) (bool, error) {
			st, err := a.Heartbeat(ctx, e, "x", th)
			return leads(st), err
		}},
		{"election", func(ctx context.Context, e, _ string) (bool, error) {
			el, err := a.Election(ctx, e)
			return el.Leader != nil && el.Leader.ID == "x", err
		}},
		{"elections", func(ctx context.Context, e, _ string) (bool, error) {
			all, _, err := a.Elections(ctx)
			for _, el := range all {
				if el.Name == e && el.Leader != nil && el.Leader.ID == "x" {
					return true, err
				}
			}
			return false, err
		}},
	}
	for _, tt := range reads {
		t.Run(tt.name, func(t *testing.T) {
			e := "fresh-" + tt.name
			th := gateway.HashToken(gateway.NewToken())
			st, err := a.Campaign(ctx, e, gateway.Candidacy{ID: "x", TTL: 30 * time.Second, TokenHash: th}, gateway.DefaultSettings())
			if err != nil || !leads(st) {
				t.Fatalf("campaign x: %+v, %v", st, err)
			}
			if _, err := other.Election(ctx, e); err != nil {
				t.Fatal(err)
			}

			release := a.HoldCache()
			defer release()
			// Deposed through the other replica: an error report, as the
			// begin-deadline webhook makes.
			if _, err := other.ReportError(ctx, e, "x", th, "begin deadline passed"); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			led, err := tt.read(rctx, e, th)
			cancel()
			switch {
			case err == nil && led:
				t.Fatalf("%s through a lagging replica shows the deposed x leading", tt.name)
			case err == nil:
				t.Fatalf("%s through a replica held behind the deposition answered at all", tt.name)
			case !errors.Is(err, gateway.ErrUnavailable):
				t.Fatalf("%s: %v, want ErrUnavailable while the replica cannot catch up", tt.name, err)
			}
			release()
			led, err = tt.read(ctx, e, th)
			if err != nil || led {
				t.Fatalf("%s once caught up: led %v, %v; want x not leading", tt.name, led, err)
			}
		})
	}
}

// Against members whose progress notifications cannot be trusted, a read
// after writes that touched nothing under the prefix still answers: a
// barrier write brings the watch there.
func TestReadsAnswerWithoutProgressNotifications(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "barrier")
	ctx := context.Background()
	if _, _, err := b.Elections(ctx); err != nil {
		t.Fatal(err)
	}
	b.DistrustProgress()
	candidate(t, b, "e", "a", 10*time.Second)
	for i := range 3 {
		if _, err := b.Client().Put(ctx, fmt.Sprintf("elsewhere/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Election(ctx, "e"); err != nil {
			t.Fatalf("read after a write elsewhere: %v", err)
		}
	}
	if err := b.CaughtUp(ctx); err != nil {
		t.Fatalf("CaughtUp after a write elsewhere: %v", err)
	}
}

// Head is a cursor just after the latest write: a watch from it gets the
// next events and none before.
func TestHeadIsACursorAfterTheLatestWrite(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "head")
	run(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	candidate(t, b, "e", "a", 10*time.Second)
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hp, ok := gateway.ParsePosition(head)
	if !ok || hp.String() != head {
		t.Fatalf("head %q is not a cursor", head)
	}
	ch, err := b.Watch(ctx, "", head)
	if err != nil {
		t.Fatal(err)
	}
	candidate(t, b, "e", "b", 10*time.Second)
	ev := nextEvent(t, ch)
	p, _ := gateway.ParsePosition(ev.ID)
	if ev.Type != gateway.EventCandidateJoined || ev.Candidate.ID != "b" || p.Compare(hp) <= 0 {
		t.Fatalf("first event after head %s: %s %s of %+v", head, ev.ID, ev.Type, ev.Candidate)
	}
}

// CountElections counts what Elections lists, on every replica, without
// a request to etcd.
func TestCountElectionsCountsWhatElectionsLists(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "count")
	replica := newBackend(t, ms, "count")
	run(t, b)
	ctx := context.Background()
	for i := range 5 {
		candidate(t, b, fmt.Sprintf("e%d", i), "a", 10*time.Second)
	}
	if _, err := b.Configure(ctx, "configured", gateway.Settings{ErrorCooldown: time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*etcd.Backend{b, replica} {
		all, _, err := r.Elections(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.CountElections(ctx)
		if err != nil || n != len(all) || n != 6 {
			t.Fatalf("CountElections = %d, %v; Elections lists %d, want 6", n, err, len(all))
		}
	}
}
