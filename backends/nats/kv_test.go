package nats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
)

func TestKVConformanceSingleServer(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	backendtest.RunKV(t, func(t *testing.T) gateway.KV { return open(t, e, freshConfig()) })
}

// TestKVReplicasShareOneBucket: what one gateway replica writes, another
// with the same Config reads and compare-and-sets, and a delete's marker
// expires without making the key reappear or its old revision valid.
func TestKVReplicasShareOneBucket(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	cfg.MarkerTTL = time.Second
	a, b := open(t, e, cfg), open(t, e, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	r1, err := a.Create(ctx, "hooks/h1", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	it, err := b.Get(ctx, "hooks/h1")
	if err != nil || string(it.Value) != "v1" || it.Revision != r1 {
		t.Fatalf("get through the other replica: %+v, %v", it, err)
	}
	r2, err := b.Update(ctx, "hooks/h1", []byte("v2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Update(ctx, "hooks/h1", []byte("v3"), r1); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("stale update through the first replica: %v, want ErrRevisionMismatch", err)
	}
	if err := a.Delete(ctx, "hooks/h1", r2); err != nil {
		t.Fatal(err)
	}
	st, err := a.js.Stream(ctx, a.kvStreamConfig().Name)
	if err != nil {
		t.Fatal(err)
	}
	// The purge marker goes once its TTL has passed.
	eventually.NoErrorUntil(ctx, t, "the kv stream to hold no message once the purge marker's TTL passed", func() error {
		if info, err := st.Info(ctx); err != nil {
			return err
		} else if info.State.Msgs != 0 {
			return fmt.Errorf("%d messages left", info.State.Msgs)
		}
		return nil
	})
	if _, err := b.Get(ctx, "hooks/h1"); !errors.Is(err, gateway.ErrKeyNotFound) {
		t.Fatalf("get after the marker expired: %v, want ErrKeyNotFound", err)
	}
	if _, err := b.Update(ctx, "hooks/h1", []byte("v4"), r2); !errors.Is(err, gateway.ErrRevisionMismatch) {
		t.Fatalf("update at the deleted revision after the marker expired: %v, want ErrRevisionMismatch", err)
	}
	if items, err := a.List(ctx, "hooks"); err != nil || len(items) != 0 {
		t.Fatalf("list after delete: %+v, %v", items, err)
	}
	if _, err := b.Create(ctx, "hooks/h1", []byte("v5")); err != nil {
		t.Fatalf("create after the marker expired: %v", err)
	}
}

// TestKVFailsFastWhileNATSIsDown: KV calls answer ErrUnavailable rather
// than waiting out their timeout.
func TestKVFailsFastWhileNATSIsDown(t *testing.T) {
	e := startServer(t, t.TempDir())
	b := open(t, e, freshConfig())
	e.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.Get(ctx, "a"); !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("get: %v, want ErrUnavailable", err)
	}
	if _, err := b.Create(ctx, "a", nil); !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("create: %v, want ErrUnavailable", err)
	}
	if _, err := b.List(ctx, ""); !errors.Is(err, gateway.ErrUnavailable) {
		t.Errorf("list: %v, want ErrUnavailable", err)
	}
}
