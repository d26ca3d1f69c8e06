package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// Server is one gateway replica as `elector serve` runs it: the backend,
// the gateway over it, webhook delivery, metrics and the HTTP API, served
// on one listener. New checks the configuration; Run opens the backend,
// serves until its context ends and shuts down in order. Its methods are
// safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	backend gateway.Backend // WithBackend's; nil: Run opens cfg.Backend
	tls     *tls.Config     // nil without TLS
	certs   *certReloader   // nil without TLS
	phased  *phasedHandler
	ready   chan struct{}
	addr    atomic.Pointer[net.Addr]
	ran     atomic.Bool
}

// Option changes how New builds a Server.
type Option func(*Server)

// WithBackend makes the server run over b instead of opening the backend
// Config.Backend names, whose Kind then only names b in logs and whose
// other fields are not checked. Run runs b's loop (gateway.Runner) as
// long as it runs, and never closes b: b's owner does, after Run has
// returned. Several servers may share one backend
// that allows it, as the memory backend does (replicas of one process).
func WithBackend(b gateway.Backend) Option {
	return func(s *Server) { s.backend = b }
}

// New returns a Server for cfg, which it checks (errors as Validate's)
// and copies, and loads the TLS certificate cfg.TLS names (errors wrap
// ErrConfig). It opens nothing else: Run does.
func New(cfg Config, opts ...Option) (*Server, error) {
	s := &Server{ready: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	if err := cfg.validate(s.backend == nil); err != nil {
		return nil, err
	}
	s.cfg = cfg.clone()
	s.log = cmp.Or(cfg.Logger, slog.Default())
	var err error
	if s.tls, s.certs, err = loadTLS(cfg.TLS, s.log); err != nil {
		return nil, err
	}
	s.phased = newPhasedHandler("opening the " + s.kind() + " backend")
	return s, nil
}

// kind names the backend in logs.
func (s *Server) kind() string {
	if s.backend != nil {
		return cmp.Or(s.cfg.Backend.Kind, "given")
	}
	return s.cfg.Backend.Kind
}

// Handler returns the handler Run serves, for serving it elsewhere too
// (an embedding program's own listener). Until Run has opened the backend
// it answers /healthz 200, /readyz 503 saying what it waits for, and
// every other request 503 backend-unavailable with Retry-After; then it
// is the API.
func (s *Server) Handler() http.Handler { return s.phased }

// Ready returns a channel that is closed once Run serves the API: the
// backend is open and the gateway, webhook delivery and metrics run. It
// is never closed if Run stops before.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address Run listens on, nil before Run listens.
func (s *Server) Addr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// ReloadTLS reads the TLS certificate and key files again now (they are
// also reloaded when they change). A reload that fails keeps the old
// certificate, logs why and returns the error. Without TLS it does
// nothing.
func (s *Server) ReloadTLS() error {
	if s.certs == nil {
		return nil
	}
	return s.certs.Reload()
}

// Run listens on Config.Listen, opens the backend and serves the API
// until ctx ends, then shuts down in the order shutdown describes. HTTP is
// served from the moment it listens, so that probes answer while the
// backend opens (a member of an embedded cluster waits for its peers);
// the API takes over once the backend is open (Ready).
//
// Run returns nil after a shutdown ctx asked for, also one while the
// backend was still opening; else the error that stopped the HTTP server
// or the gateway's loop, or that kept it from starting (listening, the
// backend; configuration errors wrap ErrConfig). Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("server: Run called twice")
	}
	ln, err := listen(ctx, s.cfg, s.tls, s.log)
	if err != nil {
		return err
	}
	addr := ln.Addr()
	s.addr.Store(&addr)
	srv := s.cfg.HTTP.server(s.phased, s.log)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.log.LogAttrs(ctx, slog.LevelInfo, "listening; opening the backend", slog.String("listen", addr.String()),
		slog.String("backend", s.kind()))
	p, err := s.start(ctx)
	if err != nil {
		_ = srv.Close()
		<-serveErr
		if ctx.Err() != nil {
			// Stopped while waiting for the backend: a clean shutdown.
			s.log.LogAttrs(context.Background(), slog.LevelInfo, "elector stopped before its backend opened", slog.Any("err", err))
			return nil
		}
		return err
	}
	defer p.release(s.log)
	s.logStarted(ctx, addr)
	close(s.ready)
	return s.serve(ctx, srv, serveErr, p)
}

// serve waits until ctx ends, or the HTTP server (serveErr) or the
// gateway's loop stops on its own, then shuts down and returns Run's
// result.
func (s *Server) serve(ctx context.Context, srv *http.Server, serveErr <-chan error, p *parts) error {
	var serveResult, loopResult error
	serveDone, loopDone := false, false
	select {
	case <-ctx.Done():
	case serveResult = <-serveErr:
		serveDone = true
	case loopResult = <-p.loopErr:
		loopDone = true
	}
	start := time.Now()
	s.log.LogAttrs(ctx, slog.LevelInfo, "shutting down", slog.Duration("timeout", s.cfg.HTTP.ShutdownTimeout))
	s.shutdown(ctx, srv, p)
	if !serveDone {
		serveResult = <-serveErr
	}
	if !loopDone {
		loopResult = <-p.loopErr
	}
	switch {
	case !errors.Is(serveResult, http.ErrServerClosed):
		return fmt.Errorf("http server: %w", serveResult)
	case loopDone:
		return fmt.Errorf("backend loop ended before shutdown: %v", loopResult)
	case loopResult != nil && !errors.Is(loopResult, context.Canceled):
		return fmt.Errorf("backend loop: %w", loopResult)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "elector stopped", slog.Duration("shutdown", time.Since(start)))
	return nil
}

