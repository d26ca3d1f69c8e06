package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// testGateway is a real gateway over a memory backend, served in-process.
type testGateway struct {
	srv *servertest.Gateway
	c   *client.Client // a client of the gateway
}

func newTestGateway(t testing.TB) *testGateway {
	t.Helper()
	srv := servertest.Start(t, servertest.Configure(func(c *server.Config) {
		c.Gateway.Defaults.ErrorCooldown = 30 * time.Second
		c.API.RetryHint = api.MinRetryHint // streams the sidecar follows reconnect at once
	}))
	return &testGateway{srv: srv, c: client.New(srv.URL)}
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

// hookArgs are flags that make the begin, end and error commands append a
// line "begin|end|error <candidate> <term> <reason>" to log.
func hookArgs(log string) []string {
	line := func(what string) string {
		return `echo "` + what + ` $ELECTOR_CANDIDATE $ELECTOR_TERM $ELECTOR_REASON" >> ` + log
	}
	return []string{"--leader-begin-command", line("begin"), "--leader-end-command", line("end"), "--error-command", line("error")}
}

// inProcess runs `elector run args…` in-process; stop cancels its context
// (as SIGTERM would) and returns the exit code.
func inProcess(t *testing.T, args ...string) (logs *servertest.SyncBuffer, stop func() int) {
	t.Helper()
	logs = &servertest.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- runSidecar(ctx, args, strings.NewReader(""), logs, logs) }()
	var once sync.Once
	var c int
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case c = <-code:
			case <-time.After(20 * time.Second):
				t.Errorf("elector run did not return; logs:\n%s", logs)
			}
		})
		return c
	}
	t.Cleanup(func() { stop() })
	return logs, stop
}

// builtElector is the elector binary, built once for the tests that need a
// real process (signals).
var builtElector = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "elector-test-bin")
	if err != nil {
		return "", err
	}
	builtDir.Store(&dir)
	bin := filepath.Join(dir, "elector")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

// builtDir is where builtElector put the binary, for TestMain to remove.
var builtDir atomic.Pointer[string]

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// startProcess starts the built elector with args; its output goes to the
// returned buffer.
func startProcess(t testing.TB, args ...string) (*exec.Cmd, *servertest.SyncBuffer) {
	t.Helper()
	bin, err := builtElector()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	out := &servertest.SyncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, out
}

// campaignReq is a campaign of id with a TTL of a minute.
func campaignReq(id string) client.CampaignRequest {
	return client.CampaignRequest{ID: id, TTL: time.Minute}
}
