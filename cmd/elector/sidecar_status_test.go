package main

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
	"github.com/electorhq/elector/internal/sidecar"
)

// statusAddr waits for the status server's address in logs.
func statusAddr(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	re := regexp.MustCompile(`status server listening" addr=(\S+)`)
	var addr string
	defer func() {
		if addr == "" {
			t.Logf("logs:\n%s", logs)
		}
	}()
	eventually.True(t, 5*time.Second, "the status server", func() bool {
		m := re.FindStringSubmatch(logs.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return "http://" + addr
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
func leaderOf(t *testing.T, base string) sidecar.LeaderView {
	t.Helper()
	code, body := get(t, base+"/leader")
	var v sidecar.LeaderView
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil {
		t.Fatalf("GET /leader: %d %q (%v)", code, body, err)
	}
	return v
}

func TestSidecarStatusServesHealthLeaderAndMetrics(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	logsA, stopA := inProcess(t, append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "3s", "--status-listen", "127.0.0.1:0"}, hookArgs(log)...)...)
	a := statusAddr(t, logsA)
	eventually.True(t, 5*time.Second, "a leads", func() bool { return leaderOf(t, a).Leading })
	logsB, _ := inProcess(t, "--gateway", g.srv.URL, "--election", "e", "--id", "b", "--ttl", "3s", "--status-listen", "127.0.0.1:0")
	b := statusAddr(t, logsB)

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

	// a shuts down: b leads, and a's status server is gone.
	if code := stopA(); code != 0 {
		t.Fatalf("a's exit code %d; logs:\n%s", code, logsA)
	}
	eventually.True(t, 5*time.Second, "b leads", func() bool { return leaderOf(t, b).Leading })
	if _, err := http.Get(a + "/healthz"); err == nil {
		t.Error("a's status server still answers after a stopped")
	}
}

func TestSidecarStatusListenOnATakenAddressFails(t *testing.T) {
	g := newTestGateway(t)
	logs, stop := inProcess(t, "--gateway", g.srv.URL, "--election", "e", "--id", "a", "--status-listen", "127.0.0.1:0")
	taken := strings.TrimPrefix(statusAddr(t, logs), "http://")
	var stderr strings.Builder
	code := runSidecar(context.Background(), []string{"--gateway", g.srv.URL, "--election", "e", "--id", "b", "--status-listen", taken},
		strings.NewReader(""), io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--status-listen") {
		t.Fatalf("exit code %d, stderr %q; want 1 naming --status-listen", code, stderr.String())
	}
	stop()
}

func TestSidecarBacksOffWhileTheGatewayIsUnreachable(t *testing.T) {
	g := newTestGateway(t)
	g.blocked.Store(true)
	logs, stop := inProcess(t, "--gateway", g.proxy.URL, "--election", "e", "--id", "a", "--ttl", "1s", "--log-level", "debug")
	eventually.True(t, 10*time.Second, "five failed campaigns", func() bool { return strings.Contains(logs.String(), "failures=5") })
	warnings := 0
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "campaign failed") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings for five failed campaigns, want 1; logs:\n%s", warnings, logs)
	}
	// The waits grow: each retry_in of the series is logged.
	re := regexp.MustCompile(`failures=(\d+) retry_in=(\S+)`)
	var waits []time.Duration
	for _, m := range re.FindAllStringSubmatch(logs.String(), 5) {
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, d)
	}
	if len(waits) < 5 || waits[4] <= waits[0] {
		t.Errorf("retry waits %v do not grow", waits)
	}
	// Once the gateway answers, it campaigns and leads.
	g.blocked.Store(false)
	eventually.True(t, 20*time.Second, "leadership", func() bool {
		l, err := g.c.Leader(context.Background(), "e")
		return err == nil && l.ID == "a"
	})
	// The campaign's answer is logged after the gateway has made a leader.
	eventually.True(t, 5*time.Second, "the logs to say the gateway answers again", func() bool {
		return strings.Contains(logs.String(), "the gateway answers again")
	})
	stop()
}

func TestRunHelpShowsOneDefaultForID(t *testing.T) {
	var stderr strings.Builder
	if code := runSidecar(context.Background(), []string{"--help"}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		if strings.Contains(line, "--id ") {
			if n := strings.Count(line, "default"); n != 1 {
				t.Fatalf("--id shows %d defaults: %q", n, line)
			}
			return
		}
	}
	t.Fatalf("no --id in the help:\n%s", stderr.String())
}
