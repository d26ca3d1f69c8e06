package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// startGateway serves a gateway over a fresh memory backend with
// httptest and returns the server; it stops when stop is called.
func startGateway() (srv *httptest.Server, stop func()) {
	b := memory.New()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := gateway.New(b, gateway.Config{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	srv = httptest.NewServer(api.New(gw, api.Config{Logger: log, RetryHint: 50 * time.Millisecond}))
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
