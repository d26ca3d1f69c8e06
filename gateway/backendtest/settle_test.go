package backendtest

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// lateHold is a backend whose hold of a failed leader's promise shows in
// its reads for lag beyond when the Record ends it, as a backend whose
// engine ends a hold late does (the NATS server expires the hold's
// marker on a coarse clock, later still on a loaded machine). It
// remembers when the next campaign came after the failure.
type lateHold struct {
	gateway.Backend
	lag time.Duration

	mu        sync.Mutex
	until     time.Time // when the hold shows no more
	campaign  time.Time // the first campaign after the failure
	failedNow bool
}

func (b *lateHold) FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (gateway.Status, error) {
	st, err := b.Backend.FailLeader(ctx, election, id, tokenHash, term, reason)
	if err == nil {
		b.mu.Lock()
		b.until, b.failedNow = time.Now().Add(shortTTL+b.lag), true
		b.mu.Unlock()
	}
	return st, err
}

func (b *lateHold) Election(ctx context.Context, name string) (gateway.Election, error) {
	e, err := b.Backend.Election(ctx, name)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && e.HandoverUntil.IsZero() && time.Now().Before(b.until) {
		e.HandoverUntil = b.until
	}
	return e, err
}

func (b *lateHold) Campaign(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	b.mu.Lock()
	if b.failedNow && b.campaign.IsZero() {
		b.campaign = time.Now()
	}
	b.mu.Unlock()
	return b.Backend.Campaign(ctx, election, c, defaults)
}

// TestSettleWaitsForAHoldTheBackendStillShows: a failed leader's hold
// with nobody in line ends without an event, so settle cannot see it end
// by the events; once the hold's window has passed, a backend that still
// shows the promotion held back has not ended it, and the next step
// waits. Otherwise the next campaign would find the slot still kept and
// be taken for a disagreement (CI saw this on NATS on a loaded machine).
func TestSettleWaitsForAHoldTheBackendStillShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lag := 4 * time.Second
		b := &lateHold{Backend: memory.New(), lag: lag}
		start(t, b)
		ops := []op{
			{kind: opConfigure, cooldown: durLong}, // the failed leader does not come back
			{kind: opCampaign, id: "a", ttl: durShort},
			{kind: opFailLeader, id: "a"},
			{kind: opCampaign, id: "b", ttl: durShort},
		}
		_, d, log, err := runSequence(b, timing{}, allowances{}, fixed(ops))
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			t.Fatalf("disagreement at step %d: %s\n%s", d.step+1, d.what, log)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.campaign.Before(b.until) {
			t.Fatalf("the campaign after the failure came %s before the backend's hold ended", b.until.Sub(b.campaign))
		}
	})
}
