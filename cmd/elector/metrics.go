package main

import (
	"context"
	"log/slog"

	"github.com/electorhq/elector/metrics"
)

// newMetrics returns the metrics of serve, as cfg.Metrics configures them.
func newMetrics(cfg Config, log *slog.Logger) *metrics.Metrics {
	return metrics.New(metrics.WithElectionLabels(cfg.Metrics.ElectionLabels),
		metrics.WithElectionLabelLimit(cfg.Metrics.ElectionLabelLimit), metrics.WithLogger(log))
}

// runTransitions counts leader transitions until ctx ends, logging the
// error if the watcher stops on its own.
func runTransitions(ctx context.Context, t *metrics.Transitions, log *slog.Logger) {
	if err := t.Run(ctx); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "metrics: leader transitions watcher stopped", slog.Any("err", err))
	}
}
