package soak

import (
	"context"
	"github.com/electorhq/elector/internal/testnet"
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

// gatewayProcess is one `elector serve` on a fixed loopback port and, on
// the embedded backend, data directory, so that a restart continues where
// the killed process stopped.
type gatewayProcess struct {
	t    *testing.T
	bin  string
	args []string
	URL  string
	dir  string // working directory, holding serve.log

	mu  sync.Mutex
	cmd *exec.Cmd
}

// startGateway starts one gateway on the embedded backend and waits until
// it is ready; it stops when the test ends. Its webhooks may reach
// loopback, where the soak's receiver is. (startMembers starts clusters.)
func startGateway(t *testing.T, bin string) *gatewayProcess {
	t.Helper()
	return startReplicas(t, bin, nil)[0]
}

// startReplicas starts the gateway of startGateway (etcd nil) or those of
// startEtcdMembers: one per entry of etcd, replica i on the
// comma-separated client URLs etcd[i].
func startReplicas(t *testing.T, bin string, etcd []string) []*gatewayProcess {
	t.Helper()
	n := max(1, len(etcd))
	gws := make([]*gatewayProcess, n)
	for i := range n {
		addr := testnet.FreeAddr(t)
		g := &gatewayProcess{t: t, bin: bin, URL: "http://" + addr, dir: t.TempDir(), args: []string{"serve",
			"--listen", addr, "--log-level", "warn", "--limits-writes-per-second", "0",
			"--webhooks-allow-private-networks"}}
		if etcd != nil {
			g.args = append(g.args, "--backend-kind", "etcd", "--etcd-endpoints", etcd[i])
		} else {
			g.args = append(g.args, "--embedded-data-dir", "data")
		}
		if err := g.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.stop)
		gws[i] = g
	}
	for _, g := range gws {
		if err := g.waitReady(time.Minute); err != nil {
			t.Fatalf("%s not ready: %v\n%s", g.URL, err, g.Log())
		}
	}
	return gws
}

// Restart starts the process again and waits until it is ready.
func (g *gatewayProcess) Restart() error {
	if err := g.start(); err != nil {
		return err
	}
	return g.waitReady(time.Minute)
}

// start starts the process.
func (g *gatewayProcess) start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	log, err := os.OpenFile(filepath.Join(g.dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the process holds its own descriptor
	cmd := exec.Command(g.bin, g.args...)
	cmd.Dir = g.dir // no elector.yaml there
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = filterEnv(os.Environ())
	if err := cmd.Start(); err != nil {
		return err
	}
	g.cmd = cmd
	return nil
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

// Signal sends sig to the process, if it runs.
func (g *gatewayProcess) Signal(sig os.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil {
		_ = g.cmd.Process.Signal(sig)
	}
}

// stop ends the process with SIGTERM, or SIGKILL if it takes too long.
func (g *gatewayProcess) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGCONT) // in case it was stopped
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
