package nats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestWriteLosingEveryAttemptGivesUpContended: a write of an election
// that another replica's write of the same election beats before each of
// its publishes (made from inside its transition) gives up after
// gateway.Conflicts.Attempts attempts with gateway.ErrContended, having
// written nothing; every write of the other replica landed.
func TestWriteLosingEveryAttemptGivesUpContended(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	a := open(t, e, freshConfig())
	b := open(t, e, a.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	campaignT(t, a, "busy", "x", time.Minute)

	set := gateway.DefaultSettings()
	set.ErrorCooldown = 42 * time.Second
	attempts := 0
	_, err := a.apply(ctx, "configure", "busy", nil, writeOnSuccess, func(ctx context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		attempts++
		c := gateway.Candidacy{ID: fmt.Sprintf("c%d", attempts), TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}
		if _, err := b.Campaign(ctx, "busy", c, gateway.DefaultSettings()); err != nil {
			return nil, err
		}
		return r.Configure(now, set), nil
	})
	if !errors.Is(err, gateway.ErrContended) {
		t.Fatalf("apply = %v, want ErrContended", err)
	}
	if attempts != gateway.Conflicts.Attempts {
		t.Fatalf("%d attempts, want %d", attempts, gateway.Conflicts.Attempts)
	}
	el, err := a.Election(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if el.Settings.ErrorCooldown == set.ErrorCooldown {
		t.Fatalf("the contended write was stored: %+v", el.Settings)
	}
	if got := len(el.Candidates); got != 1+attempts {
		t.Fatalf("%d candidates, want x and one per attempt (%d)", got, 1+attempts)
	}
}
