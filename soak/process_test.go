package soak

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/proc"
	"github.com/electorhq/elector/internal/testnet"
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
	t   *testing.T
	URL string
	proc.Process
}

// newGatewayProcess is the gateway `bin serve args…` listening on addr,
// with its working directory (holding serve.log and no elector.yaml) a
// temporary one.
func newGatewayProcess(t *testing.T, bin, addr string, args ...string) *gatewayProcess {
	return &gatewayProcess{t: t, URL: "http://" + addr, Process: proc.Process{
		Bin: bin, Args: append([]string{"serve", "--listen", addr}, args...), Dir: t.TempDir(),
		LogName: "serve.log", EnvPrefix: "ELECTOR_", StopTimeout: 20 * time.Second,
	}}
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
		g := newGatewayProcess(t, bin, addr, "--log-level", "warn", "--limits-writes-per-second", "0",
			"--webhooks-allow-private-networks")
		if etcd != nil {
			g.Args = append(g.Args, "--backend-kind", "etcd", "--etcd-endpoints", etcd[i])
		} else {
			g.Args = append(g.Args, "--embedded-data-dir", "data")
		}
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Stop)
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
	if err := g.Start(); err != nil {
		return err
	}
	return g.waitReady(time.Minute)
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
