package elector_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
)

// TestREADMEHolders runs the README's holders block, as written, against a
// gateway on the embedded backend and compares what it prints with the
// output the README shows: two candidates hold with terms of their own,
// the third waits, and the leader read lists both holders.
func TestREADMEHolders(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed by the README's holders block and CI must install it", tool)
			}
			t.Skipf("%s not installed; the README's holders block needs bash, curl and jq", tool)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: holders -->\n```sh\n(.*?)```\n\n```text\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no holders block followed by what it prints")
	}
	srv := startEmbeddedGateway(t, api.Config{})
	out := runBash(t, strings.ReplaceAll(string(m[1]), "http://127.0.0.1:8080", srv.URL))
	if out != string(m[2]) {
		t.Fatalf("the holders block printed\n%s\nwant\n%s", out, m[2])
	}
}

// startEmbeddedGateway serves the API over a gateway on the backend
// `elector serve` uses by default, embedded NATS, until the test ends.
func startEmbeddedGateway(t *testing.T, cfg api.Config) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	quiet := slog.New(slog.DiscardHandler)
	b, err := nats.OpenEmbedded(ctx, nats.EmbeddedConfig{DataDir: t.TempDir()}, nats.Config{}, nats.WithLogger(quiet))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	gw := gateway.New(b, gateway.Config{Logger: quiet})
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	cfg.Logger = quiet
	srv := httptest.NewServer(api.New(gw, cfg))
	// Cleanups run last-registered first: a caller's cleanups (an event
	// stream's curl) end before the server closes, which waits for open
	// requests.
	t.Cleanup(func() { srv.Close(); cancel(); <-done; _ = b.Close() })
	return srv
}
