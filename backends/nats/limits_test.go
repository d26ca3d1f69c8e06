package nats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestLimitsNeverRefuseOnAStaleView: the gateway's limit check lets a
// campaign through on the view's counts, but refuses one only on a
// linearizable read, so a view that still shows a resigned candidate
// does not refuse the campaign that takes its place.
func TestLimitsNeverRefuseOnAStaleView(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	a := open(t, e, freshConfig())
	b := open(t, e, a.cfg)
	run(t, a)
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := gateway.Config{MaxCandidates: 2, MaxElections: 1}
	ga, gb := gateway.New(a, cfg), gateway.New(b, cfg)
	campaign := func(g *gateway.Gateway, election, id string) (string, error) {
		_, token, err := g.Campaign(ctx, election, gateway.CampaignRequest{ID: id, TTL: time.Minute})
		return token, err
	}
	if _, err := campaign(ga, "lim", "x"); err != nil {
		t.Fatal(err)
	}
	y, err := campaign(ga, "lim", "y")
	if err != nil {
		t.Fatal(err)
	}
	// b's view caught up: both limits refuse through b. (view is nil, and
	// reads go to the stream leader, until the view has loaded.)
	if err := eventually.Poll(ctx, func() error {
		r, err := b.view(ctx)
		if err == nil && r == nil {
			err = errors.New("b's view has not loaded")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var le *gateway.LimitError
	if _, err := campaign(gb, "lim", "z"); !errors.As(err, &le) || le.Limit != gateway.LimitCandidatesPerElection {
		t.Fatalf("third candidate: %v, want the candidates limit", err)
	}
	if _, err := campaign(gb, "other", "z"); !errors.As(err, &le) || le.Limit != gateway.LimitElections {
		t.Fatalf("second election: %v, want the elections limit", err)
	}

	// y resigns through a; b's view is held back to before that, as if
	// its watch had not delivered the resignation yet.
	view := b.running()
	before, _ := view.latest("lim")
	if err := ga.Resign(ctx, "lim", "y", y); err != nil {
		t.Fatal(err)
	}
	for {
		if s, _ := view.latest("lim"); s.seq > before.seq {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("b's view never got the resignation")
		case <-time.After(time.Millisecond):
		}
	}
	view.mu.Lock()
	view.recs["lim"], view.seen = before.viewed(), before.seq
	delete(view.ahead, "lim")
	view.mu.Unlock()
	if n, err := b.CountCandidates(ctx, "lim"); err != nil || n != 2 {
		t.Fatalf("b's stale count: %d, %v; want 2", n, err)
	}
	if _, err := campaign(gb, "lim", "z"); err != nil {
		t.Fatalf("campaign in y's place through a stale view: %v", err)
	}
}
