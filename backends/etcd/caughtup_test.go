package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

func TestCaughtUp(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx := context.Background()
	candidate(t, b, "e1", "node-a", 5*time.Second)
	if err := b.CaughtUp(ctx); err != nil {
		t.Fatalf("CaughtUp after a campaign: %v", err)
	}
	// Revisions that touch nothing under the prefix, and KV writes under
	// it, are caught up with too.
	for i := range 5 {
		if _, err := b.Client().Put(ctx, fmt.Sprintf("elsewhere/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Create(ctx, fmt.Sprintf("webhooks/k%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.CaughtUp(ctx); err != nil {
		t.Fatalf("CaughtUp after writes: %v", err)
	}

	ms[0].stop()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := b.CaughtUp(cctx)
	if !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("CaughtUp with etcd stopped: %v, want ErrUnavailable", err)
	}
}
