package metrics_test

import (
	"context"
	"errors"
	"testing"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/metrics"
)

// TestBackendObserverCountsCallsAndErrors checks that a Gateway observed by
// the metrics times its backend calls, KV calls included, and counts their
// errors by kind.
func TestBackendObserverCountsCallsAndErrors(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	b := memory.New()
	gw := gateway.New(m.ObserveBackend(b), gateway.Config{})
	if _, _, err := gw.Campaign(ctx, "metrics", gateway.CampaignRequest{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Heartbeat(ctx, "metrics", "a", "not-the-token"); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("heartbeat with a wrong token: %v", err)
	}
	if _, err := gw.KV().Get(ctx, "metrics/missing"); err == nil {
		t.Fatal("Get of a missing key succeeded")
	}
	for _, tc := range []struct {
		op, kind string
		want     float64
	}{
		{"heartbeat", "token_mismatch", 1},
		{"kv_get", "not_found", 1},
		{"campaign", "exists", 0},
	} {
		if got := backendErrors(t, m, tc.op, tc.kind); got != tc.want {
			t.Errorf("%s %s errors: %v, want %v", tc.op, tc.kind, got, tc.want)
		}
	}
	// One op whose series is made up front, one whose series is made on
	// its first call.
	for _, op := range []string{"campaign", "kv_get"} {
		if got := backendCalls(t, m, op); got != 1 {
			t.Errorf("%s calls timed: %v, want 1", op, got)
		}
	}
}

// backendErrors is the value of elector_backend_errors_total{op,kind}.
func backendErrors(t *testing.T, m *metrics.Metrics, op, kind string) float64 {
	t.Helper()
	var v float64
	eachSample(t, m, "elector_backend_errors_total", func(labels map[string]string, value func() float64) {
		if labels["op"] == op && labels["kind"] == kind {
			v = value()
		}
	})
	return v
}

// backendCalls is the sample count of
// elector_backend_operation_duration_seconds{op}.
func backendCalls(t *testing.T, m *metrics.Metrics, op string) float64 {
	t.Helper()
	var v float64
	eachSample(t, m, "elector_backend_operation_duration_seconds", func(labels map[string]string, value func() float64) {
		if labels["op"] == op {
			v = value()
		}
	})
	return v
}

// eachSample calls f with the labels and value of every sample of name.
func eachSample(t *testing.T, m *metrics.Metrics, name string, f func(map[string]string, func() float64)) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			f(labels, func() float64 {
				if h := s.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return s.GetCounter().GetValue()
			})
		}
	}
}
