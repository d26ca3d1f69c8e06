package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
)

// healthFile is a health command that passes while path exists and
// otherwise says why it fails, as an application's check would.
func healthFile(path string) string {
	return `test -e ` + path + ` || { echo "db unreachable:"; echo "  connection refused" >&2; exit 1; }`
}

// lineOf is the ids of the candidates in line, with their states.
func lineOf(t *testing.T, g *testGateway) []string {
	t.Helper()
	cs, err := g.c.Candidates(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs.Candidates {
		out = append(out, c.ID+" "+string(c.State))
	}
	return out
}

func TestSidecarFailingHealthCheckHandsLeadershipToTheNextCandidate(t *testing.T) {
	g := newTestGateway(t)
	dir := t.TempDir()
	log, ok := filepath.Join(dir, "log"), filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := g.c.Watch(ctx, "e", "")
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 3 * time.Second // checks every second
	args := func(id string, more ...string) []string {
		return append(append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", ttl.String()}, hookArgs(log)...), more...)
	}
	logsA, stopA := inProcess(t, args("a", "--health-command", healthFile(ok))...)
	eventually.True(t, 10*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	logsB, stopB := inProcess(t, args("b")...)
	eventually.True(t, 10*time.Second, "b in line", func() bool { return len(lineOf(t, g)) == 2 })

	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	broke := time.Now()
	var seen []string
	var failed client.Event
	for len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], client.EventLeaderBegin+" b") {
		ev := nextEvent(t, events)
		if ev.Type == client.EventLeaderError {
			failed = ev
		}
		seen = append(seen, fmt.Sprintf("%s %s %d %s", ev.Type, ev.Data.Candidate.ID, ev.Data.Term, ev.Data.Reason))
	}
	t.Logf("b began %s after a's application broke, with a TTL of %s (checks a second apart, 3 failures; not asserted)",
		time.Since(broke).Round(time.Millisecond), ttl)
	if want := []string{"leader.begin a 1 ", "leader.error a 1 ", "leader.end a 1 error", "leader.begin b 2 error"}; !slices.Equal(seen, want) {
		t.Fatalf("events %q; want %q; logs of a:\n%s", seen, want, logsA)
	}
	if want := "health check failed 3 times in a row: exit status 1: db unreachable: connection refused"; failed.Data.Detail != want {
		t.Fatalf("leader.error says %q; want %q", failed.Data.Detail, want)
	}
	eventually.True(t, 10*time.Second, "a's error command and b's begin command", func() bool {
		return slices.Contains(readLines(log), "error a 1 error") && slices.Contains(readLines(log), "begin b 2 elected")
	})
	lines := readLines(log)
	if got := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.Fields(l)[1] != "a" }); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 error", "error a 1 error"}) {
		t.Fatalf("a's commands: %q; logs:\n%s", got, logsA)
	}
	if slices.Index(lines, "end a 1 error") > slices.Index(lines, "begin b 2 elected") {
		t.Fatalf("b began before a's end command ran: %q", lines)
	}
	// Unhealthy, a has left the line; healthy again, it is back behind b.
	eventually.True(t, 10*time.Second, "a out of line", func() bool { return slices.Equal(lineOf(t, g), []string{"b leader"}) })
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "a back in line", func() bool { return slices.Equal(lineOf(t, g), []string{"b leader", "a follower"}) })
	if !strings.Contains(logsA.String(), "health check failing: leaving the line") || !strings.Contains(logsA.String(), "health check passes: campaigning") {
		t.Errorf("a's logs do not say what it did:\n%s", logsA)
	}
	for name, stop := range map[string]func() int{"a": stopA, "b": stopB} {
		if code := stop(); code != 0 {
			t.Errorf("%s exit code %d; logs of b:\n%s", name, code, logsB)
		}
	}
}

