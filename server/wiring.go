package server

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/metrics"
	"github.com/electorhq/elector/webhooks"
)

// clone returns c with copies of the slices and pointers it shares with
// its caller, so that a caller changing them later changes nothing in a
// Server.
func (c Config) clone() Config {
	c.Backend.Embedded.Routes = slices.Clone(c.Backend.Embedded.Routes)
	c.Backend.NATS.URLs = slices.Clone(c.Backend.NATS.URLs)
	c.Backend.Etcd.Endpoints = slices.Clone(c.Backend.Etcd.Endpoints)
	if c.Gateway.Defaults != nil {
		d := *c.Gateway.Defaults
		c.Gateway.Defaults = &d
	}
	c.API.Tokens = slices.Clone(c.API.Tokens)
	c.API.TrustedProxies = slices.Clone(c.API.TrustedProxies)
	c.Webhooks.RetrySchedule = slices.Clone(c.Webhooks.RetrySchedule)
	c.StartedAttrs = slices.Clone(c.StartedAttrs)
	return c
}

// gatewayConfig is the configuration of the gateway.
func (c Config) gatewayConfig(log *slog.Logger) gateway.Config {
	g := c.Gateway
	g.Logger = log
	return g
}

// webhooksConfig is the configuration of webhook delivery.
func (c Config) webhooksConfig(log *slog.Logger, mtr *metrics.Metrics) webhooks.Config {
	w := c.Webhooks
	w.Logger = log
	w.Metrics = mtr.Webhooks()
	return w
}

// apiConfig is the configuration of the HTTP API with its heartbeat rate
// as the server applies it; Run adds what it wires at run time (webhooks,
// the shutdown signal of streams).
func (c Config) apiConfig(log *slog.Logger, mtr *metrics.Metrics) api.Config {
	a := c.API
	a.Logger = log
	a.Metrics = mtr
	a.HeartbeatRate = heartbeatRate(a.HeartbeatRate, cmp.Or(c.Gateway.MinTTL, gateway.DefaultMinTTL))
	return a
}

// heartbeatRate is the per-candidate heartbeat rate to apply: perSecond
// (API.HeartbeatRate), raised to twice what a candidate of the shortest
// TTL sends at TTL/3, so that no well-behaved candidate is ever refused;
// 0 stays off.
func heartbeatRate(perSecond float64, minTTL time.Duration) float64 {
	if perSecond <= 0 {
		return 0
	}
	return max(perSecond, 6/minTTL.Seconds())
}

// newMetrics returns the metrics of the server, as cfg.Metrics configures
// them.
func newMetrics(cfg Config, log *slog.Logger) *metrics.Metrics {
	return metrics.New(metrics.WithElectionLabels(cfg.Metrics.ElectionLabels),
		metrics.WithElectionLabelLimit(cfg.Metrics.ElectionLabelLimit), metrics.WithLogger(log))
}

// runTransitions counts leader transitions until ctx ends, logging the
// error if the watcher stops on its own.
func runTransitions(ctx context.Context, t *metrics.Transitions, origin string, log *slog.Logger) {
	if err := t.RunAfter(ctx, origin); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "metrics: leader transitions watcher stopped", slog.Any("err", err))
	}
}
