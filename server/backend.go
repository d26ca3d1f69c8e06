package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
)

// openBackend returns the backend cfg.Backend.Kind names and a function
// that releases it, which Run calls after the gateway's Run has returned.
// While it waits (a member of an embedded cluster for its peers), it tells
// waiting why.
func openBackend(ctx context.Context, cfg Config, log *slog.Logger, waiting func(reason string)) (gateway.Backend, func() error, error) {
	switch cfg.Backend.Kind {
	case "embedded":
		ecfg := cfg.Backend.Embedded
		ecfg.OnWait = waiting
		b, err := nats.OpenEmbedded(ctx, ecfg, cfg.Backend.NATS, nats.WithLogger(log))
		if err != nil {
			return nil, nil, natsError(err)
		}
		log.LogAttrs(ctx, slog.LevelInfo, "embedded NATS backend ready", slog.String("data_dir", cfg.Backend.Embedded.DataDir),
			slog.Int("routes", len(cfg.Backend.Embedded.Routes)))
		return b, b.Close, nil
	case "nats":
		b, err := nats.Connect(ctx, cfg.Backend.NATS, nats.WithLogger(log))
		if err != nil {
			return nil, nil, natsError(err)
		}
		return b, b.Close, nil
	case "etcd":
		ecfg := cfg.Backend.Etcd
		ecfg.Logger = log
		b, err := etcd.New(ecfg)
		if err != nil {
			if errors.Is(err, gateway.ErrInvalid) {
				err = fmt.Errorf("%w: %w", ErrConfig, err)
			}
			return nil, nil, err
		}
		warnIfUnreachable(ctx, b, "etcd", cfg.Backend.Etcd.Endpoints, cmp.Or(cfg.Backend.Etcd.DialTimeout, etcd.DefaultDialTimeout), log)
		return b, b.Close, nil
	case "memory":
		log.LogAttrs(ctx, slog.LevelWarn, "the memory backend keeps elections in this process only: "+
			"they are lost on restart and not shared with other replicas")
		return memory.New(), func() error { return nil }, nil
	default:
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, fielderr.Errorf("Backend.Kind", "unknown backend %q", cfg.Backend.Kind))
	}
}

// warnIfUnreachable pings a backend that connects lazily (etcd) once,
// within timeout, and warns naming its endpoints when it does not answer:
// the gateway starts anyway and answers 503 backend-unavailable until it
// does, and the warning says where it looked.
func warnIfUnreachable(ctx context.Context, b gateway.Pinger, kind string, endpoints []string, timeout time.Duration, log *slog.Logger) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := b.Ping(pctx); err != nil && ctx.Err() == nil {
		log.LogAttrs(ctx, slog.LevelWarn, fmt.Sprintf("%s does not answer at %s: requests get 503 backend-unavailable until it does", kind, strings.Join(endpoints, ", ")),
			slog.String("endpoints", strings.Join(endpoints, ",")), slog.Any("err", err))
	}
}

// natsError marks the NATS backend's configuration errors as such
// (ErrConfig).
func natsError(err error) error {
	if errors.Is(err, nats.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return err
}