func TestSidecarFollowerWithFailingHealthCheckLeavesTheLineAndComesBack(t *testing.T) {
	g := newTestGateway(t)
	// The application's HTTP health endpoint, failing on demand.
	var sick atomic.Bool
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sick.Load() {
			http.Error(w, "queue backlog too long", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer app.Close()
	log := filepath.Join(t.TempDir(), "log")
	args := func(id string, more ...string) []string {
		return append(append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", "3s"}, hookArgs(log)...), more...)
	}
	_, stopA := inProcess(t, args("a")...)
	eventually.True(t, 10*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	logsB, stopB := inProcess(t, args("b", "--health-url", app.URL+"/healthz", "--health-failures", "2", "--status-listen", "127.0.0.1:0")...)
	status := statusAddr(t, logsB)
	eventually.True(t, 10*time.Second, "b in line", func() bool { return slices.Equal(lineOf(t, g), []string{"a leader", "b follower"}) })
	if v := leaderOf(t, status); v.Healthy == nil || !*v.Healthy {
		t.Fatalf("b's /leader %+v; want healthy", v)
	}

	sick.Store(true)
	eventually.True(t, 10*time.Second, "b out of line", func() bool { return slices.Equal(lineOf(t, g), []string{"a leader"}) })
	// Out of line, the sidecar itself is well: /healthz says so, /leader
	// and the metrics say the check fails.
	if v := leaderOf(t, status); v.Healthy == nil || *v.Healthy || v.Leading {
		t.Fatalf("b's /leader %+v; want unhealthy", v)
	}
	if code, _ := get(t, status+"/healthz"); code != http.StatusOK {
		t.Fatalf("b's /healthz %d while it waits for its application", code)
	}
	if _, m := get(t, status+"/metrics"); !strings.Contains(m, `elector_sidecar_healthy{candidate="b",election="e"} 0`) {
		t.Fatalf("metrics:\n%s", m)
	}
	if !strings.Contains(logsB.String(), "health check failed 2 times in a row: GET "+app.URL+"/healthz: 503 Service Unavailable: queue backlog too long") {
		t.Errorf("b's logs do not give the check's answer:\n%s", logsB)
	}
	// a leaves while b is out: nobody leads, b does not.
	if code := stopA(); code != 0 {
		t.Fatalf("a exit code %d", code)
	}
	if _, err := g.c.Leader(context.Background(), "e"); err == nil {
		t.Fatal("someone leads; b must not while its check fails")
	}
	sick.Store(false)
	eventually.True(t, 10*time.Second, "b's begin once healthy", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of b:\n%s", got, logsB)
	}
	if code := stopB(); code != 0 {
		t.Fatalf("b exit code %d", code)
	}
}

// TestSidecarHungHealthCheckCountsAsFailing: a check that never returns
// fails at its timeout; it holds up neither the heartbeats nor the end of
// the leadership.
func TestSidecarHungHealthCheckCountsAsFailing(t *testing.T) {
	g := newTestGateway(t)
	dir := t.TempDir()
	log, hang := filepath.Join(dir, "log"), filepath.Join(dir, "hang")
	check := `if [ -e ` + hang + ` ]; then echo "checking…"; sleep 300; fi`
	logs, stop := inProcess(t, append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "3s",
		"--health-command", check, "--health-timeout", "200ms", "--health-failures", "2", "--error-timeout", "1h"}, hookArgs(log)...)...)
	eventually.True(t, 10*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the end of a's leadership", func() bool { return slices.Contains(readLines(log), "error a 1 error") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 error", "error a 1 error"}) {
		t.Fatalf("commands ran: %q", got)
	}
	if !strings.Contains(logs.String(), "health check failed 2 times in a row: timed out after 200ms: checking…") {
		t.Errorf("logs do not say the check timed out:\n%s", logs)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func TestSidecarRefusesHealthAndProxyFlagsThatCannotWork(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--health-command", "true", "--health-url", "http://127.0.0.1:1/"}, "exclude each other"},
		{[]string{"--health-command", "true", "--health-failures", "0"}, "--health-failures 0: want 1 or more"},
		{[]string{"--health-command", "true", "--ttl", "3s", "--health-timeout", "1s"}, "must be below the check interval, TTL/3 = 1s"},
		{[]string{"--health-url", "127.0.0.1:8080/healthz"}, "is not an http(s) URL"},
		{[]string{"--proxy-listen", "127.0.0.1:0"}, `this candidate may lead, but it registered no metadata, so no "addr"`},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--metadata", `{"addr":"0.0.0.0:80"}`}, "unspecified host 0.0.0.0"},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--metadata", `{"url":"http://10.0.0.7"}`, "--proxy-metadata-key", ""}, "--proxy-metadata-key must not be empty"},
		{[]string{"--proxy-listen", "127.0.0.1:0", "--console"}, "does not go with --console"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr syncBuffer
			code := runSidecar(context.Background(), append([]string{"--gateway", "127.0.0.1:1", "--election", "e", "--id", "a"}, tt.args...), strings.NewReader(""), &stderr, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}
