package sidecar

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// TestMain lets the test binary stand in for elector as the guard of a
// supervised command: the sidecar starts os.Executable() as
// `elector __guard`, which in tests is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardCommand {
		os.Exit(RunGuard(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// testGateway is a real gateway over a memory backend, served in-process,
// with a proxy in front of it whose requests a test can make fail.
type testGateway struct {
	srv     *servertest.Gateway // the gateway itself
	proxy   *httptest.Server    // the proxy in front of it
	blocked atomic.Bool         // the proxy drops every request while set
	c       *client.Client      // a client of the gateway (not through the proxy)
}

func newTestGateway(t testing.TB) *testGateway {
	t.Helper()
	g := &testGateway{}
	g.srv = servertest.Start(t, servertest.Configure(func(c *server.Config) {
		c.Gateway.Defaults.ErrorCooldown = 30 * time.Second
		c.API.RetryHint = api.MinRetryHint // streams the sidecar follows reconnect at once
	}))
	target, _ := url.Parse(g.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = nil
	g.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.blocked.Load() {
			panic(http.ErrAbortHandler) // the connection is cut, no answer
		}
		rp.ServeHTTP(w, r)
	}))
	g.proxy.Config.ErrorLog = nil
	g.c = client.New(g.srv.URL)
	t.Cleanup(func() {
		g.proxy.CloseClientConnections()
		g.proxy.Close()
	})
	return g
}

// readLines returns the lines of a file the commands append to.
func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// candidate is the configuration of a sidecar campaigning as id in
// election e through gateway, with elector run's defaults, and with begin,
// end and error commands that append a line "begin|end|error <candidate>
// <term> <reason>" to log (no commands when log is "").
func candidate(gateway, id string, ttl time.Duration, log string) Config {
	c := Config{
		Gateways:         []string{gateway},
		Election:         "e",
		ID:               id,
		TTL:              ttl,
		ErrorTimeout:     DefaultErrorTimeout,
		EndRetries:       DefaultEndRetries,
		EndRetryInterval: DefaultEndRetryInterval,
		ChildGrace:       DefaultChildGrace,
	}
	if log != "" {
		line := func(what string) string {
			return `echo "` + what + ` $ELECTOR_CANDIDATE $ELECTOR_TERM $ELECTOR_REASON" >> ` + log
		}
		c.Begin, c.End, c.OnError = line("begin"), line("end"), line("error")
	}
	return c
}

// running is a sidecar that runs in-process.
type running struct {
	*Sidecar
	logs *servertest.SyncBuffer // its logs and its commands' output
	// stop cancels its context (as SIGTERM does to elector run) and
	// returns what Run returned; it may be called more than once.
	stop func() error
}

// start runs the sidecar c describes, logging at info (or at c.Logger)
// into the returned logs; the test's cleanup stops it.
func start(t *testing.T, c Config) *running {
	t.Helper()
	r := &running{logs: &servertest.SyncBuffer{}}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(r.logs, nil))
	}
	if c.Stdin == nil {
		c.Stdin = strings.NewReader("")
	}
	c.Stdout, c.Stderr = r.logs, r.logs
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	r.Sidecar = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var runErr error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("the sidecar did not return; logs:\n%s", r.logs)
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}
