package eventually

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Interval is how often a condition is asked again.
const Interval = 10 * time.Millisecond

// errNotYet is NoError's stand-in for a condition that reported false.
var errNotYet = errors.New("condition does not hold")

// Poll calls cond every Interval until it returns nil or ctx ends, and
// returns nil once it held, or cond's last error.
func Poll(ctx context.Context, cond func() error) error {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return err
		}
	}
}

// NoError waits up to timeout for cond to return nil, failing t with
// cond's last error, naming what it waited for, when it does not.
func NoError(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Poll(ctx, cond); err != nil {
		t.Fatalf("waited %s for %s: %v", timeout, what, err)
	}
}

// NoErrorUntil waits for cond to return nil until ctx ends, failing t with
// cond's last error, naming what it waited for, when it does not: for a
// test whose context bounds the whole of it, waits included.
func NoErrorUntil(ctx context.Context, t testing.TB, what string, cond func() error) {
	t.Helper()
	if err := Poll(ctx, cond); err != nil {
		t.Fatalf("waited for %s until %v: %v", what, context.Cause(ctx), err)
	}
}

// True waits up to timeout for cond to hold, failing t, naming what it
// waited for, when it does not.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	NoError(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}
