package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/internal/testnet"
)

// envClusterGaps, set to "short", makes TestEmbeddedClusterFormsInAnyStartOrder
// start the members of every order but the README's 0s, 1s and 4s after the
// first, for a quicker run while iterating; by default every order starts
// them 0s, 5s and 20s apart.
const envClusterGaps = "ELECTOR_TEST_CLUSTER_GAPS"

// readmeClusterCommands returns the `elector serve` argument lists of the
// README's cluster block (the one after `<!-- readme: cluster -->`), in
// the README's order, with `go run ./cmd/elector` taken off.
func readmeClusterCommands(t *testing.T) [][]string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: cluster -->\n```sh\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no block marked <!-- readme: cluster -->")
	}
	var cmds [][]string
	for line := range strings.Lines(string(m[1])) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "go run ./cmd/elector ")
		if !ok || !strings.HasSuffix(rest, "&") {
			t.Fatalf("README cluster line %q is not `go run ./cmd/elector … &`", line)
		}
		cmds = append(cmds, strings.Fields(strings.TrimSuffix(rest, "&")))
	}
	if len(cmds) != 3 {
		t.Fatalf("README cluster block has %d commands; want 3", len(cmds))
	}
	return cmds
}

// clusterDir copies the configuration files the commands name into a new
// directory, at the same relative paths, with every loopback port moved to
// a free one and each data_dir under the new directory, and returns it.
func clusterDir(t *testing.T, cmds [][]string) string {
	t.Helper()
	dir := t.TempDir()
	ports := map[string]string{}
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	dataDir := regexp.MustCompile(`(?m)^(\s*data_dir:\s*)(\S+)`)
	for _, args := range cmds {
		i := slices.Index(args, "--config")
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("command %q names no --config", args)
		}
		name := args[i+1]
		b, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Fatal(err)
		}
		s := addr.ReplaceAllStringFunc(string(b), func(a string) string {
			if ports[a] == "" {
				ports[a] = testnet.FreeAddr(t)
			}
			return ports[a]
		})
		s = dataDir.ReplaceAllString(s, "${1}"+filepath.Join(dir, "$2"))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// member is one `elector serve` process of a cluster.
type member struct {
	name   string
	base   string // http://host:port, from its configuration
	cmd    *exec.Cmd
	logs   *servertest.SyncBuffer
	exited chan struct{}
}

// startMember starts the built elector with args in dir, with no ELECTOR_*
// variables from the test's environment.
func startMember(t *testing.T, dir string, args []string) *member {
	t.Helper()
	bin, err := builtElector()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, args[slices.Index(args, "--config")+1]))
	if err != nil {
		t.Fatal(err)
	}
	listen := regexp.MustCompile(`(?m)^listen:\s*(\S+)`).FindSubmatch(cfg)
	if listen == nil {
		t.Fatalf("configuration of %q has no listen", args)
	}
	m := &member{name: strings.Join(args, " "), base: "http://" + string(listen[1]), logs: &servertest.SyncBuffer{}, exited: make(chan struct{})}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ELECTOR_") {
			m.cmd.Env = append(m.cmd.Env, kv)
		}
	}
	m.cmd.Stdout, m.cmd.Stderr = m.logs, m.logs
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		<-m.exited
	})
	return m
}

// alive fails the test if m has exited.
func (m *member) alive(t *testing.T) {
	t.Helper()
	select {
	case <-m.exited:
		t.Fatalf("%s exited with %v; logs:\n%s", m.name, m.cmd.ProcessState, m.logs)
	default:
	}
}

// waitStatus waits until GET path on m answers want, and returns the body.
func (m *member) waitStatus(t *testing.T, c *http.Client, path string, want int, within time.Duration) map[string]any {
	t.Helper()
	var body map[string]any
	eventually.NoError(t, within, fmt.Sprintf("GET %s%s to answer %d", m.base, path, want), func() error {
		m.alive(t)
		body = nil
		code := 0
		if resp, err := c.Get(m.base + path); err == nil {
			code = resp.StatusCode
			_ = decodeJSON(resp, &body)
		}
		if code != want {
			return fmt.Errorf("answered %d; logs:\n%s", code, m.logs)
		}
		return nil
	})
	return body
}

// waitWaiting waits until m's /readyz answers 503 with a detail that
// contains reason (a member says why it waits once it has looked at the
// cluster), and returns the problem.
func (m *member) waitWaiting(t *testing.T, c *http.Client, reason string) map[string]any {
	t.Helper()
	var p map[string]any
	eventually.NoError(t, 15*time.Second, fmt.Sprintf("/readyz of %s to say %q", m.name, reason), func() error {
		p = m.waitStatus(t, c, "/readyz", http.StatusServiceUnavailable, 10*time.Second)
		if detail, _ := p["detail"].(string); !strings.Contains(detail, reason) {
			return fmt.Errorf("it says %v", p)
		}
		return nil
	})
	return p
}

// decodeJSON decodes resp's body into v and closes it.
func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestEmbeddedClusterFormsInAnyStartOrder starts the README's three
// `elector serve --config configs/cluster-N.yaml` processes (on free ports,
// in a temporary directory) in every order, the second 5s and the third 20s
// after the first. Every member waits for the others without exiting, and
// meanwhile answers /healthz and says in /readyz why it is not ready; once
// all three run, the cluster serves campaigns through each member and they
// agree on the leader.
func TestEmbeddedClusterFormsInAnyStartOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three-member clusters of real processes")
	}
	cmds := readmeClusterCommands(t)
	if _, err := builtElector(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	full := []time.Duration{0, 5 * time.Second, 20 * time.Second}
	quick := os.Getenv(envClusterGaps) == "short"
	short := full
	if quick {
		short = []time.Duration{0, time.Second, 4 * time.Second}
	}
	tests := []struct {
		order  []int
		starts []time.Duration
	}{
		{[]int{0, 1, 2}, full}, // the README's order
		{[]int{0, 2, 1}, short},
		{[]int{1, 0, 2}, short},
		{[]int{1, 2, 0}, short},
		{[]int{2, 0, 1}, short},
		{[]int{2, 1, 0}, short},
	}
	// With the full gaps every cluster runs at once (its members mostly
	// wait); with the short ones at most two at a time (six processes): on
	// a small CI machine more would slow each other's start down.
	slots := make(chan struct{}, len(tests))
	if quick {
		slots = make(chan struct{}, 2)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("order=%d%d%d,starts=%v", tt.order[0]+1, tt.order[1]+1, tt.order[2]+1, tt.starts), func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			dir := clusterDir(t, cmds)
			c := &http.Client{Timeout: 10 * time.Second}
			members := make([]*member, 3)
			begin := time.Now()
			for k, i := range tt.order {
				time.Sleep(time.Until(begin.Add(tt.starts[k])))
				if k == 2 {
					// Before the last member starts, the others wait: they
					// answer /healthz and say in /readyz why they are not
					// ready.
					for _, j := range tt.order[:2] {
						members[j].waitStatus(t, c, "/healthz", http.StatusOK, 10*time.Second)
						p := members[j].waitWaiting(t, c, "of the 2 other cluster members")
						if checks, _ := p["checks"].(map[string]any); checks["backend"] != "starting" {
							t.Fatalf("/readyz of %s while a member is missing: %v", members[j].name, p)
						}
						members[j].alive(t)
					}
				}
				members[i] = startMember(t, dir, cmds[i])
			}
			for _, m := range members {
				m.waitStatus(t, c, "/readyz", http.StatusOK, 90*time.Second)
			}
			t.Logf("formed %s after the first start", time.Since(begin).Round(100*time.Millisecond))

			var first uint64
			for i, m := range members {
				id := fmt.Sprintf("node-%d", i+1)
				retry(t, "campaign via "+m.name, func() (int, bool) {
					code := call(t, c, http.MethodPost, m.base+"/v1/elections/formed/candidates", `{"id":"`+id+`","ttl":"1m"}`, nil, nil)
					return code, code == http.StatusCreated || code == http.StatusConflict // 409: an earlier try got through
				})
				if i == 0 {
					l, code := leaderVia(t, c, m.base, "formed")
					if code != http.StatusOK || l.ID != "node-1" {
						t.Fatalf("leader via %s: %d %+v; want node-1", m.base, code, l)
					}
					first = l.Term
				}
			}
			// Each member's view follows the backend's watch: wait for it.
			for _, m := range members {
				eventually.True(t, 30*time.Second, "node-1 leading in term "+fmt.Sprint(first)+" with three candidates, via "+m.name, func() bool {
					l, code := leaderVia(t, c, m.base, "formed")
					var list struct{ Candidates []struct{ ID string } }
					lc := call(t, c, http.MethodGet, m.base+"/v1/elections/formed/candidates", "", nil, &list)
					return code == http.StatusOK && l.ID == "node-1" && l.Term == first && lc == http.StatusOK && len(list.Candidates) == 3
				})
			}
			for _, m := range members {
				m.alive(t)
				_ = m.cmd.Process.Signal(syscall.SIGTERM)
			}
			for _, m := range members {
				select {
				case <-m.exited:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s did not stop on SIGTERM", m.name)
				}
				if code := m.cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("%s exited %d; logs:\n%s", m.name, code, m.logs)
				}
			}
		})
	}
}

// TestServeWaitingForPeersAnswersProbesAndStopsCleanly runs one member of
// a cluster whose peers never come: it serves /healthz, says in /readyz
// what it waits for, answers API requests 503 with Retry-After, and a
// signal while it waits stops it with exit status 0.
func TestServeWaitingForPeersAnswersProbesAndStopsCleanly(t *testing.T) {
	isolate(t)
	listen := testnet.FreeAddr(t)
	logs := &servertest.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	args := []string{"serve", "--listen", listen, "--log-format", "json",
		"--embedded-data-dir", t.TempDir(), "--embedded-server-name", "lonely",
		"--embedded-cluster-listen", testnet.FreeAddr(t), "--embedded-routes", testnet.FreeAddr(t) + "," + testnet.FreeAddr(t)}
	exited := make(chan struct{})
	go func() { defer close(exited); code <- run(ctx, args, io.Discard, logs) }()
	// Registered after t.TempDir, so it runs before the directory goes.
	t.Cleanup(func() { cancel(); <-exited })
	m := &member{name: "lonely", base: "http://" + listen, logs: logs, exited: make(chan struct{})}
	c := &http.Client{Timeout: 5 * time.Second}
	m.waitStatus(t, c, "/healthz", http.StatusOK, 10*time.Second)
	m.waitWaiting(t, c, "connected to 0 of the 2 other cluster members")
	res, err := c.Get(m.base + "/v1/elections/x/leader")
	if err != nil {
		t.Fatal(err)
	}
	var prob map[string]any
	_ = decodeJSON(res, &prob)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		res.Header.Get("Content-Type") != "application/problem+json" || prob["type"] != "urn:elector:problem:backend-unavailable" {
		t.Fatalf("an API request while waiting: %d %v %v", res.StatusCode, res.Header, prob)
	}
	cancel()
	select {
	case got := <-code:
		if got != 0 {
			t.Fatalf("serve stopped while waiting exited %d; logs:\n%s", got, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop while waiting; logs:\n%s", logs)
	}
}
