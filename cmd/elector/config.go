package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
	"github.com/electorhq/elector/webhooks"
)

// Config is the configuration of `elector serve`. It holds each
// component's own configuration type, whose fields' comments give their
// defaults and bounds and whose Validate checks them; the settings table
// (load.go) gives each field its key, and configs/elector.yaml documents
// the keys for operators.
//
// A zero duration or limit turns off what can be off (the limits and caps,
// elections.error_cooldown, handover_delay and idle_expiry, http's write,
// idle and shutdown timeouts) and takes the default everywhere else
// (webhooks.claim_ttl's and nats.replicas' follow other settings); a
// negative one is refused. DefaultConfig writes the defaults out.
type Config struct {
	// Listen is the TCP address the HTTP API listens on. Key listen,
	// default 127.0.0.1:8080 (loopback only, safe on a laptop).
	Listen  string
	Log     LogConfig
	Backend BackendConfig
	// Gateway is the election policy: keys elections.* and the caps
	// limits.candidates_per_election and limits.elections.
	Gateway gateway.Config
	// HTTP is the HTTP server serve runs: keys http.*, but those of API.
	HTTP HTTPConfig
	// API tunes the HTTP API: keys http.max_body_bytes,
	// http.read_body_timeout, sse.*, auth.protect_operational and the
	// request and stream limits limits.*.
	API api.Config
	// Webhooks tunes the delivery of webhooks, when the backend keeps the
	// webhook outbox (gateway.KV); keys webhooks.*.
	Webhooks webhooks.Config
	Metrics  MetricsConfig
	Auth     AuthConfig
	TLS      TLSConfig
}

// LogConfig configures the logs written to stderr.
type LogConfig struct {
	// Level is debug, info, warn or error. Key log.level, default info.
	Level string
	// Format is text or json. Key log.format, default text.
	Format string
}

// BackendConfig chooses the coordination backend and configures it. The
// backends own their configuration types, defaults and checks; the
// settings table (load.go) points into them.
type BackendConfig struct {
	// Kind is one of backendKinds(). Key backend.kind, default embedded.
	Kind string
	// Embedded configures the in-process NATS server of kind embedded
	// (keys embedded.*).
	Embedded nats.EmbeddedConfig
	// NATS configures how kinds embedded and nats use JetStream, and how
	// kind nats reaches its servers (keys nats.*). Replicas 0, the
	// default, is 3 for an embedded cluster, else 1.
	NATS nats.Config
	// Etcd configures kind etcd (keys etcd.*).
	Etcd etcd.Config
}

// HTTPConfig tunes the HTTP server.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds reading request headers.
	// Key http.read_header_timeout, default (0) DefaultReadHeaderTimeout:
	// a server without one is open to clients that never finish.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds writing a response; event streams lift it for
	// themselves. Key http.write_timeout, default 30s.
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections.
	// Key http.idle_timeout, default 120s.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds the draining of requests on SIGINT or SIGTERM.
	// Key http.shutdown_timeout, default 15s.
	ShutdownTimeout time.Duration
	// TrustedProxies are the addresses or CIDR prefixes of proxies whose
	// X-Forwarded-For names the client, for the rate limit. Key
	// http.trusted_proxies, default none (comma-separated list).
	TrustedProxies []string
}

// MetricsConfig tunes the Prometheus metrics served at /metrics.
type MetricsConfig struct {
	// ElectionLabels labels the per-election series (candidates, leaders,
	// leader transitions) with the election; false sums them over all
	// elections, for deployments with very many elections. Key
	// metrics.election_labels, default true.
	ElectionLabels bool
}

// DefaultReadHeaderTimeout is the default of http.read_header_timeout.
const DefaultReadHeaderTimeout = 10 * time.Second

// DefaultListen is the default listen address: loopback only, so that a
// gateway started on a laptop is not reachable from the network.
const DefaultListen = "127.0.0.1:8080"

