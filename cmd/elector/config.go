package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// Config is the configuration of `elector serve`. Each field's comment gives
// its key (as written in a config file) and its default; configs/elector.yaml
// documents the same keys for operators.
type Config struct {
	// Listen is the TCP address the HTTP API listens on. Key listen,
	// default 127.0.0.1:8080 (loopback only, safe on a laptop).
	Listen    string
	Log       LogConfig
	Backend   BackendConfig
	Elections ElectionsConfig
	HTTP      HTTPConfig
	SSE       SSEConfig
	// Webhooks tunes the delivery of webhooks, when the backend keeps the
	// webhook outbox (gateway.KV); keys webhooks.*.
	Webhooks webhooks.Config
	Metrics  MetricsConfig
	Auth     AuthConfig
	TLS      TLSConfig
	Limits   LimitsConfig
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

// ElectionsConfig is the policy the gateway applies to candidates and the
// settings a new election starts with.
type ElectionsConfig struct {
	// DefaultTTL is the TTL of a candidate that names none.
	// Key elections.default_ttl, default 10s.
	DefaultTTL time.Duration
	// MinTTL and MaxTTL bound the TTL a candidate may ask for.
	// Keys elections.min_ttl and elections.max_ttl, defaults 1s and 1h.
	MinTTL, MaxTTL time.Duration
	// MaxMetadataBytes bounds a candidate's metadata (compacted JSON).
	// Key elections.max_metadata_bytes, default 1024.
	MaxMetadataBytes int
	// ErrorCooldown is how long a candidate in error stays out of line.
	// Key elections.error_cooldown, default 10s.
	ErrorCooldown time.Duration
	// HandoverDelay holds back the next leader after a leader expires.
	// Key elections.handover_delay, default 0s (no delay).
	HandoverDelay time.Duration
	// IdleExpiry deletes an election with no candidate and no event for
	// this long. Key elections.idle_expiry, default 0s (kept until deleted).
	IdleExpiry time.Duration
}

// HTTPConfig tunes the HTTP server.
type HTTPConfig struct {
	// MaxBodyBytes caps a request body. Key http.max_body_bytes, default 65536.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds reading request headers.
	// Key http.read_header_timeout, default 10s.
	ReadHeaderTimeout time.Duration
	// ReadBodyTimeout bounds reading a request body; a slower one is
	// answered 408. Key http.read_body_timeout, default 10s.
	ReadBodyTimeout time.Duration
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

// SSEConfig tunes the Server-Sent Events streams.
type SSEConfig struct {
	// KeepAlive is the interval of keep-alive comments on an idle stream.
	// Key sse.keep_alive, default 15s.
	KeepAlive time.Duration
	// Retry is the reconnection delay a stream advises its clients.
	// Key sse.retry, default 2s.
	Retry time.Duration
}

// MetricsConfig tunes the Prometheus metrics served at /metrics.
type MetricsConfig struct {
	// ElectionLabels labels the per-election series (candidates, leaders,
	// leader transitions) with the election; false sums them over all
	// elections, for deployments with very many elections. Key
	// metrics.election_labels, default true.
	ElectionLabels bool
}

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
			},
		},
		Elections: ElectionsConfig{
			DefaultTTL:       gateway.DefaultTTL,
			MinTTL:           gateway.DefaultMinTTL,
			MaxTTL:           gateway.DefaultMaxTTL,
			MaxMetadataBytes: gateway.DefaultMaxMetadataBytes,
			ErrorCooldown:    gateway.DefaultErrorCooldown,
			HandoverDelay:    0,
		},
		HTTP: HTTPConfig{
			MaxBodyBytes:      api.DefaultMaxBodyBytes,
			ReadHeaderTimeout: 10 * time.Second,
			ReadBodyTimeout:   api.DefaultBodyTimeout,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       120 * time.Second,
			ShutdownTimeout:   15 * time.Second,
		},
		SSE: SSEConfig{KeepAlive: api.DefaultKeepAlive, Retry: api.DefaultRetryHint},
		Webhooks: webhooks.Config{
			RequestTimeout: webhooks.DefaultRequestTimeout,
			RetrySchedule:  webhooks.DefaultRetrySchedule(),
			BeginTimeout:   webhooks.DefaultBeginTimeout,
		},
		Metrics: MetricsConfig{ElectionLabels: true},
		TLS:     TLSConfig{ClientAuth: "none"},
		Limits:  DefaultLimits(),
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
// Sources, if not nil, tells where a key's value came from.
func (c Config) Validate(source func(key string) string) error {
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
	within := func(key string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return configError(key, source(key), "%s is outside [%s, %s]", d, lo, hi)
		}
		return nil
	}
	e, h := c.Elections, c.HTTP
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
			if c.Backend.Kind == "embedded" && c.Backend.Embedded.DataDir == "" {
				return configError("embedded.data_dir", source("embedded.data_dir"), "a directory is required")
			}
			if len(c.Backend.Embedded.Routes) > 0 && c.Backend.Embedded.ClusterListen == "" {
				return configError("embedded.routes", source("embedded.routes"), "routes need embedded.cluster_listen")
			}
			return nil
		},
		func() error {
			if c.Backend.Kind == "etcd" {
				if err := c.etcdConfig(nil).Validate(); err != nil {
					return configError("etcd", "", "%v", err)
				}
			}
			return nil
		},
		func() error {
			if c.Backend.Kind == "nats" || c.Backend.Kind == "embedded" {
				if err := c.natsConfig().Validate(); err != nil {
					return configError("nats", "", "%v", err)
				}
			}
			return nil
		},
		func() error { return atLeast("elections.min_ttl", e.MinTTL, time.Millisecond) },
		func() error { return atLeast("elections.max_ttl", e.MaxTTL, e.MinTTL) },
		func() error { return within("elections.default_ttl", e.DefaultTTL, e.MinTTL, e.MaxTTL) },
		func() error {
			if e.MaxMetadataBytes < 2 || e.MaxMetadataBytes > 1<<20 {
				return configError("elections.max_metadata_bytes", source("elections.max_metadata_bytes"),
					"%d is outside [2, %d]", e.MaxMetadataBytes, 1<<20)
			}
			return nil
		},
		func() error { return within("elections.error_cooldown", e.ErrorCooldown, 0, gateway.MaxSetting) },
		func() error { return within("elections.handover_delay", e.HandoverDelay, 0, gateway.MaxSetting) },
		func() error { return within("elections.idle_expiry", e.IdleExpiry, 0, 365*24*time.Hour) },
		func() error { return c.validateProduction(source) },
		func() error {
			if h.MaxBodyBytes < 1024 {
				return configError("http.max_body_bytes", source("http.max_body_bytes"),
					"%d is below the minimum 1024", h.MaxBodyBytes)
			}
			return nil
		},
		func() error { return atLeast("http.read_header_timeout", h.ReadHeaderTimeout, time.Millisecond) },
		func() error { return atLeast("http.read_body_timeout", h.ReadBodyTimeout, time.Millisecond) },
		func() error { return atLeast("http.write_timeout", h.WriteTimeout, 0) },
		func() error { return atLeast("http.idle_timeout", h.IdleTimeout, 0) },
		func() error { return atLeast("http.shutdown_timeout", h.ShutdownTimeout, 0) },
		func() error { return atLeast("sse.keep_alive", c.SSE.KeepAlive, time.Second) },
		func() error { return atLeast("sse.retry", c.SSE.Retry, 100*time.Millisecond) },
		func() error {
			return within("webhooks.request_timeout", c.Webhooks.RequestTimeout, time.Second, 5*time.Minute)
		},
		func() error {
			return within("webhooks.begin_timeout", c.Webhooks.BeginTimeout, webhooks.MinBeginTimeout, webhooks.MaxBeginTimeout)
		},
		func() error {
			if len(c.Webhooks.RetrySchedule) > 20 {
				return configError("webhooks.retry_schedule", source("webhooks.retry_schedule"), "%d retries; at most 20", len(c.Webhooks.RetrySchedule))
			}
			for _, d := range c.Webhooks.RetrySchedule {
				if d < 100*time.Millisecond || d > 24*time.Hour {
					return configError("webhooks.retry_schedule", source("webhooks.retry_schedule"), "wait %s is outside [100ms, 24h]", d)
				}
			}
			return nil
		},
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	// A backstop: the components' own rules, in case they grow stricter.
	if err := c.gatewayConfig(nil).Validate(); err != nil {
		return fmt.Errorf("%w: elections: %w", errConfig, err)
	}
	if err := c.webhooksConfig(nil).Validate(); err != nil {
		return fmt.Errorf("%w: webhooks: %w", errConfig, err)
	}
	return nil
}

