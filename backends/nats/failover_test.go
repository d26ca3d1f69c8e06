package nats

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestSilentLeaderIsReplaced stops a leader's heartbeats and measures how
// long after its last heartbeat the next candidate is promoted, against the
// TTL. The time is reported, not asserted.
func TestSilentLeaderIsReplaced(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	a, b := open(t, e, cfg), open(t, e, cfg)
	run(t, a)
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const ttl = 2 * time.Second
	th, _ := campaignT(t, a, "failover", "old", ttl)
	thNew, _ := campaignT(t, b, "failover", "new", ttl)
	events, err := b.Watch(ctx, "failover", "")
	if err != nil {
		t.Fatal(err)
	}
	// The follower keeps heartbeating; the leader beats once more, then stops.
	go func() {
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		for {
			_, _ = b.Heartbeat(ctx, "failover", "new", thNew)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	if _, err := a.Heartbeat(ctx, "failover", "old", th); err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	for {
		select {
		case ev := <-events:
			if ev.Type != gateway.EventLeaderBegin {
				continue
			}
			took := time.Since(last)
			if ev.Candidate.ID != "new" || ev.Term != 2 || ev.Previous == nil || ev.Previous.ID != "old" || ev.Reason != gateway.ReasonExpired {
				t.Fatalf("leader.begin %+v, want new at term 2 after old expired", ev)
			}
			t.Logf("failover: new leader %s after the last heartbeat, TTL %s (message TTLs are whole seconds; the server's expiry timer adds its latency)", took.Round(time.Millisecond), ttl)
			return
		case <-ctx.Done():
			t.Fatal("no new leader")
		}
	}
}
