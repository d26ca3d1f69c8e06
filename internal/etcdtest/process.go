package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/electorhq/elector/internal/proc"
	"github.com/electorhq/elector/internal/testnet"
)

// SystemBinary is where Debian's etcd-server package installs etcd.
const SystemBinary = "/usr/bin/etcd"

// System returns the etcd server installed on the machine (SystemBinary),
// and fails the test when there is none: the tests that ask for it are the
// soaks, which .ci/run runs after installing it.
func System(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat(SystemBinary); err != nil {
		tb.Fatalf("etcdtest: %s: %v (apt-get install etcd-server)", SystemBinary, err)
	}
	return SystemBinary
}

// BuildModule builds etcd's server command at the version of
// go.etcd.io/etcd/server/v3 in elector's go.mod (package etcdmain) into a
// temporary directory and returns the binary's path.
func BuildModule(tb testing.TB) string {
	tb.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		tb.Fatalf("etcdtest: go env GOMOD: %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "etcd")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/etcdtest/etcdmain")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("etcdtest: go build etcdmain: %v\n%s", err, out)
	}
	return bin
}

// Version runs bin --version and returns the version it names ("3.4.23").
func Version(tb testing.TB, bin string) string {
	tb.Helper()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		tb.Fatalf("etcdtest: %s --version: %v", bin, err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	tb.Fatalf("etcdtest: %s --version says no version:\n%s", bin, out)
	return ""
}

// Cluster is etcd members running as processes of their own, on loopback
// ports and in temporary data directories, so that a test can stop
// (SIGSTOP), resume, kill and restart each. It is stopped when the test
// ends. Its methods are safe for concurrent use.
type Cluster struct {
	Members []*Member
	// Version is the members' version, as the binary names it.
	Version string
}

// Member is one etcd process of a Cluster.
// Its process is started, paused, resumed, killed and started again with
// the methods of proc.Process; Start keeps the data it has, so a
// restarted member rejoins the cluster it was in.
type Member struct {
	Name      string
	ClientURL string           // http://127.0.0.1:port
	status    *clientv3.Client // for Status, which dials the member itself
	proc.Process
}

// StartCluster starts n etcd members of binary bin as one cluster and
// waits until they have elected a leader. Their logs are in their
// directories (Log).
func StartCluster(tb testing.TB, bin string, n int) *Cluster {
	tb.Helper()
	c := &Cluster{Version: Version(tb, bin)}
	peers := make([]string, n)
	var initial []string
	for i := range n {
		peers[i] = "http://" + testnet.FreeAddr(tb)
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range n {
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientURL: "http://" + testnet.FreeAddr(tb)}
		m.Process = proc.Process{Bin: bin, Dir: tb.TempDir(), LogName: "etcd.log", EnvPrefix: "ETCD_", StopTimeout: 10 * time.Second}
		m.Args = []string{
			"--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "elector-test", "--logger", "zap", "--log-level", "warn",
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			tb.Fatalf("etcdtest: client of %s: %v", m.Name, err)
		}
		m.status = cli
		c.Members = append(c.Members, m)
		tb.Cleanup(func() { m.Stop(); _ = cli.Close() })
	}
	for _, m := range c.Members {
		if err := m.Start(); err != nil {
			tb.Fatalf("etcdtest: starting %s: %v", m.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		tb.Fatalf("etcdtest: cluster of %s not healthy: %v\n%s", bin, err, c.Members[0].Log())
	}
	return c
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.ClientURL
	}
	return eps
}

// Leader returns the member that the members answering within ctx agree
// is the raft leader, or an error when they do not agree or none answers.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	ids, leaders := c.statuses(ctx)
	var leader uint64
	for i, l := range leaders {
		switch {
		case ids[i] == 0:
			continue
		case l == 0:
			return nil, fmt.Errorf("%s has no leader", c.Members[i].Name)
		case leader != 0 && l != leader:
			return nil, fmt.Errorf("members disagree on the leader: %x and %x", leader, l)
		}
		leader = l
	}
	for i, id := range ids {
		if id != 0 && id == leader {
			return c.Members[i], nil
		}
	}
	return nil, errors.New("no member answering is the leader")
}

// WaitHealthy waits until every member answers and all agree on one
// leader, or ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for {
		ids, leaders := c.statuses(ctx)
		err := error(nil)
		for i := range ids {
			switch {
			case ids[i] == 0:
				err = fmt.Errorf("%s does not answer", c.Members[i].Name)
			case leaders[i] == 0 || leaders[i] != leaders[0]:
				err = fmt.Errorf("members disagree on the leader: %x", leaders)
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// statuses asks every member for its id and its leader's, each within a
// second (0 for a member that does not answer).
func (c *Cluster) statuses(ctx context.Context) (ids, leaders []uint64) {
	ids, leaders = make([]uint64, len(c.Members)), make([]uint64, len(c.Members))
	var wg sync.WaitGroup
	for i, m := range c.Members {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if resp, err := m.status.Status(sctx, m.ClientURL); err == nil {
				ids[i], leaders[i] = resp.Header.MemberId, resp.Leader
			}
		})
	}
	wg.Wait()
	return ids, leaders
}