// gatewayConfig is the part of c that the gateway applies.
func (c Config) gatewayConfig(log *slog.Logger) gateway.Config {
	e := c.Elections
	return gateway.Config{
		Defaults:           &gateway.Settings{ErrorCooldown: e.ErrorCooldown, HandoverDelay: e.HandoverDelay},
		DefaultTTL:         e.DefaultTTL,
		MinTTL:             e.MinTTL,
		MaxTTL:             e.MaxTTL,
		MaxMetadataBytes:   e.MaxMetadataBytes,
		MaxCandidates:      c.Limits.CandidatesPerElection,
		MaxElections:       c.Limits.Elections,
		IdleElectionExpiry: e.IdleExpiry,
		Logger:             log,
	}
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

// apiConfig is the configuration of the HTTP API, with its auth and
// limits; serve adds what it wires at run time (metrics, webhooks, the
// shutdown signal of streams). c is valid; the errors are Validate's.
func (c Config) apiConfig(log *slog.Logger) (api.Config, error) {
	tokens, err := c.Auth.apiTokens()
	if err != nil {
		return api.Config{}, configError("auth.tokens", "", "%v", err)
	}
	proxies, err := parseTrustedProxies(c.HTTP.TrustedProxies)
	if err != nil {
		return api.Config{}, configError("http.trusted_proxies", "", "%v", err)
	}
	return api.Config{
		Logger:             log,
		MaxBodyBytes:       c.HTTP.MaxBodyBytes,
		BodyTimeout:        c.HTTP.ReadBodyTimeout,
		KeepAlive:          c.SSE.KeepAlive,
		RetryHint:          c.SSE.Retry,
		Tokens:             tokens,
		ProtectOperational: c.Auth.ProtectOperational,
		WriteRate:          float64(c.Limits.WritesPerSecond),
		WriteBurst:         c.Limits.WriteBurst,
		HeartbeatRate:      c.Limits.heartbeatRate(c.Elections.MinTTL),
		HeartbeatBurst:     c.Limits.HeartbeatBurst,
		ReadRate:           float64(c.Limits.ReadsPerSecond),
		ReadBurst:          c.Limits.ReadBurst,
		MaxReads:           c.Limits.ConcurrentReads,
		TrustedProxies:     proxies,
		MaxStreams:         c.Limits.SSESubscribers,
	}, nil
}
