package servertest

import (
	"log/slog"
	"testing"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/server"
)

// Option changes the gateway Start starts.
type Option func(*options)

// options is what Start starts: the server's configuration and options.
type options struct {
	tb         testing.TB
	cfg        server.Config
	serverOpts []server.Option
	logs       *testLog // nil when Logger chose the logger
}

// newOptions returns the defaults: server.DefaultConfig on a free
// loopback port, over the memory backend, logging to tb's log.
func newOptions(tb testing.TB) *options {
	o := &options{tb: tb, cfg: server.DefaultConfig()}
	o.cfg.Listen = "127.0.0.1:0"
	o.cfg.Backend.Kind = "memory"
	o.cfg.Logger, o.logs = logger(tb)
	return o
}

// Memory runs the gateway over a memory backend of its own (the default).
func Memory() Option {
	return func(o *options) { o.cfg.Backend.Kind = "memory" }
}

// Embedded runs the gateway over the embedded NATS server, as `elector
// serve` does by default, storing in a temporary directory of the test's
// and listening for nobody else.
func Embedded() Option {
	return func(o *options) {
		o.cfg.Backend.Kind = "embedded"
		o.cfg.Backend.Embedded.DataDir = o.tb.TempDir()
	}
}

// Etcd runs the gateway over the etcd backend on the etcd at endpoint
// (internal/etcdtest.Start starts one), under the default prefix.
func Etcd(endpoint string) Option {
	return func(o *options) {
		o.cfg.Backend.Kind = "etcd"
		o.cfg.Backend.Etcd.Endpoints = []string{endpoint}
	}
}

// Backend runs the gateway over b, which the test owns and closes
// (server.WithBackend): several gateways over one backend are replicas.
func Backend(b gateway.Backend) Option {
	return func(o *options) {
		o.cfg.Backend.Kind = ""
		o.serverOpts = append(o.serverOpts, server.WithBackend(b))
	}
}

// AllowPrivateWebhooks lets webhooks reach loopback and private
// addresses, where a test's receivers listen.
func AllowPrivateWebhooks() Option {
	return func(o *options) { o.cfg.Webhooks.AllowPrivateNetworks = true }
}

// Tokens requires API tokens, tokens.
func Tokens(tokens ...api.Token) Option {
	return func(o *options) { o.cfg.API.Tokens = tokens }
}

// NoLimits turns off the request limits and caps (rates, concurrent
// reads, event streams, candidates per election, elections), for tests
// that drive a load.
func NoLimits() Option {
	return func(o *options) {
		a := &o.cfg.API
		a.WriteRate, a.HeartbeatRate, a.ReadRate, a.MaxReads, a.MaxStreams = 0, 0, 0, 0, 0
		o.cfg.Gateway.MaxCandidates, o.cfg.Gateway.MaxElections = 0, 0
	}
}

// Logger sends the gateway's logs to log instead of the test's log.
func Logger(log *slog.Logger) Option {
	return func(o *options) { o.cfg.Logger, o.logs = log, nil }
}

// Configure changes any field of the server's configuration, after the
// options before it.
func Configure(change func(*server.Config)) Option {
	return func(o *options) { change(&o.cfg) }
}