// DefaultConfig returns the configuration used where nothing else is set.
func DefaultConfig() Config {
	return Config{
		Listen: DefaultListen,
		Log:    LogConfig{Level: "info", Format: "text"},
		Backend: BackendConfig{
			Kind:     "embedded",
			Embedded: nats.EmbeddedConfig{DataDir: nats.DefaultDataDir, ClusterName: nats.DefaultClusterName},
			NATS:     nats.Config{URLs: []string{natsgo.DefaultURL}, Stream: nats.DefaultStream, History: nats.DefaultHistory},
			Etcd: etcd.Config{
				Endpoints: []string{etcd.DefaultEndpoint}, Prefix: etcd.DefaultPrefix,
				DialTimeout: etcd.DefaultDialTimeout, RequestTimeout: etcd.DefaultRequestTimeout,
				MemberTimeout: etcd.DefaultMemberTimeout,
			},
		},
		Gateway: gateway.Config{
			Defaults:         &gateway.Settings{ErrorCooldown: gateway.DefaultErrorCooldown, Holders: 1},
			DefaultTTL:       gateway.DefaultTTL,
			MinTTL:           gateway.DefaultMinTTL,
			MaxTTL:           gateway.DefaultMaxTTL,
			MaxMetadataBytes: gateway.DefaultMaxMetadataBytes,
			MaxCandidates:    gateway.DefaultMaxCandidates,
			MaxElections:     gateway.DefaultMaxElections,
		},
		HTTP: HTTPConfig{
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       120 * time.Second,
			ShutdownTimeout:   15 * time.Second,
		},
		API: api.Config{
			MaxBodyBytes:   api.DefaultMaxBodyBytes,
			BodyTimeout:    api.DefaultBodyTimeout,
			KeepAlive:      api.DefaultKeepAlive,
			RetryHint:      api.DefaultRetryHint,
			HeartbeatRate:  api.DefaultHeartbeatRate,
			HeartbeatBurst: api.DefaultHeartbeatBurst,
			MaxReads:       api.DefaultMaxReads,
			MaxStreams:     api.DefaultMaxStreams,
		},
		Webhooks: webhooks.Config{
			RequestTimeout: webhooks.DefaultRequestTimeout,
			RetrySchedule:  webhooks.DefaultRetrySchedule(),
			BeginTimeout:   webhooks.DefaultBeginTimeout,
		},
		Metrics: MetricsConfig{ElectionLabels: true},
		TLS:     TLSConfig{ClientAuth: "none"},
	}
}

// errConfig marks every configuration error; run exits 2 on it.
var errConfig = errors.New("config")

// configError names the key that is wrong and where its value came from.
func configError(key, source, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if source != "" {
		msg += " (from " + source + ")"
	}
	return fmt.Errorf("%w: %s: %s", errConfig, key, msg)
}

