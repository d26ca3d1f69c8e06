package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/proc"
	"github.com/electorhq/elector/internal/servertest"
)

// readPid reads a pid a command wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// pidsWritten reports whether the command of supervised has written both
// pids into dir (the shell creates each file before it writes the pid).
func pidsWritten(dir string) bool {
	for _, f := range []string{"/grandchild", "/child"} {
		b, err := os.ReadFile(dir + f)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
	}
	return true
}

// supervised is a command for `-- CMD ARGS` that starts a grandchild and
// writes both pids into dir.
func supervised(dir string) []string {
	return []string{"/bin/sh", "-c", `sleep 300 & echo $! > ` + dir + `/grandchild; echo $$ > ` + dir + `/child; wait`}
}

func TestSidecarProcessEndsStopsChildAndResignsOnSIGTERM(t *testing.T) {
	g := newTestGateway(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	args := append([]string{"run", "--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "1s", "--child-grace", "2s"}, hookArgs(log)...)
	cmd, out := startProcess(t, append(append(args, "--"), supervised(dir)...)...)
	eventually.True(t, 10*time.Second, "the supervised command", func() bool { return pidsWritten(dir) })
	child, grandchild := readPid(t, dir+"/child"), readPid(t, dir+"/grandchild")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("elector run: %v, want exit status 0; output:\n%s", err, out)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned"}) {
		t.Fatalf("commands ran: %q; output:\n%s", got, out)
	}
	// elector run waited for the guard, which waited for the child only:
	// the grandchild was signalled, but may not have run to its exit yet.
	for name, pid := range map[string]int{"child": child, "grandchild": grandchild} {
		eventually.True(t, 10*time.Second, "the supervised command's "+name+" (pid "+strconv.Itoa(pid)+") to exit with the sidecar",
			func() bool { return !proc.Alive(pid) })
	}
	if _, err := g.c.Leader(context.Background(), "e"); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("leader after SIGTERM: %v, want ErrNoLeader (resigned)", err)
	}
}

func TestSidecarKilledLeaderIsReplacedAfterTheTTLAndItsChildDies(t *testing.T) {
	g := newTestGateway(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	logA, logB := filepath.Join(dirA, "log"), filepath.Join(dirB, "log")
	start := func(id, dir, log string) (*servertest.SyncBuffer, func() error) {
		args := append([]string{"run", "--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", "1s"}, hookArgs(log)...)
		cmd, out := startProcess(t, append(append(args, "--"), supervised(dir)...)...)
		return out, func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	}
	outA, killA := start("a", dirA, logA)
	eventually.True(t, 10*time.Second, "a's supervised command", func() bool { return pidsWritten(dirA) })
	outB, _ := start("b", dirB, logB)
	eventually.True(t, 5*time.Second, "b in line", func() bool {
		cs, err := g.c.Candidates(context.Background(), "e")
		return err == nil && len(cs.Candidates) == 2
	})
	child, grandchild := readPid(t, dirA+"/child"), readPid(t, dirA+"/grandchild")

	killed := time.Now()
	if err := killA(); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "b's begin command", func() bool { return slices.Contains(readLines(logB), "begin b 2 elected") })
	if took := time.Since(killed); took < 500*time.Millisecond {
		t.Errorf("b began %s after the kill, before a's TTL could run out", took)
	}
	eventually.True(t, 5*time.Second, "b's supervised command", func() bool { _, err := os.Stat(dirB + "/child"); return err == nil })
	eventually.True(t, 5*time.Second, "a's supervised command and its child to die", func() bool { return !proc.Alive(child) && !proc.Alive(grandchild) })
	if got := readLines(logA); !slices.Equal(got, []string{"begin a 1 elected"}) {
		t.Errorf("a's commands: %q (a SIGKILLed sidecar runs no end command); output:\n%s", got, outA)
	}
	_ = outB
}
