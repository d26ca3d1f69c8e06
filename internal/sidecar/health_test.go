package sidecar

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
	"github.com/electorhq/elector/internal/servertest"
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
	ca := candidate(g.srv.URL, "a", ttl, log)
	ca.HealthCommand = healthFile(ok)
	a := start(t, ca)
	logsA := a.logs
	eventually.True(t, 10*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	b := start(t, candidate(g.srv.URL, "b", ttl, log))
	eventually.True(t, 10*time.Second, "b in line", func() bool { return len(lineOf(t, g)) == 2 })

	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	broke := time.Now()
	var seen []string
	var failed client.Event
	for len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], client.EventLeaderBegin+" b") {
		ev := servertest.NextLeaderEvent(t, events)
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
	for name, r := range map[string]*running{"a": a, "b": b} {
		if err := r.stop(); err != nil {
			t.Errorf("%s's Run: %v; logs:\n%s", name, err, r.logs)
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
	a := start(t, candidate(g.srv.URL, "a", 3*time.Second, log))
	eventually.True(t, 10*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	cb := candidate(g.srv.URL, "b", 3*time.Second, log)
	cb.HealthURL, cb.HealthFailures = app.URL+"/healthz", 2
	b := start(t, cb)
	logsB := b.logs
	status := serveStatus(t, b)
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
	if err := a.stop(); err != nil {
		t.Fatalf("a's Run: %v", err)
	}
	if _, err := g.c.Leader(context.Background(), "e"); err == nil {
		t.Fatal("someone leads; b must not while its check fails")
	}
	sick.Store(false)
	eventually.True(t, 10*time.Second, "b's begin once healthy", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of b:\n%s", got, logsB)
	}
	if err := b.stop(); err != nil {
		t.Fatalf("b's Run: %v", err)
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
	c := candidate(g.srv.URL, "a", 3*time.Second, log)
	c.HealthCommand, c.HealthTimeout, c.HealthFailures, c.ErrorTimeout = check, 200*time.Millisecond, 2, time.Hour
	a := start(t, c)
	logs := a.logs
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
	if err := a.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
