package conformance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatewayProc is one `elector serve` on the embedded backend (the
// default, what a user runs), on a free loopback port, with its data in
// a directory of its own.
type gatewayProc struct {
	URL string
	cmd *exec.Cmd

	mu     sync.Mutex
	log    strings.Builder
	paused bool
}

// startGateway starts elector and waits until it serves; it stops when
// the test ends, and its log is printed if the test failed. Webhooks may
// reach loopback (the suite's receiver); event streams advise clients to
// reconnect after 250ms.
func startGateway(t *testing.T, elector string) *gatewayProc {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(elector, "serve", "--listen", "127.0.0.1:0", "--log-format", "json",
		"--embedded-data-dir", filepath.Join(dir, "data"), "--webhooks-allow-private-networks", "--sse-retry", "250ms")
	cmd.Dir = dir // no elector.yaml there
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTOR_") { // only the flags configure it
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gatewayProc{cmd: cmd}
	started := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		waiting := started
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			g.mu.Lock()
			g.log.Write(sc.Bytes())
			g.log.WriteByte('\n')
			g.mu.Unlock()
			var line struct{ Msg, Listen string }
			if waiting != nil && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "elector started" {
				waiting <- line.Listen
				waiting = nil
			}
		}
		if waiting != nil {
			close(waiting)
		}
	}()
	t.Cleanup(func() {
		g.Resume()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-logDone
		if t.Failed() {
			lines := strings.SplitAfter(g.Log(), "\n")
			t.Logf("the last lines of elector serve's log:\n%s", strings.Join(lines[max(0, len(lines)-60):], ""))
		}
	})
	select {
	case addr, ok := <-started:
		if !ok {
			t.Fatalf("elector serve exited before it started")
		}
		g.URL = "http://" + addr
	case <-time.After(waitLimit):
		t.Fatalf("elector serve did not start within %s", waitLimit)
	}
	return g
}

// Log is what the process has logged.
func (g *gatewayProc) Log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}
