package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/electorhq/elector/internal/memtrim"
	"github.com/electorhq/elector/server"
)

// runServe is `elector serve`: it loads the configuration and serves until
// ctx ends. Exit codes: 0 after a clean shutdown, 1 when the server or the
// backend fails, 2 for bad flags or configuration.
func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newServeFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return usageExit(stderr, "serve", err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "elector serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	l, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(stderr, "elector serve: %v\n", err)
		return 2
	}
	log := newLogger(l.Config.Log, stderr)
	for _, name := range l.UnknownEnv {
		log.LogAttrs(ctx, slog.LevelWarn, "ignoring environment variable that names no setting", slog.String("name", name))
	}
	if err := serve(ctx, l, log); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "elector stopped", slog.Any("err", err))
		if errors.Is(err, errConfig) {
			return 2
		}
		return 1
	}
	return 0
}

// newLogger returns the logger cfg describes, writing to w. cfg is valid.
func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level)) // validated: debug, info, warn or error
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve maps l onto the server's configuration and runs the server until
// ctx ends (server.Run says in which order it shuts down), reloading its
// TLS certificate on SIGHUP. It returns what Run returns, or the error
// that kept the server from being made.
func serve(ctx context.Context, l loaded, log *slog.Logger) error {
	cfg, err := l.Config.serverConfig(log)
	if err != nil {
		return err
	}
	cfg.StartedAttrs = []slog.Attr{slog.String("version", currentVersion().String())}
	if l.File != "" {
		cfg.StartedAttrs = append(cfg.StartedAttrs, slog.String("config", l.File))
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	hup, stopHangup := catchHangup()
	defer stopHangup()
	// The process's own loops beside the server, ended once it has run.
	loops, stopLoops := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopLoops()
	wg.Go(func() { reloadOnHangup(loops, hup, srv, cfg.TLS.Enabled(), log) })
	// A replica that goes quiet after a burst gives its garbage back to
	// the system, and a small heap under load is collected once it has
	// grown to heapFloor rather than at twice what it holds. The
	// process's, not the server's: a program that embeds the server runs
	// its own heap.
	wg.Go(func() { memtrim.Run(loops, memtrim.Config{Floor: memtrim.FloorUnder(heapFloor, memtrim.Limit())}, nil) })
	return srv.Run(ctx)
}

// heapFloor is the heap a replica's collections wait for at least (see
// memtrim.Config.Floor): on the etcd backend at 5,000 elections, about 65
// MiB live, garbage collection took over a quarter of the gateway's CPU
// under campaigns, on cores it shares with etcd. At most a quarter of the
// process's memory limit (GOMEMLIMIT or its cgroup's), and none below 32
// MiB of it; GOGC in the environment turns it off.
const heapFloor = 256 << 20

// catchHangup starts taking SIGHUP for the process; the caller passes the
// channel to reloadOnHangup and calls the returned stop when done. Without
// TLS the signal is taken all the same: it would otherwise kill the gateway,
// and operators send it by habit to ask for a reload.
func catchHangup() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// reloadOnHangup reloads srv's TLS certificate (if tlsOn) on every signal
// from hup until ctx ends; without TLS it logs that there is nothing to
// reload.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, srv *server.Server, tlsOn bool, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if tlsOn {
				_ = srv.ReloadTLS()
			} else {
				log.LogAttrs(ctx, slog.LevelInfo, "SIGHUP: no TLS certificate to reload")
			}
		}
	}
}
