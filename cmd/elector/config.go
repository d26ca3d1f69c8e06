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
	Webhooks  WebhooksConfig
	Metrics   MetricsConfig
	Auth      AuthConfig
	TLS       TLSConfig
	Limits    LimitsConfig
}

// LogConfig configures the logs written to stderr.
type LogConfig struct {
	// Level is debug, info, warn or error. Key log.level, default info.
	Level string
	// Format is text or json. Key log.format, default text.
	Format string
}

// BackendConfig chooses the coordination backend and configures it.
type BackendConfig struct {
	// Kind is one of backendKinds(). Key backend.kind, default embedded.
	Kind string
	// Embedded configures the in-process NATS server of kind embedded.
	Embedded EmbeddedConfig
	// NATS configures how kinds embedded and nats use JetStream, and how
	// kind nats reaches its servers.
	NATS NATSConfig
	// Etcd configures kind etcd.
	Etcd EtcdConfig
}

// EtcdConfig configures the etcd backend (kind etcd).
type EtcdConfig struct {
	// Endpoints are client URLs or host:port of any members. Key
	// etcd.endpoints, default 127.0.0.1:2379 (comma-separated list).
	Endpoints []string
	// Prefix of every key; a concurrency.Election (or etcdctl elect) on
	// <prefix>/<election> shares elector's line. Key etcd.prefix, default
	// elector.
	Prefix string
	// Username and Password enable etcd authentication. Keys etcd.username,
	// etcd.password; default none.
	Username, Password string
	// CAFile, CertFile, KeyFile and ServerName configure TLS. Keys
	// etcd.ca_file, etcd.cert_file, etcd.key_file, etcd.server_name;
	// default none.
	CAFile, CertFile, KeyFile, ServerName string
	// DialTimeout and RequestTimeout bound connecting and each request.
	// Keys etcd.dial_timeout and etcd.request_timeout, default 5s each.
	DialTimeout, RequestTimeout time.Duration
}

// EmbeddedConfig configures the in-process NATS server (kind embedded).
type EmbeddedConfig struct {
	// DataDir is where the embedded server stores elections.
	// Key embedded.data_dir, default elector-data (in the working directory).
	DataDir string
	// ServerName names this server; each member of a cluster needs its own,
	// stable across restarts. Key embedded.server_name, default
	// elector-<host name>.
	ServerName string
	// Listen is an address for outside NATS clients. Key embedded.listen,
	// default "" (none; the gateway connects in-process).
	Listen string
	// ClusterListen is the address other members route to.
	// Key embedded.cluster_listen, default "" (no cluster).
	ClusterListen string
	// ClusterName names the cluster. Key embedded.cluster_name, default elector.
	ClusterName string
	// Routes are the other members' cluster addresses.
	// Key embedded.routes, default none (comma-separated host:port list).
	Routes []string
}

