package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/server"
)

// wiring is what serve hands on from a Config: the server's
// configuration (each component's own, and the sections the server reads
// itself: the listener, TLS, metrics, the HTTP server, the backend's
// kind), and the logs serve writes itself.
type wiring struct {
	Log    LogConfig
	Server server.Config
}

// wire builds the wiring of c as serve does.
func wire(t *testing.T, c Config) wiring {
	t.Helper()
	s, err := c.serverConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	return wiring{Log: c.Log, Server: s}
}

// TestEverySettingReachesAComponent sets each key of the settings table,
// one at a time, to a value other than its default, and checks that what
// serve hands the server changes: a key whose field nothing reads (a
// field of Config that serverConfig forgets, say) fails here. The server
// hands each part of its configuration to its component whole.
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
				t.Fatalf("%s reaches no component: serve hands the server the same with it changed", s.key)
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
		{"elections:\n  holders: 65", "elections.holders: 65 is outside [1, 64]"},
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
		{"nats:\n  stream: A.B", `nats.stream: "A.B": use letters, digits, '_' or '-'`},
		{"nats:\n  replicas: 2", "nats.replicas: 2: use 1, or 3 on a JetStream cluster"},
		{"nats:\n  history: -1", "nats.history: -1 is negative; 0 takes the default, 1000"},
		{"nats:\n  cert_file: c.pem", "nats.cert_file: needs nats.key_file"},
		{"nats:\n  key_file: k.pem", "nats.key_file: needs nats.cert_file"},
		{"nats:\n  user: u\n  token: t", "nats.token: give nats.token or nats.user, not both"},
		{"backend:\n  kind: nats\nnats:\n  replicas: 5", "nats.replicas: 5: use 1, or 3 on a JetStream cluster"},
		{"backend:\n  kind: etcd\netcd:\n  prefix: elector/", `etcd.prefix: "elector/" must not end in '/' or contain '//'`},
		{"backend:\n  kind: etcd\netcd:\n  cert_file: c.pem", "etcd.cert_file: needs etcd.key_file"},
		{"backend:\n  kind: etcd\netcd:\n  key_file: k.pem", "etcd.key_file: needs etcd.cert_file"},
		{"backend:\n  kind: etcd\netcd:\n  dial_timeout: -1s", "etcd.dial_timeout: -1s is negative; 0 takes the default, 5s"},
		{"backend:\n  kind: etcd\netcd:\n  request_timeout: -1s", "etcd.request_timeout: -1s is negative; 0 takes the default, 5s"},
		{"embedded:\n  data_dir: ''", "embedded.data_dir: a directory is required"},
		{"embedded:\n  server_name: node 1", `embedded.server_name: "node 1" contains a space`},
		{"embedded:\n  cluster_name: my cluster", `embedded.cluster_name: "my cluster" contains a space`},
		{"embedded:\n  listen: 127.0.0.1", `embedded.listen: "127.0.0.1" is not a host:port`},
		{"embedded:\n  listen: 127.0.0.1:70000", `embedded.listen: "127.0.0.1:70000" is not a host:port`},
		{"embedded:\n  cluster_listen: 127.0.0.1:nats", `embedded.cluster_listen: "127.0.0.1:nats" is not a host:port`},
		{"embedded:\n  routes: [10.0.0.2:6222]", "embedded.routes: needs embedded.cluster_listen"},
		{"embedded:\n  cluster_listen: 127.0.0.1:6222\n  cluster_advertise: 10.0.0.1", `embedded.cluster_advertise: "10.0.0.1" is not a host:port`},
		{"embedded:\n  cluster_listen: 127.0.0.1:6222\n  routes: [10.0.0.2]", `embedded.routes: "10.0.0.2" is not a host:port or nats://host:port`},
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

// TestValidateReportsAFieldWithoutAKeyUnderItsSection: a component's
// field that no key sets (a program may set it) is named by its section and
// Go name; the backends of other kinds are not checked.
func TestValidateReportsAFieldWithoutAKeyUnderItsSection(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" for valid
	}{
		{"nats", func(c *Config) { c.Backend.NATS.MarkerTTL = time.Millisecond }, "config: nats: MarkerTTL: 1ms is below 1s"},
		{"embedded", func(c *Config) { c.Backend.Embedded.ReadyTimeout = -time.Second },
			"config: embedded: ReadyTimeout: -1s is negative"},
		{"gateway", func(c *Config) { c.Gateway.HubEvents = -1 }, "config: elections: HubEvents: -1 is negative"},
		{"embedded unused by etcd", func(c *Config) { c.Backend.Kind = "etcd"; c.Backend.Embedded.DataDir = "" }, ""},
		{"etcd unused by embedded", func(c *Config) { c.Backend.Etcd.Prefix = "elector/" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate(nil)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errConfig) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Validate: %v; want a config error starting %q", err, tt.want)
			}
		})
	}
}
