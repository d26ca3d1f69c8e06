package etcd_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
)

// startBinary runs the etcd binary named by ELECTOR_ETCD_BINARY (Debian's
// etcd-server installs /usr/bin/etcd) on free loopback ports with a temp
// data dir until the test ends, and returns it as a member with its
// version. Without the variable the test is skipped.
func startBinary(t *testing.T) ([]*member, string) {
	t.Helper()
	bin := os.Getenv("ELECTOR_ETCD_BINARY")
	if bin == "" {
		t.Skip("set ELECTOR_ETCD_BINARY (e.g. /usr/bin/etcd) to test against an installed etcd")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	version := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "etcd Version:"))
	client, peer := freeURL(t), freeURL(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--name", "m0", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client.String(), "--advertise-client-urls", client.String(),
		"--listen-peer-urls", peer.String(), "--initial-advertise-peer-urls", peer.String(),
		"--initial-cluster", "m0="+peer.String(), "--logger", "zap", "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	eventually.True(t, 10*time.Second, "etcd healthy", func() bool {
		resp, err := http.Get(client.String() + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return []*member{{name: "m0", client: url.URL{Scheme: "http", Host: client.Host}}}, version
}

// TestConformanceInstalledEtcd runs the conformance suite against an
// installed etcd: with Debian's 3.4, whose progress notifications the
// backend does not trust, reads catch up through events and barriers.
func TestConformanceInstalledEtcd(t *testing.T) {
	ms, version := startBinary(t)
	b := newBackend(t, ms, "probe")
	if _, _, err := b.Elections(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd %s; progress notifications trusted: %v", version, b.TrustsProgress())
	if patch, err := strconv.Atoi(strings.TrimPrefix(version, "3.4.")); err == nil && patch < 31 && b.TrustsProgress() {
		t.Fatalf("etcd %s sends progress notifications out of band, but the backend trusts them", version)
	}
	backendtest.Run(t, conformance(ms, 50, modelOpsBeside))
}
