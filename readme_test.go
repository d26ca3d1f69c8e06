package elector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
)

// walkthroughBlocks returns the shell blocks of README.md that follow a
// `<!-- walkthrough: NAME -->` marker, by name.
func walkthroughBlocks(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- walkthrough: ([a-z]+) -->\n```sh\n(.*?)```")
	blocks := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		blocks[m[1]] = m[2]
	}
	for _, name := range []string{"campaign", "events", "handover"} {
		if blocks[name] == "" {
			t.Fatalf("README.md has no walkthrough block %q", name)
		}
	}
	return blocks
}

// TestREADMEWalkthrough runs the README's curl walkthrough, as written,
// against a real gateway on loopback.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed by the README walkthrough and CI must install it", tool)
			}
			t.Skipf("%s not installed; the README walkthrough needs bash, curl and jq", tool)
		}
	}
	blocks := walkthroughBlocks(t)

	ctx, cancel := context.WithCancel(context.Background())
	// The backend `elector serve` uses by default: embedded NATS.
	b, err := nats.OpenEmbedded(ctx, nats.EmbeddedConfig{DataDir: t.TempDir()}, nats.Config{}, nats.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	gw := gateway.New(b, gateway.Config{Logger: quiet})
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	srv := httptest.NewServer(api.New(gw, api.Config{Logger: quiet, KeepAlive: time.Second}))
	// Cleanups run last-registered first: the event stream's curl (below)
	// ends before the server closes, which waits for open requests.
	t.Cleanup(func() { srv.Close(); cancel(); <-done; _ = b.Close() })
	local := func(script string) string { return strings.ReplaceAll(script, "http://127.0.0.1:8080", srv.URL) }

	state := filepath.Join(t.TempDir(), "tokens")
	out := runBash(t, local(blocks["campaign"])+"\ndeclare -p A B > "+state+"\n")
	var leader struct {
		ID   string `json:"id"`
		Term uint64 `json:"term"`
	}
	if err := json.Unmarshal([]byte(out), &leader); err != nil || leader.ID != "node-a" || leader.Term == 0 {
		t.Fatalf("campaign block printed %q; want node-a leading with a term", out)
	}

	events := startBash(t, ctx, local(blocks["events"]))
	events.waitFor(t, "event: reset")

	out = runBash(t, "source "+state+"\n"+local(blocks["handover"]))
	want := []string{
		`"state": "follower"`, `"position": 1`, `"leader": "node-a"`, // node-b's heartbeat
		`"id": "node-b"`, // the new leader
		`{"id":"node-b","state":"leader"}`,
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("handover block printed:\n%s\nwant it to contain %s", out, w)
		}
	}
	if strings.Contains(out, `"id":"node-a"`) {
		t.Fatalf("node-a still listed after resigning:\n%s", out)
	}
	events.waitFor(t, `"reason":"resigned"`)
	events.waitFor(t, "event: leader.begin\ndata: {\"type\":\"leader.begin\"")
	if got := events.String(); !strings.Contains(got, `"candidate":{"id":"node-b"}`) {
		t.Fatalf("event stream:\n%s\nwant node-b's leader.begin", got)
	}
}

func runBash(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script failed: %v\n%s\nstderr: %s\nscript:\n%s", err, out, stderr.String(), script)
	}
	return string(out)
}

// output is the growing stdout of a background command.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *output) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(o.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q:\n%s", s, o.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startBash(t *testing.T, ctx context.Context, script string) *output {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	o := &output{}
	cmd.Stdout = o
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return o
}