// Validate reports the first value of c that cannot work, naming its key.
// It checks what serve owns (the listener, logs, backend choice, HTTP
// server, TLS, tokens and proxies) and runs each component's own Validate,
// naming the keys of the fields a component finds at fault. Source, if not
// nil, tells where a key's value came from.
func (c Config) Validate(source func(key string) string) error {
	if errs := c.validateAll(source); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// validateAll is Validate reporting every value that cannot work, one
// error per check that fails (each component's Validate reports its first).
func (c Config) validateAll(source func(key string) string) []error {
	if source == nil {
		source = func(string) string { return "" }
	}
	oneOf := func(key, v string, allowed []string) error {
		if !slices.Contains(allowed, v) {
			return configError(key, source(key), "%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return nil
	}
	atLeast := func(key string, d, lo time.Duration) error {
		if d < lo {
			return configError(key, source(key), "%s is below the minimum %s", d, lo)
		}
		return nil
	}
	h := c.HTTP
	checks := []func() error{
		func() error {
			if c.Listen == "" {
				return configError("listen", source("listen"), "an address such as %s is required", DefaultListen)
			}
			return nil
		},
		func() error { return oneOf("log.level", c.Log.Level, []string{"debug", "info", "warn", "error"}) },
		func() error { return oneOf("log.format", c.Log.Format, []string{"text", "json"}) },
		func() error { return oneOf("backend.kind", c.Backend.Kind, backendKinds()) },
		func() error {
			if c.Backend.Kind == "embedded" {
				return c.componentError(&c.Backend.Embedded, "embedded", c.Backend.Embedded.Validate(), source)
			}
			return nil
		},
		func() error {
			if c.Backend.Kind == "etcd" {
				return c.componentError(&c.Backend.Etcd, "etcd", c.Backend.Etcd.Validate(), source)
			}
			return nil
		},
		func() error {
			if c.Backend.Kind == "nats" || c.Backend.Kind == "embedded" {
				return c.componentError(&c.Backend.NATS, "nats", c.Backend.NATS.Validate(), source)
			}
			return nil
		},
		func() error { return c.componentError(&c.Gateway, "elections", c.Gateway.Validate(), source) },
		func() error { return c.validateProduction(source) },
		func() error { return atLeast("http.read_header_timeout", h.ReadHeaderTimeout, 0) },
		func() error { return atLeast("http.write_timeout", h.WriteTimeout, 0) },
		func() error { return atLeast("http.idle_timeout", h.IdleTimeout, 0) },
		func() error { return atLeast("http.shutdown_timeout", h.ShutdownTimeout, 0) },
		func() error { return c.componentError(&c.API, "api", c.API.Validate(), source) },
		func() error { return c.componentError(&c.Webhooks, "webhooks", c.Webhooks.Validate(), source) },
	}
	var errs []error
	for _, check := range checks {
		if err := check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// componentError turns err, from the Validate of comp (a pointer to a
// component's configuration inside c), into a configuration error naming
// the keys of the fields at fault, as a *fielderr.Error names them, and
// where the first came from. An error that names no field, or a field no
// key sets, is reported under section. A nil err stays nil.
func (c *Config) componentError(comp any, section string, err error, source func(string) string) error {
	if err == nil {
		return nil
	}
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		return configError(section, "", "%v", err)
	}
	key := func(field string) string { return c.keyOf(comp, field) }
	msg := fe.Name(key)
	if key(fe.Field) == "" {
		msg = section + ": " + msg
	}
	if src := source(key(fe.Field)); src != "" {
		msg += " (from " + src + ")"
	}
	return fmt.Errorf("%w: %s", errConfig, msg)
}

// keyOf returns the key of the setting that sets field of comp, a pointer
// to a component's configuration inside c; field is a Go name, dotted
// through nested structs and pointers. It returns "" when no setting sets
// the field.
func (c *Config) keyOf(comp any, field string) string {
	v := reflect.ValueOf(comp).Elem()
	for name := range strings.SplitSeq(field, ".") {
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return ""
		}
		if v = v.FieldByName(name); !v.IsValid() {
			return ""
		}
	}
	for _, s := range settings() {
		p := reflect.ValueOf(s.field(c))
		if p.Pointer() == v.Addr().Pointer() && p.Elem().Type() == v.Type() {
			return s.key
		}
	}
	return ""
}

// gatewayConfig is the configuration of the gateway.
func (c Config) gatewayConfig(log *slog.Logger) gateway.Config {
	g := c.Gateway
	if g.Defaults != nil {
		d := *g.Defaults
		g.Defaults = &d
	}
	g.Logger = log
	return g
}

// natsConfig is the configuration of the NATS backend.
func (c Config) natsConfig() nats.Config {
	n := c.Backend.NATS
	n.URLs = slices.Clone(n.URLs)
	return n
}

// etcdConfig is the configuration of the etcd backend.
func (c Config) etcdConfig(log *slog.Logger) etcd.Config {
	e := c.Backend.Etcd
	e.Endpoints = slices.Clone(e.Endpoints)
	e.Logger = log
	return e
}

// embeddedConfig is the configuration of the embedded NATS server.
func (c Config) embeddedConfig() nats.EmbeddedConfig {
	e := c.Backend.Embedded
	e.Routes = slices.Clone(e.Routes)
	return e
}

// webhooksConfig is the configuration of webhook delivery.
func (c Config) webhooksConfig(log *slog.Logger) webhooks.Config {
	w := c.Webhooks
	w.RetrySchedule = slices.Clone(w.RetrySchedule)
	w.Logger = log
	return w
}

// apiConfig is the configuration of the HTTP API, with its tokens, trusted
// proxies and heartbeat rate as serve applies them; serve adds what it
// wires at run time (metrics, webhooks, the shutdown signal of streams).
// c is valid; the errors are Validate's.
func (c Config) apiConfig(log *slog.Logger) (api.Config, error) {
	tokens, err := c.Auth.apiTokens()
	if err != nil {
		return api.Config{}, configError("auth.tokens", "", "%v", err)
	}
	proxies, err := parseTrustedProxies(c.HTTP.TrustedProxies)
	if err != nil {
		return api.Config{}, configError("http.trusted_proxies", "", "%v", err)
	}
	a := c.API
	a.Logger = log
	a.Tokens = tokens
	a.TrustedProxies = proxies
	a.HeartbeatRate = heartbeatRate(a.HeartbeatRate, cmp.Or(c.Gateway.MinTTL, gateway.DefaultMinTTL))
	return a, nil
}
