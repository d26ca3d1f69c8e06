package client_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// startGateway serves a gateway over a fresh memory backend with
// httptest and returns the server; it stops when stop is called.
func startGateway() (srv *httptest.Server, stop func()) {
	return startGatewayWith(api.Config{})
}

// startGatewayWith is startGateway with cfg for the API (its logger and
// retry hint are set here).
func startGatewayWith(cfg api.Config) (srv *httptest.Server, stop func()) {
	b := memory.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := gateway.New(b, gateway.Config{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	cfg.Logger, cfg.RetryHint = log, 50*time.Millisecond
	srv = httptest.NewServer(api.New(gw, cfg))
	return srv, func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	}
}

// newGateway is startGateway for a test.
func newGateway(t *testing.T) *httptest.Server {
	t.Helper()
	srv, stop := startGateway()
	t.Cleanup(stop)
	return srv
}

// cuttableProxy is a reverse proxy in front of target whose connections a
// test can cut: while cut is set, every request is dropped unanswered;
// while stall is set, every new request is held unanswered until the
// client gives up on it.
type cuttableProxy struct {
	*httptest.Server
	cut, stall atomic.Bool
}

func newCuttableProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // event streams pass at once
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p := &cuttableProxy{}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cut.Load() {
			panic(http.ErrAbortHandler) // the connection is cut, no answer
		}
		if p.stall.Load() {
			<-r.Context().Done()
			return
		}
		rp.ServeHTTP(w, r)
	}))
	p.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.Start()
	t.Cleanup(func() {
		p.CloseClientConnections()
		p.Close()
	})
	return p
}

// waitUntil polls cond every 10ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
