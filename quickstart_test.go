//go:build unix

package elector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/proc"
)

// TestREADMEQuickstart runs the README's quick start with the binary its
// first block installs: `elector serve` (on a free port, in an empty
// directory) says where /docs and /ui are, the second block's candidate
// leads and its stream shows it, /ui answers, and stopping the candidate
// resigns it.
func TestREADMEQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	serveBlock := strings.Split(strings.TrimSpace(readmeBlock(t, "quickstart-serve")), "\n")
	if len(serveBlock) != 2 || !strings.HasPrefix(serveBlock[0], "go install ./cmd/elector ") || !strings.HasPrefix(serveBlock[1], "elector serve ") {
		t.Fatalf("the quick start's first block is %q; want go install ./cmd/elector, then elector serve", serveBlock)
	}
	bin, dir := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ELECTOR_LISTEN=127.0.0.1:0", "ELECTOR_GATEWAY=", "ELECTOR_API_TOKEN=")
	install := exec.Command("bash", "-euo", "pipefail", "-c", serveBlock[0])
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", serveBlock[0], err, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := exec.CommandContext(ctx, "bash", "-c", "exec "+serveBlock[1])
	serve.Dir, serve.Env = dir, env
	serveLog := &output{}
	serve.Stderr = serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() })
	serveLog.waitFor(t, `msg="elector started"`)
	started := regexp.MustCompile(`msg="elector started" listen=(127\.0\.0\.1:\d+) backend=embedded version=\S+.* docs=(\S+) ui=(\S+)`).FindStringSubmatch(serveLog.String())
	if started == nil || started[2] != "http://"+started[1]+"/docs" || started[3] != "http://"+started[1]+"/ui" {
		t.Fatalf("serve's start line is not the README's:\n%s", serveLog)
	}
	base := "http://" + started[1]

	use := exec.Command("bash", "-euo", "pipefail", "-c", readmeBlock(t, "quickstart-use"))
	use.Dir = dir
	use.Env = append(env, "ELECTOR_GATEWAY="+base)
	use.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the candidate runs in the background
	stream := &output{}
	use.Stdout, use.Stderr = stream, stream
	if err := use.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-use.Process.Pid, syscall.SIGTERM)
			_ = use.Wait()
			// bash exits on SIGTERM at once; its children, `elector
			// run` resigning on its way out among them, may not have.
			eventually.NoError(t, 30*time.Second, "the quick start's processes to exit", func() error {
				if n := proc.LiveInGroup(use.Process.Pid); n > 0 {
					return fmt.Errorf("%d processes of the group still run", n)
				}
				return nil
			})
		}
	}
	defer stop()
	// The stream may show node-a joining before its leadership begins,
	// an event of its own: wait for the leadership, whichever line (the
	// reset's, if it came after, or leader.begin) shows it.
	leads := func(s string) bool {
		return strings.Contains(s, "leader.begin     election=billing term=1 candidate=node-a") || strings.Contains(s, "leader=node-a (term 1)")
	}
	eventually.NoError(t, 30*time.Second, "the stream to show node-a's leadership", func() error {
		if s := stream.String(); !leads(s) {
			return fmt.Errorf("the stream shows no leadership of node-a yet:\n%s", s)
		}
		return nil
	})
	if s := stream.String(); !strings.Contains(s, " reset ") {
		t.Fatalf("the stream shows no reset:\n%s", s)
	}
	res, err := http.Get(started[3])
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v", started[3], res, err)
	}
	res.Body.Close()
	// Stopping the candidate resigns it: once it has exited, it is gone
	// (well before its TTL would have expired it).
	stop()
	res, err = http.Get(base + "/v1/elections/billing/candidates")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var list struct{ Candidates []struct{ ID string } }
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil || len(list.Candidates) != 0 {
		t.Fatalf("candidates after node-a stopped: %+v, %v; want none (it resigns)", list, err)
	}
}
