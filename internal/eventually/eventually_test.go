package eventually

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a testing.TB whose Fatalf records its message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

// run calls f with a recorder and returns what it failed with, or "".
func run(t *testing.T, f func(tb testing.TB)) (msg string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != any(r) {
			panic(p)
		}
		msg = r.msg
	}()
	f(r)
	return ""
}

func TestTrueReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		msg := run(t, func(tb testing.TB) {
			True(tb, time.Minute, "the third call", func() bool { calls++; return calls == 3 })
		})
		if msg != "" {
			t.Fatalf("failed: %s", msg)
		}
		if got := time.Since(start); got != 2*Interval {
			t.Fatalf("returned after %s, want two intervals (%s)", got, 2*Interval)
		}
	})
}

func TestNoErrorFailsWithTheLastErrorAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		msg := run(t, func(tb testing.TB) {
			NoError(tb, time.Second, "the replica", func() error { calls++; return fmt.Errorf("call %d", calls) })
		})
		if got := time.Since(start); got != time.Second {
			t.Fatalf("failed after %s, want 1s", got)
		}
		want := fmt.Sprintf("waited 1s for the replica: call %d", calls)
		if msg != want {
			t.Fatalf("failed with %q, want %q", msg, want)
		}
	})
}

func TestTrueNamesWhatItWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg := run(t, func(tb testing.TB) {
			True(tb, time.Second, "the leader", func() bool { return false })
		})
		if !strings.Contains(msg, "the leader") || !strings.Contains(msg, errNotYet.Error()) {
			t.Fatalf("failed with %q", msg)
		}
	})
}

func TestPollEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		boom := errors.New("boom")
		go func() { time.Sleep(time.Second); cancel() }()
		if err := Poll(ctx, func() error { return boom }); err != boom {
			t.Fatalf("Poll = %v, want the condition's last error", err)
		}
	})
}

func TestNoErrorUntilFailsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		msg := run(t, func(tb testing.TB) {
			NoErrorUntil(ctx, tb, "the stream", func() error { return errors.New("behind") })
		})
		if got := time.Since(start); got != time.Second {
			t.Fatalf("failed after %s, want 1s", got)
		}
		if !strings.Contains(msg, "the stream") || !strings.Contains(msg, "behind") || !strings.Contains(msg, context.DeadlineExceeded.Error()) {
			t.Fatalf("failed with %q", msg)
		}
	})
}
