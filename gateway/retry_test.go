package gateway_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/electorhq/elector/gateway"
)

func TestConflictsTriesAtOnceThenBacksOffWithinItsBound(t *testing.T) {
	p := gateway.Conflicts
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var waited []time.Duration
		i := 0
		for ; ; i++ {
			before := time.Now()
			if err := p.Try(context.Background(), i); err != nil {
				if !errors.Is(err, gateway.ErrContended) || !errors.Is(err, gateway.ErrUnavailable) {
					t.Fatalf("attempt %d: %v, want ErrContended (an ErrUnavailable)", i, err)
				}
				break
			}
			waited = append(waited, time.Since(before))
		}
		if i != p.Attempts {
			t.Fatalf("gave up at attempt %d, want %d", i, p.Attempts)
		}
		if waited[0] != 0 || waited[1] != 0 {
			t.Fatalf("the first two attempts waited %s and %s, want none", waited[0], waited[1])
		}
		for i, w := range waited[2:] {
			mean := min(p.First<<i, p.Max)
			if w < mean/2 || w > mean*3/2 {
				t.Fatalf("attempt %d waited %s, want %s ±50%%", i+2, w, mean)
			}
		}
		// The bound's argument: about a second of pauses in all.
		if total := time.Since(start); total < 400*time.Millisecond || total > 1500*time.Millisecond {
			t.Fatalf("the pauses of %d attempts took %s, want about a second", p.Attempts, total)
		}
	})
}

func TestConflictsPauseEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		err := gateway.Conflicts.Pause(ctx, 12)
		if !errors.Is(err, gateway.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, gateway.ErrContended) {
			t.Fatalf("Pause = %v, want ErrUnavailable and the context's error", err)
		}
	})
}
