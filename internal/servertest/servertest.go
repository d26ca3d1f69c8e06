package servertest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/server"
)

// longstop bounds what Start and Stop wait for, so that a gateway that
// never starts or never stops fails its test instead of hanging it until
// go test's timeout. Nothing waits this long unless something is wrong.
const longstop = time.Minute

// Gateway is one gateway a test started.
type Gateway struct {
	// URL is the gateway's base URL, such as http://127.0.0.1:41234.
	URL string
	// Server is the running server.
	Server *server.Server

	stop context.CancelFunc
	done chan struct{} // closed once Run has returned
	err  error         // what Run returned, once done is closed
	once sync.Once
}

// Start starts a gateway with the options opts and waits until it serves
// the API; it fails the test if the gateway cannot start. The gateway
// stops when the test ends (Stop), after the cleanups the test registers
// later.
func Start(tb testing.TB, opts ...Option) *Gateway {
	tb.Helper()
	o := newOptions(tb)
	for _, opt := range opts {
		opt(o)
	}
	srv, err := server.New(o.cfg, o.serverOpts...)
	if err != nil {
		tb.Fatalf("servertest: %v", err)
	}
	running.add()
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{Server: srv, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.err = srv.Run(ctx)
	}()
	tb.Cleanup(func() {
		if err := g.Stop(); err != nil {
			tb.Errorf("servertest: the gateway stopped with %v", err)
		}
		o.logs.close()
		running.done(tb)
	})
	select {
	case <-srv.Ready():
	case <-g.done:
		tb.Fatalf("servertest: the gateway stopped before it served: %v", g.err)
	case <-time.After(longstop):
		tb.Fatalf("servertest: the gateway did not serve within %s", longstop)
	}
	scheme := "http://"
	if o.cfg.TLS.Enabled() {
		scheme = "https://"
	}
	g.URL = scheme + srv.Addr().String()
	return g
}

// Stop stops the gateway as a signal stops `elector serve` (Run's context
// ends) and returns what Run returned. Later calls return the same.
func (g *Gateway) Stop() error {
	g.once.Do(func() {
		g.stop()
		select {
		case <-g.done:
		case <-time.After(longstop):
			panic("servertest: the gateway did not stop within " + longstop.String())
		}
	})
	return g.err
}

// testLog writes a gateway's log lines to its test's log until the test
// is over: a line written later would make the testing package panic.
type testLog struct {
	tb     testing.TB
	mu     sync.Mutex
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.tb.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// close drops every later line.
func (l *testLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// logger returns a logger writing to tb's log, and that log.
func logger(tb testing.TB) (*slog.Logger, *testLog) {
	l := &testLog{tb: tb}
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}

// running counts the gateways this package runs in the process. It is
// the one package-level variable: goroutines are the process's, and the
// leak check of one gateway cannot tell its goroutines from another's; so
// it runs when the last live gateway stops, against the goroutines that
// ran before the first of them started.
var running gateways

// gateways is how many gateways run, and the goroutines that ran before
// the first of them started.
type gateways struct {
	mu     sync.Mutex
	live   int
	before map[string]bool
}

// add counts a gateway that starts.
func (g *gateways) add() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == 0 {
		g.before = goroutineIDs()
	}
	g.live++
}

// done counts a gateway that has stopped and, if it was the last, fails
// tb if goroutines of the gateway's packages that started since remain.
func (g *gateways) done(tb testing.TB) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live--; g.live == 0 {
		checkLeaks(tb, g.before, longstop)
	}
}
