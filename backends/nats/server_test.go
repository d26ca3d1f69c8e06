package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// testLogger keeps test output readable: warnings and errors only.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// startServer starts an embedded server with JetStream under dir.
func startServer(t testing.TB, dir string) *Embedded {
	t.Helper()
	e, err := StartEmbedded(EmbeddedConfig{DataDir: dir, ServerName: "test"}, testLogger(t))
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	return e
}

var streamCount atomic.Int64

// freshConfig returns a Config with its own stream and subjects, so that
// backends made by one test on a shared server never see each other.
func freshConfig() Config {
	n := streamCount.Add(1)
	return Config{Stream: fmt.Sprintf("T%d", n), SubjectPrefix: fmt.Sprintf("t%d", n), SweepInterval: time.Second}
}

// open returns a Backend with its own connection to e, closed when t ends.
func open(t *testing.T, e *Embedded, cfg Config) *Backend {
	t.Helper()
	nc, err := e.Connect(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, nc, cfg, WithLogger(testLogger(t)))
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	b.ownConn = true
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// run runs b's reconciler until t ends.
func run(t *testing.T, b *Backend) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func campaignT(t *testing.T, b gateway.Backend, election, id string, ttl time.Duration) (string, gateway.Status) {
	t.Helper()
	th := gateway.HashToken(gateway.NewToken())
	st, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, gateway.DefaultSettings())
	if err != nil {
		t.Fatalf("campaign %s/%s: %v", election, id, err)
	}
	return th, st
}
