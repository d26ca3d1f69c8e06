package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// DefaultGrace is how long requests in flight through the proxy may finish
// when it stops; longer ones (streams, websockets) are cut.
const DefaultGrace = 5 * time.Second

// Server is a Proxy serving and following its election.
type Server struct {
	addr string // where it listens
	// errc receives the feed's error (a gateway refusing the event stream
	// for good), or nil after stop.
	errc <-chan error
	// stop stops the server (requests in flight may finish for up to
	// grace, then they are cut), stops following, and waits for both.
	stop func()
}

// Serve listens on addr and serves p, following the leader through
// gateways (tried in turn, each with opts) until Stop; it returns once
// listening, or the error of the listen.
func Serve(ctx context.Context, addr string, p *Proxy, gateways []string, opts []client.Option, grace time.Duration) (*Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return p.base },
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.log.LogAttrs(ctx, slog.LevelInfo, "proxy listening", slog.String("addr", ln.Addr().String()),
		slog.String("election", p.election), slog.String("metadata_key", p.key))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.LogAttrs(ctx, slog.LevelError, "proxy stopped", slog.Any("err", err))
		}
	}()
	// The feed follows until stop, not until ctx ends: a sidecar that is
	// shutting down forwards to whoever leads until it has resigned.
	fctx, stopFeed := context.WithCancel(context.WithoutCancel(ctx))
	feedErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		feedErr <- p.follow(fctx, gateways, opts)
	}()
	return &Server{addr: ln.Addr().String(), errc: feedErr, stop: func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		_ = srv.Shutdown(sctx)
		p.close() // cuts what Shutdown does not wait for: streams, websockets
		_ = srv.Close()
		stopFeed()
		wg.Wait()
	}}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Err receives the error of a gateway that refuses the election's event
// stream for good (a 4xx such as a bad election name or a wrong API
// token), or nil once Stop has stopped the feed. It receives one value.
func (s *Server) Err() <-chan error { return s.errc }

// Stop stops the server: requests in flight may finish for up to the grace
// Serve was given, then they are cut, websockets and event streams among
// them. It stops following the election and returns once every goroutine
// the server started has ended.
func (s *Server) Stop() { s.stop() }
