package etcd_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// ours returns the stacks of goroutines running this package's code (not
// its tests, not etcd's).
func ours() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "electorhq/elector/backends/etcd.") {
			out = append(out, g)
		}
	}
	return out
}

// TestCloseLeavesNoGoroutines runs the backend with watchers, some still
// open at Close, and checks that none of its goroutines outlive Close. It
// is not parallel, so no other test's backend runs meanwhile.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(ctx, "leak", gateway.Candidacy{ID: "a", TTL: 5 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	if _, err := b.Watch(wctx, "leak", ""); err != nil {
		t.Fatal(err)
	}
	open, err := b.Watch(context.Background(), "", "") // still open at Close
	if err != nil {
		t.Fatal(err)
	}
	wcancel()
	if err := b.Resign(ctx, "leak", "a", th); err != nil {
		t.Fatal(err)
	}
	if len(ours()) < 3 {
		t.Fatalf("the check sees %d goroutines of the running backend; it would miss a leak", len(ours()))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for range open {
	}
	eventually.NoError(t, 5*time.Second, "every goroutine of the backend to end after Close", func() error {
		if left := ours(); len(left) > 0 {
			return fmt.Errorf("%d goroutines left:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		return nil
	})
}
