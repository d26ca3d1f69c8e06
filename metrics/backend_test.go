package metrics_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/metrics"
)

// abilities lists the optional interfaces b implements.
func abilities(b gateway.Backend) (runner, pinger, kv, catchUp bool) {
	_, runner = b.(gateway.Runner)
	_, pinger = b.(gateway.Pinger)
	_, kv = b.(gateway.KV)
	_, catchUp = b.(gateway.CatchUpReporter)
	return
}

// bare is a Backend with none of the optional abilities.
type bare struct{ gateway.Backend }

// caughtUp is a memory backend that also reports that it caught up.
type caughtUp struct{ *memory.Backend }

func (caughtUp) CaughtUp(context.Context) error { return nil }

// TestBackendDecoratorKeepsAbilities checks that the decorated backend has
// exactly the optional abilities of the backend it wraps.
func TestBackendDecoratorKeepsAbilities(t *testing.T) {
	ctx := context.Background()
	nb, err := nats.OpenEmbedded(ctx, nats.EmbeddedConfig{DataDir: t.TempDir(), ServerName: "metrics-test"}, nats.Config{},
		nats.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nb.Close() })

	for _, tc := range []struct {
		name                        string
		b                           gateway.Backend
		runner, pinger, kv, catchUp bool
	}{
		{"memory", memory.New(), true, false, true, false},
		{"nats", nb, true, true, true, true},
		{"bare", bare{memory.New()}, false, false, false, false},
		{"catch-up reporter", caughtUp{memory.New()}, true, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			wrapped := m.Backend(tc.b)
			r, p, kv, cu := abilities(wrapped)
			if r != tc.runner || p != tc.pinger || kv != tc.kv || cu != tc.catchUp {
				t.Fatalf("wrapped: Runner %v Pinger %v KV %v CatchUpReporter %v; want %v %v %v %v",
					r, p, kv, cu, tc.runner, tc.pinger, tc.kv, tc.catchUp)
			}
			if _, fake := tc.b.(caughtUp); fake { // the NATS one needs its Run loop
				if err := wrapped.(gateway.CatchUpReporter).CaughtUp(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if kv {
				store := wrapped.(gateway.KV)
				if _, err := store.Create(ctx, "metrics/test", []byte("x")); err != nil {
					t.Fatal(err)
				}
				if _, err := store.Get(ctx, "metrics/missing"); err == nil {
					t.Fatal("Get of a missing key succeeded")
				}
				if got := backendErrors(t, m, "kv_get", "not_found"); got != 1 {
					t.Errorf("kv_get not_found errors: %v, want 1", got)
				}
			}
			if p {
				if err := wrapped.(gateway.Pinger).Ping(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// backendErrors is the value of elector_backend_errors_total{op,kind}.
func backendErrors(t *testing.T, m *metrics.Metrics, op, kind string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "elector_backend_errors_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["kind"] == kind {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}
