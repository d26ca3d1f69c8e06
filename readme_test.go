package elector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/server"
)

// walkthroughBlock is a shell block of README.md that follows a
// `<!-- walkthrough: NAME -->` marker, and the text block after it, if
// any: what the shell block prints.
type walkthroughBlock struct{ script, prints string }

// walkthroughBlocks returns the walkthrough blocks of README.md by name.
func walkthroughBlocks(t *testing.T) map[string]walkthroughBlock {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- walkthrough: ([a-z]+) -->\n```sh\n(.*?)```\n(?:\n```text\n(.*?)```)?")
	blocks := map[string]walkthroughBlock{}
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		blocks[m[1]] = walkthroughBlock{script: m[2], prints: m[3]}
	}
	for _, name := range []string{"campaign", "events", "handover"} {
		if blocks[name].script == "" || blocks[name].prints == "" {
			t.Fatalf("README.md has no walkthrough block %q with what it prints", name)
		}
	}
	return blocks
}

// TestREADMEWalkthrough runs the README's curl walkthrough, as written,
// against a real gateway on loopback, and compares what it prints with
// the outputs the README shows. It runs it twice, as a reader who pastes
// it again would: the second time prints the same with the next terms.
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
	t.Cleanup(cancel)
	srv := servertest.Start(t, servertest.Embedded(), servertest.Configure(func(c *server.Config) { c.API.KeepAlive = time.Second }))
	local := func(script string) string { return strings.ReplaceAll(script, "http://127.0.0.1:8080", srv.URL) }

	state := filepath.Join(t.TempDir(), "tokens")
	// later turns the README's terms into those of the second round.
	later := strings.NewReplacer(`"term":1`, `"term":3`, `"term":2`, `"term":4`)
	for round := range 2 {
		want := func(block string) string {
			if round == 0 {
				return blocks[block].prints
			}
			return later.Replace(blocks[block].prints)
		}
		out := runBash(t, local(blocks["campaign"].script)+"\ndeclare -p A B > "+state+"\n")
		if out != want("campaign") {
			t.Fatalf("round %d: the campaign block printed\n%s\nwant\n%s", round, out, want("campaign"))
		}
		events := startBash(t, ctx, local(blocks["events"].script))
		events.waitFor(t, "event: reset")
		if round == 0 {
			// The stream opens as the README shows, with what it elides.
			shown := regexp.MustCompile(`(?s)"timestamp":"[^"]*"|"settings":\{[^}]*\}|,"(metadata|since|expires_at)":.*?\]`).ReplaceAllStringFunc(events.String(), func(m string) string {
				switch {
				case strings.HasPrefix(m, `"timestamp"`):
					return `"timestamp":"…"`
				case strings.HasPrefix(m, `"settings"`):
					return `"settings":{…}`
				}
				return ",…},\"candidates\":[…]"
			})
			if first := strings.SplitN(shown, "\n\n", 3); len(first) < 2 || first[0]+"\n\n"+first[1]+"\n" != strings.TrimSuffix(want("events"), "\n")+"\n" {
				t.Fatalf("the event stream opened with\n%s\nwant\n%s", shown, want("events"))
			}
		}
		out = runBash(t, "source "+state+"\n"+local(blocks["handover"].script))
		if out != want("handover") {
			t.Fatalf("round %d: the handover block printed\n%s\nwant\n%s", round, out, want("handover"))
		}
		events.waitFor(t, `"reason":"resigned"`)
		events.waitFor(t, "event: leader.begin\ndata: {\"type\":\"leader.begin\"")
		if got := events.String(); !strings.Contains(got, `"candidate":{"id":"node-b"}`) {
			t.Fatalf("event stream:\n%s\nwant node-b's leader.begin", got)
		}
	}
	// A refused campaign is not silent: jq says what the gateway answered.
	script := local(blocks["campaign"].script)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script+script)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `candidate "node-a" is already campaigning`) {
		t.Fatalf("the campaign block pasted twice without resigning: %v\n%s\nwant it to fail saying node-a is already campaigning", err, out)
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
	// A bound for a process that starts on a busy machine, not a timing.
	eventually.NoError(t, 30*time.Second, fmt.Sprintf("the output to contain %q", s), func() error {
		if out := o.String(); !strings.Contains(out, s) {
			return fmt.Errorf("the output so far:\n%s", out)
		}
		return nil
	})
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
