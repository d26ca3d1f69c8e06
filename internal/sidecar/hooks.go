package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// hookEnv is the context a begin, end or error command gets in its
// environment.
type hookEnv struct {
	election  string // ELECTOR_ELECTION
	candidate string // ELECTOR_CANDIDATE: this sidecar's candidate id
	term      uint64 // ELECTOR_TERM: the fencing token of the leadership; empty when 0
	leader    string // ELECTOR_LEADER: the current leader's id, if known
	reason    string // ELECTOR_REASON: why the command runs
}

// environ returns the process's environment with e's variables set.
func (e hookEnv) environ() []string {
	term := ""
	if e.term > 0 {
		term = strconv.FormatUint(e.term, 10)
	}
	return append(os.Environ(),
		"ELECTOR_ELECTION="+e.election,
		"ELECTOR_CANDIDATE="+e.candidate,
		"ELECTOR_TERM="+term,
		"ELECTOR_LEADER="+e.leader,
		"ELECTOR_REASON="+e.reason,
	)
}

// hooks runs the sidecar's shell commands.
type hooks struct {
	begin, end, onError string
	timeout             time.Duration // 0: no limit
	stdout, stderr      io.Writer
}

// run runs the shell command line with env and waits for it. An empty line
// succeeds at once. The command runs in its own process group, which is
// killed when timeout passes; it is not cut short when the sidecar is
// shutting down (an end command must finish), but it dies with a sidecar
// killed by SIGKILL (Linux). Errors name the command's exit status, never
// its environment.
func (h *hooks) run(name, line string, env hookEnv) error {
	if line == "" {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = env.environ()
	cmd.Stdout, cmd.Stderr = h.stdout, h.stderr
	cmd.SysProcAttr = ownGroup(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s command: %w", name, err)
	}
	var timedOut atomic.Bool
	if h.timeout > 0 {
		t := time.AfterFunc(h.timeout, func() {
			timedOut.Store(true)
			killGroup(cmd.Process.Pid, syscall.SIGKILL)
		})
		defer t.Stop()
	}
	err := cmd.Wait()
	if timedOut.Load() {
		return fmt.Errorf("%s command: killed after the command timeout of %s", name, h.timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s command: %s", name, ee.ProcessState)
	}
	if err != nil {
		return fmt.Errorf("%s command: %w", name, err)
	}
	return nil
}

// runEnd runs the end command, retrying a failure every interval up to
// retries more times. It returns the last error when the attempts run out.
func (h *hooks) runEnd(ctx context.Context, env hookEnv, retries int, interval time.Duration, onFail func(attempt int, err error)) error {
	for attempt := 1; ; attempt++ {
		err := h.run("end", h.end, env)
		if err == nil {
			return nil
		}
		onFail(attempt, err)
		if attempt > retries {
			return err
		}
		// Retries go on through a shutdown: the end command is what stops
		// this host acting as leader.
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-context.WithoutCancel(ctx).Done():
		}
	}
}
