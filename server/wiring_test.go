package server

import (
	"log/slog"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
)

// TestDefaultLimitsNeverRefuseAFleetBehindOneProxy: by default no limit is
// kept per client address for writes (behind a load balancer every
// candidate has the proxy's address); heartbeats are limited per
// candidate, and reads by how many run at once.
func TestDefaultLimitsNeverRefuseAFleetBehindOneProxy(t *testing.T) {
	cfg := DefaultConfig().apiConfig(slog.Default(), newMetrics(DefaultConfig(), slog.Default()))
	if cfg.WriteRate != 0 || cfg.ReadRate != 0 {
		t.Errorf("per-address limits on by default: writes %g/s, reads %g/s", cfg.WriteRate, cfg.ReadRate)
	}
	if cfg.HeartbeatRate != api.DefaultHeartbeatRate || cfg.HeartbeatBurst != api.DefaultHeartbeatBurst {
		t.Errorf("heartbeat limit %g/%d, want %d/%d", cfg.HeartbeatRate, cfg.HeartbeatBurst, api.DefaultHeartbeatRate, api.DefaultHeartbeatBurst)
	}
	if cfg.MaxReads != api.DefaultMaxReads {
		t.Errorf("concurrent reads %d, want %d", cfg.MaxReads, api.DefaultMaxReads)
	}
	if cfg.BodyTimeout != api.DefaultBodyTimeout {
		t.Errorf("body timeout %s, want %s", cfg.BodyTimeout, api.DefaultBodyTimeout)
	}
}

// TestConfiguredLimitsReachTheAPI: limits an operator sets are applied,
// the heartbeat rate raised to cover the shortest TTL.
func TestConfiguredLimitsReachTheAPI(t *testing.T) {
	c := DefaultConfig()
	c.API.WriteRate, c.API.WriteBurst, c.API.HeartbeatRate, c.API.HeartbeatBurst = 20, 40, 5, 9
	c.API.ReadRate, c.API.ReadBurst, c.API.MaxReads, c.API.BodyTimeout = 50, 100, 7, 3*time.Second
	cfg := c.apiConfig(slog.Default(), newMetrics(c, slog.Default()))
	if cfg.WriteRate != 20 || cfg.WriteBurst != 40 || cfg.HeartbeatRate != 6 || cfg.HeartbeatBurst != 9 ||
		cfg.ReadRate != 50 || cfg.ReadBurst != 100 || cfg.MaxReads != 7 || cfg.BodyTimeout != 3*time.Second {
		t.Errorf("API limits %+v", cfg)
	}
}

func TestHeartbeatRateCoversTheShortestTTL(t *testing.T) {
	tests := []struct {
		limit  float64
		minTTL time.Duration
		want   float64
	}{
		{10, time.Second, 10},
		{5, time.Second, 6},
		{10, 100 * time.Millisecond, 60},
		{0, time.Millisecond, 0},
	}
	for _, tt := range tests {
		if got := heartbeatRate(tt.limit, tt.minTTL); got != tt.want {
			t.Errorf("limit %g, min TTL %s: %g, want %g", tt.limit, tt.minTTL, got, tt.want)
		}
	}
}

// TestHTTPConfigReachesTheHTTPServer: the HTTP server gets each timeout,
// and a zero read header timeout takes its default.
func TestHTTPConfigReachesTheHTTPServer(t *testing.T) {
	tests := []struct {
		name string
		in   HTTPConfig
		want [3]time.Duration // read header, write, idle
	}{
		{"set", HTTPConfig{ReadHeaderTimeout: time.Second, WriteTimeout: 2 * time.Second, IdleTimeout: 3 * time.Second}, [3]time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{"zero", HTTPConfig{}, [3]time.Duration{DefaultReadHeaderTimeout, 0, 0}},
	}
	for _, tt := range tests {
		srv := tt.in.server(nil, slog.Default())
		if got := [3]time.Duration{srv.ReadHeaderTimeout, srv.WriteTimeout, srv.IdleTimeout}; got != tt.want {
			t.Errorf("%s: the server has %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCloneSharesNothingWithTheCaller: a caller changing its
// configuration after New changes nothing in the server's.
func TestCloneSharesNothingWithTheCaller(t *testing.T) {
	c := DefaultConfig()
	got := c.clone()
	c.Backend.NATS.URLs[0] = "changed"
	c.Backend.Etcd.Endpoints[0] = "changed"
	c.Gateway.Defaults.Holders = 9
	c.Webhooks.RetrySchedule[0] = time.Hour
	want := DefaultConfig()
	if got.Backend.NATS.URLs[0] != want.Backend.NATS.URLs[0] || got.Backend.Etcd.Endpoints[0] != want.Backend.Etcd.Endpoints[0] ||
		got.Gateway.Defaults.Holders != 1 || got.Webhooks.RetrySchedule[0] != want.Webhooks.RetrySchedule[0] {
		t.Fatalf("the clone changed with its original: %+v", got)
	}
}
