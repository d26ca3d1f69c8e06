package main

import (
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
)

// TestDefaultLimitsNeverRefuseAFleetBehindOneProxy: by default no limit is
// kept per client address for writes (behind a load balancer every
// candidate has the proxy's address); heartbeats are limited per
// candidate, and reads by how many run at once.
func TestDefaultLimitsNeverRefuseAFleetBehindOneProxy(t *testing.T) {
	c := DefaultConfig()
	cfg, err := c.apiConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
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

// TestConfiguredLimitsReachTheAPI: limits an operator sets are applied.
func TestConfiguredLimitsReachTheAPI(t *testing.T) {
	c := DefaultConfig()
	c.Limits = LimitsConfig{WritesPerSecond: 20, WriteBurst: 40, HeartbeatsPerSecond: 5, HeartbeatBurst: 9, ReadsPerSecond: 50, ReadBurst: 100, ConcurrentReads: 7}
	c.HTTP.ReadBodyTimeout = 3 * time.Second
	cfg, err := c.apiConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WriteRate != 20 || cfg.WriteBurst != 40 || cfg.HeartbeatRate != 6 || cfg.HeartbeatBurst != 9 ||
		cfg.ReadRate != 50 || cfg.ReadBurst != 100 || cfg.MaxReads != 7 || cfg.BodyTimeout != 3*time.Second {
		t.Errorf("API limits %+v", cfg)
	}
}

func TestHeartbeatRateCoversTheShortestTTL(t *testing.T) {
	tests := []struct {
		limit  int
		minTTL time.Duration
		want   float64
	}{
		{10, time.Second, 10},
		{5, time.Second, 6},
		{10, 100 * time.Millisecond, 60},
		{0, time.Millisecond, 0},
	}
	for _, tt := range tests {
		if got := (LimitsConfig{HeartbeatsPerSecond: tt.limit}).heartbeatRate(tt.minTTL); got != tt.want {
			t.Errorf("limit %d, min TTL %s: %g, want %g", tt.limit, tt.minTTL, got, tt.want)
		}
	}
}

// TestLimitsValidateNamesTheFirstBadLimit: with several bad limits, the
// error names the first in the configuration file's order, every time.
func TestLimitsValidateNamesTheFirstBadLimit(t *testing.T) {
	l := DefaultConfig().Limits
	l.WriteBurst, l.Elections, l.SSESubscribers = -1, -2, -3
	for range 20 {
		err := l.validate()
		if err == nil || !strings.HasPrefix(err.Error(), "limits.write_burst is -1") {
			t.Fatalf("validate: %v; want limits.write_burst named", err)
		}
	}
	if err := DefaultConfig().Limits.validate(); err != nil {
		t.Fatalf("default limits: %v", err)
	}
}
