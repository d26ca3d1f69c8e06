package bench

import (
	"context"
	"fmt"
	"github.com/electorhq/elector/internal/testnet"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// etcdBinary is where Debian's etcd-server package installs etcd; the
// environment variable ELECTOR_ETCD_BINARY names another.
const etcdBinary = "/usr/bin/etcd"

// etcdServer is an etcd process a benchmark runs on free loopback ports,
// with a temp data dir, until the benchmark ends.
type etcdServer struct {
	URL     string // the client URL, http://127.0.0.1:<port>
	Version string
	pid     int
}

// startEtcd starts etcd and waits until it is healthy; it skips tb when
// no etcd binary is installed, so that the comparison never makes a run
// fail on a machine without it. The process is stopped (SIGTERM, then
// SIGKILL after 10s) when tb ends.
func startEtcd(tb testing.TB) *etcdServer {
	tb.Helper()
	bin := etcdBinary
	if b := os.Getenv("ELECTOR_ETCD_BINARY"); b != "" {
		bin = b
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Skipf("no etcd at %s (apt-get install etcd-server), so no comparison with etcd: %v", bin, err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		tb.Fatalf("%s --version: %v", bin, err)
	}
	var version string
	_, _ = fmt.Sscanf(string(out), "etcd Version: %s", &version)

	dir := tb.TempDir()
	client, peer := "http://"+testnet.FreeAddr(tb), "http://"+testnet.FreeAddr(tb)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--name", "bench", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "bench="+peer,
		"--logger", "zap", "--log-level", "error")
	if os.Getenv("ELECTOR_BENCH_PROFILE") != "" {
		// For profiles of etcd's own work under a load (etcdProfileDuring).
		cmd.Args = append(cmd.Args, "--enable-pprof")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	var waitErr error
	done := make(chan struct{}) // closed when the process has exited
	go func() { waitErr = cmd.Wait(); _ = logf.Close(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			ok := resp.StatusCode == http.StatusOK
			resp.Body.Close()
			if ok {
				return &etcdServer{URL: client, Version: version, pid: cmd.Process.Pid}
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
			tb.Fatalf("etcd exited before it was healthy: %v\n%s", waitErr, log)
		case <-ctx.Done():
			tb.Fatalf("etcd not healthy after 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
