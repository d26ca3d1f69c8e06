package main

import (
	"context"
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
			case *float64:
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

// TestServeNamesTheKeyOfEachBadValue feeds `elector serve` one value that
// cannot work at a time, in a config file, and checks that it exits 2
// naming the key as the file wrote it. Most values are refused by the
// components' own Validate, which name Go fields; serve names the keys.
func TestServeNamesTheKeyOfEachBadValue(t *testing.T) {
	tests := []struct {
		file string // YAML
		want string // the start of the message after "config: "
	}{
		{"elections:\n  min_ttl: 100us", "elections.min_ttl: 100µs is below 1ms"},
		{"elections:\n  min_ttl: 1m\n  max_ttl: 1s", "elections.max_ttl: 1s is below elections.min_ttl (1m0s)"},
		{"elections:\n  default_ttl: 2h", "elections.default_ttl: 2h0m0s is outside elections.min_ttl and elections.max_ttl [1s, 1h0m0s]"},
		{"elections:\n  max_metadata_bytes: 1", "elections.max_metadata_bytes: 1 is outside [2, 1048576]"},
		{"elections:\n  error_cooldown: -1s", "elections.error_cooldown: -1s is outside [0s, 1h0m0s]"},
		{"elections:\n  handover_delay: 2h", "elections.handover_delay: 2h0m0s is outside [0s, 1h0m0s]"},
		{"elections:\n  idle_expiry: -1s", "elections.idle_expiry: -1s is outside [0s, 8760h0m0s]"},
		{"limits:\n  candidates_per_election: -1", "limits.candidates_per_election: -1 is negative"},
		{"limits:\n  elections: -1", "limits.elections: -1 is negative"},
		{"http:\n  max_body_bytes: 10", "http.max_body_bytes: 10 is below the minimum 1024"},
		{"http:\n  read_body_timeout: -1s", "http.read_body_timeout: -1s is negative"},
		{"http:\n  read_header_timeout: -1s", "http.read_header_timeout: -1s is below the minimum 0s"},
		{"http:\n  shutdown_timeout: -1s", "http.shutdown_timeout: -1s is below the minimum 0s"},
		{"http:\n  trusted_proxies: [nowhere]", `http.trusted_proxies: "nowhere" is not an address or CIDR prefix`},
		{"tls:\n  key_file: k.pem", "tls.key_file: needs tls.cert_file"},
		{"tls:\n  client_auth: maybe", `tls.client_auth: "maybe" is not one of none, request, require`},
		{"tls:\n  client_auth: require", "tls.client_auth: require needs tls.client_ca_file"},
		{"sse:\n  keep_alive: 10ms", "sse.keep_alive: 10ms is below the minimum 1s"},
		{"sse:\n  retry: 1ms", "sse.retry: 1ms is below the minimum 100ms"},
		{"limits:\n  writes_per_second: -0.5", "limits.writes_per_second: -0.5 is negative"},
		{"limits:\n  write_burst: -1", "limits.write_burst: -1 is negative"},
		{"limits:\n  heartbeats_per_second: -1", "limits.heartbeats_per_second: -1 is negative"},
		{"limits:\n  heartbeat_burst: -1", "limits.heartbeat_burst: -1 is negative"},
		{"limits:\n  reads_per_second: -1", "limits.reads_per_second: -1 is negative"},
		{"limits:\n  read_burst: -1", "limits.read_burst: -1 is negative"},
		{"limits:\n  concurrent_reads: -1", "limits.concurrent_reads: -1 is negative"},
		{"limits:\n  sse_subscribers: -1", "limits.sse_subscribers: -1 is negative"},
		{"webhooks:\n  request_timeout: 10m", "webhooks.request_timeout: 10m0s is outside [1s, 5m0s]"},
		{"webhooks:\n  begin_timeout: 2h", "webhooks.begin_timeout: 2h0m0s is outside [1s, 1h0m0s]"},
		{"webhooks:\n  retry_schedule: 5s,10ms", "webhooks.retry_schedule: wait 2, 10ms, is outside [100ms, 24h0m0s]"},
		{"webhooks:\n  claim_ttl: 500ms", "webhooks.claim_ttl: 500ms is below 1s"},
		{"webhooks:\n  claim_ttl: 15s", "webhooks.claim_ttl: 15s must be at least 2× webhooks.request_timeout (10s)"},
		{"webhooks:\n  request_timeout: 30s\n  claim_ttl: 45s", "webhooks.claim_ttl: 45s must be at least 2× webhooks.request_timeout (30s)"},
	}
	for _, tt := range tests {
		key, _, _ := strings.Cut(tt.want, ":")
		t.Run(key, func(t *testing.T) {
			isolate(t)
			file := writeFile(t, "elector.yaml", tt.file+"\n")
			var stdout, stderr strings.Builder
			code := run(context.Background(), []string{"serve", "--config", file}, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			want := "elector serve: config: " + tt.want
			if got := stderr.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "(from file "+file+")") {
				t.Errorf("stderr %q\nwant it to start %q and name the file", got, want)
			}
		})
	}
}

// TestValidateReportsABackendsErrorUnderItsSection: the backends' own
// checks run too, their errors named by section.
func TestValidateReportsABackendsErrorUnderItsSection(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"nats", func(c *Config) { c.Backend.NATS.MarkerTTL = time.Millisecond }, "config: nats: "},
		{"etcd", func(c *Config) { c.Backend.Kind = "etcd"; c.Backend.Etcd.Prefix = "elector/" }, "config: etcd: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate(nil)
			if !errors.Is(err, errConfig) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Validate: %v; want a config error starting %q", err, tt.want)
			}
		})
	}
}
