package main

import (
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// wiring is what serve hands its components from a Config: each
// component's own configuration, and the sections serve reads itself (the
// listener, the logger, TLS, metrics, the HTTP server, the backend's kind).
type wiring struct {
	Listen   string
	Log      LogConfig
	Kind     string
	TLS      TLSConfig
	Metrics  MetricsConfig
	Server   [4]time.Duration // read header, write, idle, shutdown
	Gateway  gateway.Config
	Embedded nats.EmbeddedConfig
	NATS     nats.Config
	Etcd     etcd.Config
	Webhooks webhooks.Config
	API      api.Config
}

// wire builds the wiring of c as serve does.
func wire(t *testing.T, c Config) wiring {
	t.Helper()
	apiCfg, err := c.apiConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := c.HTTP.server(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return wiring{
		Listen: c.Listen, Log: c.Log, Kind: c.Backend.Kind, TLS: c.TLS, Metrics: c.Metrics,
		Server:   [4]time.Duration{srv.ReadHeaderTimeout, srv.WriteTimeout, srv.IdleTimeout, c.HTTP.ShutdownTimeout},
		Gateway:  c.gatewayConfig(nil),
		Embedded: c.embeddedConfig(),
		NATS:     c.natsConfig(),
		Etcd:     c.etcdConfig(nil),
		Webhooks: c.webhooksConfig(nil),
		API:      apiCfg,
	}
}

// TestEverySettingReachesAComponent sets each key of the settings table,
// one at a time, to a value other than its default, and checks that what
// serve hands its components changes: a key whose field no component
// reads (a copy forgotten in natsConfig, say) fails here.
func TestEverySettingReachesAComponent(t *testing.T) {
	base := wire(t, DefaultConfig())
	for _, s := range settings() {
		t.Run(s.key, func(t *testing.T) {
			c := DefaultConfig()
			switch p := s.field(&c).(type) {
			case *string:
				*p += "-x"
			case *int:
				*p++
			case *int64:
				*p++
			case *time.Duration:
				*p += time.Second
			case *bool:
				*p = !*p
			case *[]time.Duration:
				*p = append(*p, time.Second)
			case *[]string:
				*p = append(*p, "10.0.0.1")
			case *[]TokenConfig:
				*p = append(*p, TokenConfig{Name: "t", SHA256: api.HashAPITokenHex("t"), Scopes: []string{"read"}})
			default:
				t.Fatalf("no non-default value for a %T", p)
			}
			if reflect.DeepEqual(wire(t, c), base) {
				t.Fatalf("%s reaches no component: serve hands them the same with it changed", s.key)
			}
		})
	}
}

// TestValidateAppliesTheComponentsOwnChecks: Config.Validate runs each
// component's Validate, so a value no key of the table checks is still
// refused before serve starts.
func TestValidateAppliesTheComponentsOwnChecks(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"webhooks", func(c *Config) { c.Webhooks.ClaimTTL = 500 * time.Millisecond }, "claim ttl"},
		{"nats", func(c *Config) { c.Backend.NATS.MarkerTTL = time.Millisecond }, "marker ttl"},
		{"etcd", func(c *Config) { c.Backend.Kind = "etcd"; c.Backend.Etcd.Prefix = "elector/" }, "prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate(nil)
			if !errors.Is(err, errConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v; want a config error naming %s", err, tt.want)
			}
		})
	}
}
