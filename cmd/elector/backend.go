package main

import (
	"context"
	"log/slog"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// backendKinds lists the values backend.kind accepts. A new backend adds
// its kind here and a case to openBackend; nothing else in cmd changes.
func backendKinds() []string {
	return []string{"memory"}
}

// openBackend returns the backend cfg.Kind names and a function that
// releases it, which serve calls after the gateway's Run has returned.
func openBackend(ctx context.Context, cfg BackendConfig, log *slog.Logger) (gateway.Backend, func() error, error) {
	switch cfg.Kind {
	case "memory":
		log.LogAttrs(ctx, slog.LevelWarn, "the memory backend keeps elections in this process only: "+
			"they are lost on restart and not shared with other replicas")
		return memory.New(), func() error { return nil }, nil
	default:
		return nil, nil, configError("backend.kind", "", "unknown backend %q", cfg.Kind)
	}
}
