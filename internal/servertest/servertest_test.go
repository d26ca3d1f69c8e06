package servertest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
)

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckLeaksFindsAGoroutineOfTheGatewaysCode: a goroutine running a
// backend's loop that started after the snapshot is reported, with its
// stack, until it ends.
func TestCheckLeaksFindsAGoroutineOfTheGatewaysCode(t *testing.T) {
	before := goroutineIDs()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = memory.New().Run(ctx) }()
	// Once the loop runs (its goroutine may not have reached it yet), it
	// is what checkLeaks must find.
	for start := time.Now(); len(leaked(before)) == 0; runtime.Gosched() {
		if time.Since(start) > time.Minute {
			t.Fatal("memory.(*Backend).Run never started")
		}
	}

	leaking := &recorder{TB: t}
	checkLeaks(leaking, before, 50*time.Millisecond)
	if len(leaking.errs) != 1 || !strings.Contains(leaking.errs[0], "backends/memory.(*Backend).Run") {
		t.Fatalf("with the loop running: %q; want one error naming it", leaking.errs)
	}
	cancel()
	<-done
	clean := &recorder{TB: t}
	checkLeaks(clean, before, time.Minute)
	if len(clean.errs) != 0 {
		t.Fatalf("with the loop ended: %q", clean.errs)
	}
}

// TestStartServesAndStopReturnsRunsResult: a started gateway answers at
// its URL, and Stop returns nil after a clean shutdown, also when called
// again.
func TestStartServesAndStopReturnsRunsResult(t *testing.T) {
	gw := Start(t)
	if !strings.HasPrefix(gw.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q", gw.URL)
	}
	if err := gw.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := gw.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}
