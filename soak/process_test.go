package soak

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildElector builds the elector command once into a temporary directory
// and returns the binary's path.
func buildElector(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "elector")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/elector")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// gatewayProcess is one `elector serve` on the embedded backend, on a
// fixed loopback port and data directory, so that a restart continues
// where the killed process stopped.
type gatewayProcess struct {
	t    *testing.T
	bin  string
	args []string
	URL  string

	dir string // working directory, holding serve.log

	mu  sync.Mutex
	cmd *exec.Cmd
}

// startGateway starts a gateway and waits until it is ready; it stops
// when the test ends.
func startGateway(t *testing.T, bin string) *gatewayProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	g := &gatewayProcess{t: t, bin: bin, URL: "http://" + addr, dir: t.TempDir(), args: []string{"serve",
		"--listen", addr, "--embedded-data-dir", t.TempDir(), "--log-level", "warn",
		"--limits-writes-per-second", "0"}}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.stop)
	return g
}

// Start starts the process and waits until /readyz answers 200.
func (g *gatewayProcess) Start() error {
	g.mu.Lock()
	log, err := os.OpenFile(filepath.Join(g.dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		g.mu.Unlock()
		return err
	}
	cmd := exec.Command(g.bin, g.args...)
	cmd.Dir = g.dir // no elector.yaml there
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = filterEnv(os.Environ())
	err = cmd.Start()
	log.Close() // the process holds its own descriptor
	if err != nil {
		g.mu.Unlock()
		return err
	}
	g.cmd = cmd
	g.mu.Unlock()
	return g.waitReady(30 * time.Second)
}

// filterEnv drops ELECTOR_* settings of the environment the test runs
// in, so that only the flags configure the gateway.
func filterEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ELECTOR_") {
			out = append(out, kv)
		}
	}
	return out
}

// waitReady polls /readyz until it answers 200 or timeout passes.
func (g *gatewayProcess) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Kill kills the process with SIGKILL and waits for it.
func (g *gatewayProcess) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	g.cmd = nil
}

// stop ends the process with SIGTERM, or SIGKILL if it takes too long.
func (g *gatewayProcess) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	g.cmd = nil
}

// Log returns what the processes wrote, restarts included.
func (g *gatewayProcess) Log() string {
	b, _ := os.ReadFile(filepath.Join(g.dir, "serve.log"))
	return string(b)
}