// NATSConfig configures the NATS backend (kinds nats and embedded).
type NATSConfig struct {
	// URLs of the servers (kind nats). Key nats.urls, default
	// nats://127.0.0.1:4222 (comma-separated list).
	URLs []string
	// CredsFile, NKeySeedFile, Token, User and Password authenticate (kind
	// nats). Keys nats.creds_file, nats.nkey_seed_file, nats.token,
	// nats.user, nats.password; default none.
	CredsFile, NKeySeedFile, Token, User, Password string
	// CAFile, CertFile and KeyFile configure TLS (kind nats). Keys
	// nats.ca_file, nats.cert_file, nats.key_file; default none.
	CAFile, CertFile, KeyFile string
	// Stream names the stream of election records. Key nats.stream,
	// default ELECTOR.
	Stream string
	// Replicas of the streams: 1, or 3 on a cluster. Key nats.replicas,
	// default 0: 1, or 3 for an embedded cluster.
	Replicas int
	// History is how many records of each election are kept for resuming
	// event streams. Key nats.history, default 1000.
	History int
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

// WebhooksConfig tunes the delivery of webhooks (when the backend keeps
// the webhook outbox: gateway.KV).
type WebhooksConfig struct {
	// AllowPrivateNetworks lets webhooks reach loopback, private,
	// link-local and CGNAT addresses. Key webhooks.allow_private_networks,
	// default false.
	AllowPrivateNetworks bool
	// RequestTimeout bounds one delivery attempt.
	// Key webhooks.request_timeout, default 10s.
	RequestTimeout time.Duration
	// RetrySchedule is the wait before each retry of a delivery.
	// Key webhooks.retry_schedule, default 5s,30s,2m,10m,30m,1h,2h.
	RetrySchedule []time.Duration
	// BeginTimeout is how long a candidate's own leader.begin may go
	// unacknowledged before it is put in error.
	// Key webhooks.begin_timeout, default 10s.
	BeginTimeout time.Duration
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
			Embedded: EmbeddedConfig{DataDir: nats.DefaultDataDir, ClusterName: nats.DefaultClusterName},
			NATS:     NATSConfig{URLs: []string{natsgo.DefaultURL}, Stream: nats.DefaultStream, History: nats.DefaultHistory},
			Etcd: EtcdConfig{
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
		Webhooks: WebhooksConfig{
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
	// A backstop: the gateway's own rules, in case they grow stricter.
	if err := c.gatewayConfig(nil).Validate(); err != nil {
		return fmt.Errorf("%w: elections: %w", errConfig, err)
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

// natsConfig is the part of c that the NATS backend applies.
func (c Config) natsConfig() nats.Config {
	n := c.Backend.NATS
	return nats.Config{
		URLs: slices.Clone(n.URLs), CredsFile: n.CredsFile, NKeySeedFile: n.NKeySeedFile,
		Token: n.Token, User: n.User, Password: n.Password,
		CAFile: n.CAFile, CertFile: n.CertFile, KeyFile: n.KeyFile,
		Stream: n.Stream, Replicas: n.Replicas, History: n.History,
	}
}

// etcdConfig is the part of c that the etcd backend applies.
func (c Config) etcdConfig(log *slog.Logger) etcd.Config {
	e := c.Backend.Etcd
	return etcd.Config{
		Endpoints: slices.Clone(e.Endpoints), Prefix: e.Prefix, Username: e.Username, Password: e.Password,
		CAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile, ServerName: e.ServerName,
		DialTimeout: e.DialTimeout, RequestTimeout: e.RequestTimeout, Logger: log,
	}
}

// embeddedConfig is the part of c that the embedded NATS server applies.
func (c Config) embeddedConfig() nats.EmbeddedConfig {
	e := c.Backend.Embedded
	return nats.EmbeddedConfig{
		DataDir: e.DataDir, ServerName: e.ServerName, Listen: e.Listen,
		ClusterListen: e.ClusterListen, ClusterName: e.ClusterName, Routes: slices.Clone(e.Routes),
	}
}

// webhooksConfig is the part of c that webhook delivery applies.
func (c Config) webhooksConfig(log *slog.Logger) webhooks.Config {
	w := c.Webhooks
	return webhooks.Config{
		AllowPrivateNetworks: w.AllowPrivateNetworks,
		RequestTimeout:       w.RequestTimeout,
		RetrySchedule:        slices.Clone(w.RetrySchedule),
		BeginTimeout:         w.BeginTimeout,
		Logger:               log,
	}
}

// apiConfig is the part of c that the HTTP API applies.
func (c Config) apiConfig(log *slog.Logger) api.Config {
	return api.Config{
		Logger:       log,
		MaxBodyBytes: c.HTTP.MaxBodyBytes,
		BodyTimeout:  c.HTTP.ReadBodyTimeout,
		KeepAlive:    c.SSE.KeepAlive,
		RetryHint:    c.SSE.Retry,
	}
}
