package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
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

// baseURL is where a browser on this host reaches the gateway listening
// on addr: loopback for a wildcard address.
func baseURL(addr net.Addr, tlsOn bool) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// server is the HTTP server of the API, serving handler.
func (h HTTPConfig) server(handler http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cmp.Or(h.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serve runs the gateway and its HTTP server until ctx ends, then shuts
// down: it stops accepting, ends event streams, drains requests for at most
// http.shutdown_timeout, and only then stops the gateway's backend loop and
// releases the backend. It returns nil after a shutdown asked for by ctx,
// or the error that stopped the server or the backend loop.
func serve(ctx context.Context, l loaded, log *slog.Logger) error {
	cfg := l.Config
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	tcp := ln
	ln, certs, err := listenTLS(tcp, cfg.TLS, log)
	if err != nil {
		_ = tcp.Close()
		return err
	}
	warnIfOpen(ctx, log, cfg, ln.Addr())
	// HTTP is served from here on, so that probes answer while the backend
	// opens (a member of an embedded cluster waits for its peers): the
	// API takes over once the backend is open.
	phased := newPhasedHandler("opening the " + cfg.Backend.Kind + " backend")
	srv := cfg.HTTP.server(phased, log)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.LogAttrs(ctx, slog.LevelInfo, "listening; opening the backend", slog.String("listen", ln.Addr().String()),
		slog.String("backend", cfg.Backend.Kind))
	backend, release, err := openBackend(ctx, cfg, log, phased.Waiting)
	if err != nil {
		_ = srv.Close()
		<-serveErr
		if ctx.Err() != nil {
			// Stopped while waiting for the backend: a clean shutdown.
			log.LogAttrs(context.Background(), slog.LevelInfo, "elector stopped before its backend opened", slog.Any("err", err))
			return nil
		}
		return err
	}
	defer func() {
		if err := release(); err != nil {
			log.LogAttrs(context.Background(), slog.LevelError, "backend release failed", slog.Any("err", err))
		}
	}()
	// Metrics time every backend operation, watch the gateway's
	// transitions and count requests.
	mtr := newMetrics(cfg, log)
	gwCfg := cfg.gatewayConfig(log)
	gwCfg.Observer = mtr.BackendObserver()
	gw := gateway.New(backend, gwCfg)
	transitions := mtr.ObserveGateway(gw)
	apiCfg, err := cfg.apiConfig(log)
	if err != nil {
		_ = srv.Close()
		<-serveErr
		return err
	}
	apiCfg.Metrics = mtr
	var hooks *webhooks.Service
	if kv, ok := gw.KV(); ok {
		hooksCfg := cfg.webhooksConfig(log)
		hooksCfg.Metrics = mtr.Webhooks()
		hooks = webhooks.New(gw, kv, hooksCfg)
		apiCfg.Webhooks = hooks
	} else {
		log.LogAttrs(ctx, slog.LevelWarn, "this backend cannot keep the webhook outbox: webhooks are off", slog.String("backend", cfg.Backend.Kind))
	}

	// streams ends when shutdown begins; it ends event streams (endStreamsOn).
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	// Streams also see the shutdown themselves, to send a retry hint.
	apiCfg.Shutdown = streams.Done()
	apiCfg.CheckOutbox = hooks != nil
	phased.Ready(endStreamsOn(streams, api.New(gw, apiCfg)))

	// The backend loop runs on its own context, which outlives ctx: requests
	// still draining after a signal need the backend.
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- gw.Run(runCtx) })
	wg.Go(func() { runTransitions(runCtx, transitions, log) })
	hup, stopHangup := catchHangup()
	defer stopHangup()
	wg.Go(func() { reloadOnHangup(runCtx, hup, certs, log) })
	// Webhook delivery stops before the backend loop, so that it can still
	// release its claims for another replica to continue at once.
	hooksCtx, stopHooks := context.WithCancel(context.Background())
	defer stopHooks()
	hooksDone := make(chan struct{})
	if hooks != nil {
		wg.Go(func() {
			defer close(hooksDone)
			if err := hooks.Run(hooksCtx); err != nil {
				log.LogAttrs(hooksCtx, slog.LevelError, "webhook delivery stopped", slog.Any("err", err))
			}
		})
	} else {
		close(hooksDone)
	}
	defer wg.Wait()

	base := baseURL(ln.Addr(), cfg.TLS.CertFile != "")
	attrs := []slog.Attr{
		slog.String("listen", ln.Addr().String()),
		slog.String("backend", cfg.Backend.Kind),
		slog.String("version", currentVersion().String()),
	}
	if l.File != "" {
		attrs = append(attrs, slog.String("config", l.File))
	}
	attrs = append(attrs, slog.String("docs", base+"/docs"), slog.String("ui", base+"/ui"))
	log.LogAttrs(ctx, slog.LevelInfo, "elector started", attrs...)

	var serveResult, runResult error
	serveDone, runDone := false, false
	select {
	case <-ctx.Done():
	case serveResult = <-serveErr:
		serveDone = true
	case runResult = <-runErr:
		runDone = true
	}

	start := time.Now()
	log.LogAttrs(ctx, slog.LevelInfo, "shutting down", slog.Duration("timeout", cfg.HTTP.ShutdownTimeout))
	endStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "requests still running at the shutdown timeout were cut off", slog.Any("err", err))
		_ = srv.Close()
	}
	if !serveDone {
		serveResult = <-serveErr
	}
	stopHooks()
	<-hooksDone
	stopRun()
	if !runDone {
		runResult = <-runErr
	}

	switch {
	case !errors.Is(serveResult, http.ErrServerClosed):
		return fmt.Errorf("http server: %w", serveResult)
	case runDone:
		return fmt.Errorf("backend loop ended before shutdown: %v", runResult)
	case runResult != nil && !errors.Is(runResult, context.Canceled):
		return fmt.Errorf("backend loop: %w", runResult)
	}
	log.LogAttrs(ctx, slog.LevelInfo, "elector stopped", slog.Duration("shutdown", time.Since(start)))
	return nil
}
