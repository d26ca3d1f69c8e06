package nats

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestElectionLeaderIsElectionWithoutCandidates reads through one replica
// what another just wrote: ElectionLeader must answer as Election does
// (the write included, as a linearizable read must), less the candidates.
func TestElectionLeaderIsElectionWithoutCandidates(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	a := open(t, e, freshConfig())
	b := open(t, e, a.cfg)
	run(t, a)
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	check := func(step, election, leader string) {
		t.Helper()
		full, err := b.Election(ctx, election)
		if err != nil {
			t.Fatalf("%s: election: %v", step, err)
		}
		got, err := b.ElectionLeader(ctx, election)
		if err != nil {
			t.Fatalf("%s: election leader: %v", step, err)
		}
		if got.Leader == nil || got.Leader.ID != leader {
			t.Fatalf("%s: leader %+v, want %q", step, got.Leader, leader)
		}
		if got.Leader.ExpiresAt.IsZero() {
			t.Fatalf("%s: leader without its expiry: %+v", step, got.Leader)
		}
		want := full
		want.Candidates = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", step, got, want)
		}
	}
	// Each read takes a leader's expiry from the liveness replica b has
	// followed, or from the server when b has not seen the message yet:
	// the same instant to within the publish, not to the nanosecond. So
	// the reads begin once b follows both candidacies' messages.
	x, _ := campaignT(t, a, "lead", "x", time.Minute)
	y, _ := campaignT(t, a, "lead", "y", time.Minute)
	for id, th := range map[string]string{"x": x, "y": y} {
		eventually.True(t, time.Minute, "replica b following "+id+"'s liveness", func() bool {
			_, ok := b.live.expiry(b.subj.alive("lead", nonce(th)))
			return ok
		})
	}
	check("x leads", "lead", "x")
	if _, err := a.ReportError(ctx, "lead", "x", x, "broken"); err != nil {
		t.Fatal(err)
	}
	check("y leads after x's error", "lead", "y")

	if _, err := b.ElectionLeader(ctx, "absent"); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("absent election: %v, want ErrElectionNotFound", err)
	}
}
