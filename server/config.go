package server

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
	"github.com/electorhq/elector/internal/fielderr"
	"github.com/electorhq/elector/metrics"
	"github.com/electorhq/elector/webhooks"
)

// Config is the configuration of a Server. It holds each component's own
// configuration type, whose fields' comments give their defaults and
// bounds and whose Validate checks them; Config adds what the server
// itself owns: the listener, the HTTP server, TLS, metrics and the choice
// of backend. Start from DefaultConfig.
//
// A zero duration or limit turns off what can be off (the limits and caps,
// Gateway's error cooldown, handover delay and idle expiry, HTTP's write,
// idle and shutdown timeouts) and takes the default everywhere else; a
// negative one is refused.
//
// The server sets some fields of the components itself, whatever Config
// holds: every Logger (to Logger), API.Webhooks, API.Metrics,
// API.Shutdown, API.CheckOutbox and Webhooks.Metrics; the gateway runs
// over the backend observed by the metrics (metrics.ObserveBackend). It
// raises API.HeartbeatRate to twice what a candidate of the shortest TTL
// sends (see heartbeatRate).
type Config struct {
	// Listen is the TCP address the HTTP API listens on. Default (in
	// DefaultConfig) 127.0.0.1:8080, loopback only; port 0 picks a free
	// port, which Server.Addr tells.
	Listen  string
	Backend BackendConfig
	// Gateway is the election policy and its caps.
	Gateway gateway.Config
	// HTTP is the HTTP server the API is served by.
	HTTP HTTPConfig
	// API tunes the HTTP API: body limits, SSE, request and stream limits,
	// API tokens and trusted proxies.
	API api.Config
	// Webhooks tunes the delivery of webhooks, when the backend keeps the
	// webhook outbox (gateway.KV).
	Webhooks webhooks.Config
	Metrics  MetricsConfig
	TLS      TLSConfig
	// Logger receives the server's logs and is handed to every component.
	// Default slog.Default().
	Logger *slog.Logger
	// StartedAttrs are added to the line the server logs once it serves
	// the API ("elector started"), after its listen address and backend:
	// what the program that runs the server wants said there, such as its
	// version. Default none.
	StartedAttrs []slog.Attr
}

// BackendConfig chooses the coordination backend and configures it. The
// backends own their configuration types, defaults and checks.
type BackendConfig struct {
	// Kind is one of BackendKinds(). Default (in DefaultConfig) embedded.
	Kind string
	// Embedded configures the in-process NATS server of kind embedded.
	Embedded nats.EmbeddedConfig
	// NATS configures how kinds embedded and nats use JetStream, and how
	// kind nats reaches its servers. Replicas 0, the default, is 3 for an
	// embedded cluster, else 1.
	NATS nats.Config
	// Etcd configures kind etcd.
	Etcd etcd.Config
}

// HTTPConfig tunes the HTTP server.
type HTTPConfig struct {
	// ReadHeaderTimeout bounds reading request headers. Default (0)
	// DefaultReadHeaderTimeout: a server without one is open to clients
	// that never finish.
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds writing a response; event streams lift it for
	// themselves. 0: none. DefaultConfig: 30s.
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections. 0: none.
	// DefaultConfig: 120s.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds the draining of requests once Run's context
	// ends. 0: none, requests are cut off at once. DefaultConfig: 15s.
	ShutdownTimeout time.Duration
}

// MetricsConfig tunes the Prometheus metrics served at /metrics.
type MetricsConfig struct {
	// ElectionLabels labels the per-election series (candidates, leaders,
	// leader transitions) with the election; false sums them over all
	// elections, for deployments with very many elections. DefaultConfig:
	// true.
	ElectionLabels bool
	// ElectionLabelLimit is how many elections get per-election series of
	// their own; the others are summed under election="_other", so that a
	// replica with very many elections exports a bounded number of series.
	// DefaultConfig: metrics.DefaultElectionLabelLimit; 0: no limit.
	ElectionLabelLimit int
}

// DefaultReadHeaderTimeout is the default of HTTPConfig.ReadHeaderTimeout.
const DefaultReadHeaderTimeout = 10 * time.Second

// DefaultListen is the default listen address: loopback only, so that a
// gateway started on a laptop is not reachable from the network.
const DefaultListen = "127.0.0.1:8080"

// ErrConfig marks every error a configuration value causes, whether
// Validate finds it or New or Run meet it (a certificate that cannot be
// loaded, a backend that refuses its settings).
var ErrConfig = errors.New("config")