// parts is what Run starts once the backend is open; shutdown stops them.
type parts struct {
	backend    func() error       // releases the backend
	endStreams context.CancelFunc // ends event streams
	stopHooks  context.CancelFunc // stops webhook delivery
	hooksDone  chan struct{}      // closed once webhook delivery has stopped
	stopLoops  context.CancelFunc // stops the gateway's loop and the transitions watcher
	loopErr    chan error         // the gateway loop's result
	wg         sync.WaitGroup
}

// start opens the backend and wires the gateway, metrics, webhook
// delivery and the API over it, hands the API to the phased handler and
// starts the loops. Metrics time every backend operation (the gateway
// runs over the observed backend), watch the gateway's transitions and
// count requests.
func (s *Server) start(ctx context.Context) (*parts, error) {
	backend, release, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	p := &parts{backend: release, hooksDone: make(chan struct{}), loopErr: make(chan error, 1)}
	mtr := newMetrics(s.cfg, s.log)
	gw := gateway.New(mtr.ObserveBackend(backend), s.cfg.gatewayConfig(s.log))
	transitions := mtr.ObserveGateway(gw)
	apiCfg := s.cfg.apiConfig(s.log, mtr)
	hooks := webhooks.New(gw, gw.KV(), s.cfg.webhooksConfig(s.log, mtr))
	apiCfg.Webhooks = hooks
	// streams ends when shutdown begins; it ends event streams
	// (endStreamsOn), which also see it themselves, to send a retry hint.
	streams, endStreams := context.WithCancel(context.Background())
	p.endStreams = endStreams
	apiCfg.Shutdown = streams.Done()
	apiCfg.CheckOutbox = true
	// The event hub, the transition log and the transition metrics start
	// from the backend's head as it is before the first request is
	// served, so that they see every transition the requests cause.
	bctx, cancel := context.WithTimeout(ctx, beginTimeout)
	origin, err := gw.Begin(bctx)
	cancel()
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "could not read the backend's head before serving; transitions of the first requests may be missing from the log and metrics",
			slog.Any("err", err))
	}
	s.phased.Ready(endStreamsOn(streams, api.New(gw, apiCfg)))

	// The loops run on a context of their own, which outlives ctx:
	// requests still draining after ctx ends need the backend.
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	p.stopLoops = stopLoops
	p.wg.Go(func() { p.loopErr <- gw.Run(loops) })
	p.wg.Go(func() { runTransitions(loops, transitions, origin, s.log) })
	hooksCtx, stopHooks := context.WithCancel(context.WithoutCancel(ctx))
	p.stopHooks = stopHooks
	p.wg.Go(func() {
		defer close(p.hooksDone)
		if err := hooks.Run(hooksCtx); err != nil {
			s.log.LogAttrs(hooksCtx, slog.LevelError, "webhook delivery stopped", slog.Any("err", err))
		}
	})
	return p, nil
}

// beginTimeout bounds how long a server waits for the backend's head
// before it serves (gateway.Gateway.Begin): the backend has just answered
// its opening, so this is only for one that stops answering right then.
const beginTimeout = 5 * time.Second

// open returns the backend to run over and the function that releases
// it: WithBackend's, which the server does not release, or the one
// Config.Backend names. While it waits, /readyz says why.
func (s *Server) open(ctx context.Context) (gateway.Backend, func() error, error) {
	if s.backend != nil {
		return s.backend, func() error { return nil }, nil
	}
	return openBackend(ctx, s.cfg, s.log, s.phased.Waiting)
}

// logStarted says, once, that the server serves the API, where and over
// which backend.
func (s *Server) logStarted(ctx context.Context, addr net.Addr) {
	base := baseURL(addr, s.tls != nil)
	attrs := []slog.Attr{slog.String("listen", addr.String()), slog.String("backend", s.kind())}
	attrs = append(attrs, s.cfg.StartedAttrs...)
	attrs = append(attrs, slog.String("docs", base+"/docs"), slog.String("ui", base+"/ui"))
	s.log.LogAttrs(ctx, slog.LevelInfo, "elector started", attrs...)
}

// shutdown stops srv and p in this order, each step for a reason:
//
//  1. Event streams end, with a retry hint: http.Server.Shutdown waits
//     for handlers but never cancels them, and a stream, which runs until
//     its client leaves, would hold the shutdown up to its timeout. Their
//     clients reconnect, to another replica if there is one.
//  2. The HTTP server stops accepting and drains the other requests, for
//     at most HTTP.ShutdownTimeout, then cuts off what still runs: those
//     requests need the gateway and the backend, which all still run.
//  3. Webhook delivery stops while the gateway's loop still runs: it
//     releases its claims through the backend, so that another replica
//     continues its deliveries at once instead of after their TTL.
//  4. The gateway's loop (the backend's own loop, such as the NATS
//     reconciler, and the event hub) and the transitions watcher stop:
//     nothing serves or delivers any more.
//
// Run closes the backend last (parts.release), after every goroutine that
// used it has returned; the embedded NATS server, closed in order, hands
// its streams to the other members first.
func (s *Server) shutdown(ctx context.Context, srv *http.Server, p *parts) {
	p.endStreams()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.HTTP.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "requests still running at the shutdown timeout were cut off", slog.Any("err", err))
		_ = srv.Close()
	}
	p.stopHooks()
	<-p.hooksDone
	p.stopLoops()
}

// release waits for every goroutine of p, then releases the backend.
func (p *parts) release(log *slog.Logger) {
	p.endStreams()
	p.stopHooks()
	p.stopLoops()
	p.wg.Wait()
	if err := p.backend(); err != nil {
		log.LogAttrs(context.Background(), slog.LevelError, "backend release failed", slog.Any("err", err))
	}
}
