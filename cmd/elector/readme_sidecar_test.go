//go:build unix

package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
	"github.com/electorhq/elector/internal/testnet"
)

// readmeExample returns the shell block of README.md after the marker
// `<!-- readme: name -->` and the text block after it: what it prints.
func readmeExample(t *testing.T, name string) (script, prints string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme: " + regexp.QuoteMeta(name) + " -->\n```sh\n(.*?)```\n\n```text\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no shell block marked <!-- readme: %s --> followed by what it prints", name)
	}
	return string(m[1]), string(m[2])
}

// readmeShell runs script with bash, the built elector first on PATH and
// the test gateway as $ELECTOR_GATEWAY, in its own process group, which
// the test's cleanup kills with what the script left in the background.
func readmeShell(t *testing.T, g *testGateway, dir, script string, needs ...string) (*exec.Cmd, *servertest.SyncBuffer, *servertest.SyncBuffer) {
	t.Helper()
	for _, tool := range append([]string{"bash"}, needs...) {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed by the README block and CI must install it", tool)
			}
			t.Skipf("%s not installed; the README block needs it", tool)
		}
	}
	bin, err := builtElector()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		envGateway+"="+g.srv.URL, envAPIToken+"=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second // what the script left running holds its output open
	stdout, stderr := &servertest.SyncBuffer{}, &servertest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd, stdout, stderr
}

// freePort is a port nothing listens on at the moment, from
// testnet.FreeAddr: below the ephemeral range, so that neither an outgoing
// connection nor a ":0" listener of a test running meanwhile takes it
// before the process the test starts binds it.
func freePort(t *testing.T) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(testnet.FreeAddr(t))
	return port
}

// TestREADMEProxy runs the README's proxy block as written, with free
// ports in place of the README's, against a gateway on loopback: it
// prints what the README says.
func TestREADMEProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	script, prints := readmeExample(t, "proxy")
	var swap []string
	for _, port := range []string{"9001", "9002", "8000", "8001", "8002"} {
		if !strings.Contains(script, "127.0.0.1:"+port) {
			t.Fatalf("the proxy block no longer uses 127.0.0.1:%s; update this test:\n%s", port, script)
		}
		// The services' ports are http.server's argument too.
		free := freePort(t)
		swap = append(swap, "127.0.0.1:"+port, "127.0.0.1:"+free, " "+port+" >", " "+free+" >")
	}
	local := strings.NewReplacer(swap...).Replace(script)
	if regexp.MustCompile(`\b(9001|9002|800[012])\b`).MatchString(local) {
		t.Fatalf("a README port is left in the script:\n%s", local)
	}
	g := newTestGateway(t)
	cmd, stdout, stderr := readmeShell(t, g, t.TempDir(), local, "curl", "python3")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the proxy block failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the proxy block did not finish; stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if got := stdout.String(); got != prints {
		t.Fatalf("the proxy block printed\n%s\nwant\n%s\nstderr:\n%s", got, prints, stderr)
	}
}

// TestREADMEHealth runs the README's health block, with a file of its
// own in place of /tmp/billing-ok: the candidate leads once the check
// passes, stops when the file goes (the leader.error event carries the
// check's output) and leads again when it comes back, printing what the
// README says.
func TestREADMEHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the elector binary")
	}
	script, prints := readmeExample(t, "health")
	if !strings.Contains(script, "/tmp/billing-ok") {
		t.Fatalf("the health block no longer uses /tmp/billing-ok; update this test:\n%s", script)
	}
	dir := t.TempDir()
	ok := filepath.Join(dir, "billing-ok")
	g := newTestGateway(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := g.c.Watch(ctx, "billing", "")
	if err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr := readmeShell(t, g, dir, strings.ReplaceAll(script, "/tmp/billing-ok", ok))
	lines := strings.SplitAfter(prints, "\n")
	eventually.True(t, 20*time.Second, "the first leadership", func() bool { return stdout.String() == lines[0] })
	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	var failed client.Event
	for failed.Type != client.EventLeaderError {
		failed = servertest.NextLeaderEvent(t, events)
	}
	if want := "health check failed 3 times in a row: exit status 1: " + ok + " is gone"; failed.Data.Detail != want {
		t.Fatalf("leader.error detail %q; want %q", failed.Data.Detail, want)
	}
	eventually.True(t, 20*time.Second, "the end of the leadership", func() bool { return stdout.String() == lines[0]+lines[1] })
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 20*time.Second, "the second leadership", func() bool { return stdout.String() == prints })
	if s := stderr.String(); s != "" {
		t.Errorf("stderr: %s", s)
	}
}
