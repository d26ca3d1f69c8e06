package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/metrics"
)

// BenchmarkAPI is the API's own cost of the requests of the fleet loads,
// in process (a response recorder, no network): routing, the middleware
// chain, the limits, the handler, the gateway over the memory backend and
// the JSON answer, configured as elector serve configures them. Run with
// -benchmem: allocations per request are the steadier figure.
func BenchmarkAPI(b *testing.B) {
	back := memory.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := gateway.New(back, gateway.Config{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = gw.Run(ctx) }()
	// The heartbeat limit is on, as in elector serve, but too high for the
	// loop to reach: one candidate heartbeats as fast as it can.
	h := New(gw, Config{Logger: log, HeartbeatRate: 1e9, HeartbeatBurst: 1e9,
		MaxReads: DefaultMaxReads, Metrics: metrics.New()})
	st, token, err := gw.Campaign(ctx, "bench", gateway.CampaignRequest{ID: "node-1", TTL: time.Hour})
	if err != nil || st.Candidate.State != gateway.StateLeader {
		b.Fatalf("campaign: %+v, %v", st, err)
	}
	for _, bc := range []struct {
		name, method, path string
		token              string
		want               int
	}{
		{"healthz", "GET", "/healthz", "", http.StatusOK},
		{"heartbeat", "PUT", "/v1/elections/bench/candidates/node-1/heartbeat", token, http.StatusOK},
		{"leader", "GET", "/v1/elections/bench/leader", "", http.StatusOK},
		{"leader, local", "GET", "/v1/elections/bench/leader?consistency=local", "", http.StatusOK},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(bc.method, bc.path, nil)
				if bc.token != "" {
					r.Header.Set(TokenHeader, bc.token)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != bc.want {
					b.Fatalf("%s %s: %d %s", bc.method, bc.path, w.Code, w.Body)
				}
			}
		})
	}
}