// BackendKinds lists the values BackendConfig.Kind accepts. A new backend
// adds its kind here and a case to openBackend.
func BackendKinds() []string {
	return []string{"embedded", "nats", "etcd", "memory"}
}

// DefaultConfig returns the configuration `elector serve` uses where
// nothing else is set.
func DefaultConfig() Config {
	return Config{
		Listen: DefaultListen,
		Backend: BackendConfig{
			Kind:     "embedded",
			Embedded: nats.EmbeddedConfig{DataDir: nats.DefaultDataDir, ClusterName: nats.DefaultClusterName},
			NATS:     nats.Config{URLs: []string{natsgo.DefaultURL}, Stream: nats.DefaultStream, History: nats.DefaultHistory},
			Etcd: etcd.Config{
				Endpoints: []string{etcd.DefaultEndpoint}, Prefix: etcd.DefaultPrefix,
				DialTimeout: etcd.DefaultDialTimeout, RequestTimeout: etcd.DefaultRequestTimeout,
				MemberTimeout: etcd.DefaultMemberTimeout, WriteBatch: etcd.DefaultWriteBatch,
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
		Metrics: MetricsConfig{ElectionLabels: true, ElectionLabelLimit: metrics.DefaultElectionLabelLimit},
		TLS:     TLSConfig{ClientAuth: "none"},
	}
}

// Validate reports every value of c that cannot work, one error per check
// that fails (each component's Validate reports its first), joined with
// errors.Join. Each wraps ErrConfig and a *fielderr.Error that names the
// field by its Go path in Config ("Gateway.MinTTL"), so that a program
// exposing the fields under names of its own can name them its way. The
// backends of other kinds than Backend.Kind are not checked.
func (c Config) Validate() error {
	return c.validate(true)
}

// validate is Validate, checking the Backend section only if backend.
func (c Config) validate(backend bool) error {
	var checks []func() error
	check := func(path string, validate func() error) {
		checks = append(checks, func() error { return within(path, validate()) })
	}
	check("", func() error {
		if c.Listen == "" {
			return fielderr.Errorf("Listen", "an address such as %s is required", DefaultListen)
		}
		return nil
	})
	if backend {
		c.Backend.checks(check)
	}
	check("Gateway", c.Gateway.Validate)
	check("TLS", c.TLS.Validate)
	c.HTTP.checks(check)
	check("Metrics", func() error {
		if c.Metrics.ElectionLabelLimit < 0 {
			return fielderr.Errorf("ElectionLabelLimit", "%d is negative; 0 means no limit", c.Metrics.ElectionLabelLimit)
		}
		return nil
	})
	check("API", c.API.Validate)
	check("Webhooks", c.Webhooks.Validate)
	var errs []error
	for _, check := range checks {
		if err := check(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
		}
	}
	return errors.Join(errs...)
}

// within returns err, from the Validate of the part of Config at path
// ("" for Config itself), as a *fielderr.Error naming fields by their
// paths in Config; an error that names no field is reported as the
// part's. A nil err stays nil.
func within(path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *fielderr.Error
	switch {
	case !errors.As(err, &fe):
		return &fielderr.Error{Field: path, Detail: err.Error(), Err: err}
	case path == "":
		return fe
	}
	return fe.In(path)
}

// checks adds the checks of c to a Config's: the kind, and the
// configuration of that kind's backend.
func (c BackendConfig) checks(check func(path string, validate func() error)) {
	check("Backend", func() error {
		if !slices.Contains(BackendKinds(), c.Kind) {
			return fielderr.Errorf("Kind", "%q is not one of %s", c.Kind, strings.Join(BackendKinds(), ", "))
		}
		return nil
	})
	if c.Kind == "embedded" {
		check("Backend.Embedded", c.Embedded.Validate)
	}
	if c.Kind == "etcd" {
		check("Backend.Etcd", c.Etcd.Validate)
	}
	if c.Kind == "nats" || c.Kind == "embedded" {
		check("Backend.NATS", c.NATS.Validate)
	}
}

// checks adds the checks of c to a Config's: no timeout is negative.
func (c HTTPConfig) checks(check func(path string, validate func() error)) {
	for _, f := range []struct {
		field string
		d     time.Duration
	}{
		{"ReadHeaderTimeout", c.ReadHeaderTimeout}, {"WriteTimeout", c.WriteTimeout},
		{"IdleTimeout", c.IdleTimeout}, {"ShutdownTimeout", c.ShutdownTimeout},
	} {
		check("HTTP", func() error {
			if f.d < 0 {
				return fielderr.Errorf(f.field, "%s is below the minimum 0s", f.d)
			}
			return nil
		})
	}
}
