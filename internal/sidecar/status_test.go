package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

// serveStatus serves r's status on a free loopback port until the test
// ends and returns its base URL, as the log line names it.
func serveStatus(t *testing.T, r *running) string {
	t.Helper()
	stop, err := r.ServeStatus(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	m := regexp.MustCompile(`status server listening" addr=(\S+)`).FindStringSubmatch(r.logs.String())
	if m == nil {
		t.Fatalf("no address in the logs:\n%s", r.logs)
	}
	return "http://" + m[1]
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// leaderOf reads GET /leader.
func leaderOf(t *testing.T, base string) LeaderView {
	t.Helper()
	code, body := get(t, base+"/leader")
	var v LeaderView
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil {
		t.Fatalf("GET /leader: %d %q (%v)", code, body, err)
	}
	return v
}

func TestSidecarStatusServesHealthLeaderAndMetrics(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	ra := start(t, candidate(g.srv.URL, "a", 3*time.Second, log))
	a := serveStatus(t, ra)
	eventually.True(t, 5*time.Second, "a leads", func() bool { return leaderOf(t, a).Leading })
	b := serveStatus(t, start(t, candidate(g.srv.URL, "b", 3*time.Second, "")))

	if v := leaderOf(t, a); v.Term != 1 || v.Leader != "a" || v.Since.IsZero() || v.Election != "e" || v.Candidate != "a" {
		t.Errorf("a's /leader: %+v", v)
	}
	eventually.True(t, 5*time.Second, "b hears of a", func() bool { return leaderOf(t, b).Leader == "a" })
	if v := leaderOf(t, b); v.Leading || !v.Since.IsZero() {
		t.Errorf("b's /leader: %+v", v)
	}
	for _, base := range []string{a, b} {
		if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("GET %s/healthz: %d %q", base, code, body)
		}
	}
	_, metrics := get(t, a+"/metrics")
	for _, want := range []string{
		`elector_sidecar_is_leader{candidate="a",election="e"} 1`,
		`elector_sidecar_term{candidate="a",election="e"} 1`,
		`elector_sidecar_transitions_total{candidate="a",election="e",transition="begin"} 1`,
		`elector_sidecar_last_heartbeat_timestamp_seconds{candidate="a",election="e"} 1.`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("a's /metrics lacks %q:\n%s", want, metrics)
		}
	}
	_, metrics = get(t, b+"/metrics")
	if !strings.Contains(metrics, `elector_sidecar_is_leader{candidate="b",election="e"} 0`) {
		t.Errorf("b's /metrics:\n%s", metrics)
	}

	// a shuts down: b leads, and a's status says it no longer runs.
	if err := ra.stop(); err != nil {
		t.Fatalf("a's Run: %v; logs:\n%s", err, ra.logs)
	}
	eventually.True(t, 5*time.Second, "b leads", func() bool { return leaderOf(t, b).Leading })
	if code, body := get(t, a+"/healthz"); code != http.StatusServiceUnavailable || body != "not running\n" {
		t.Errorf("a's /healthz after a stopped: %d %q; want 503", code, body)
	}
}
