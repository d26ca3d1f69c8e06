package ctxwait

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleepWaitsItsDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Minute) {
			t.Fatal("Sleep reported an ended context")
		}
		if got := time.Since(start); got != time.Minute {
			t.Fatalf("slept %s, want 1m", got)
		}
	})
}

func TestSleepEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if Sleep(ctx, time.Hour) {
			t.Fatal("Sleep reported its duration passed")
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("returned after %s, want 1s (the context's end)", got)
		}
	})
}
