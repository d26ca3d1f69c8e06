package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// GuardCommand is the hidden subcommand that stands between the sidecar
// and its supervised child; see RunGuard.
const GuardCommand = "__guard"

// child is the long-running command `elector run … -- CMD ARGS` keeps
// running while it leads. It runs under a guard process (this binary, as
// `elector __guard`), which leads the process group that the command and
// its children share.
type child struct {
	argv           []string
	grace          time.Duration
	stdout, stderr io.Writer

	cmd  *exec.Cmd
	done chan struct{} // closed when the guard has exited
	err  error         // the guard's exit, once done is closed
}

// start starts the guard and, under it, the command, with env.
func (c *child) start(env hookEnv) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("child: find this executable to guard it: %w", err)
	}
	args := append([]string{GuardCommand, "--grace", c.grace.String(), "--"}, c.argv...)
	cmd := exec.Command(exe, args...)
	cmd.Env = env.environ()
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	// SIGTERM, not SIGKILL: the guard catches it and takes the whole
	// group down before it goes.
	cmd.SysProcAttr = ownGroup(syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("child: start %q: %w", c.argv[0], err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func() {
		defer close(c.done)
		c.err = cmd.Wait()
	}()
	return nil
}

// exited is closed when the child has exited; nil before start.
func (c *child) exited() <-chan struct{} { return c.done }

// pid is the guard's pid, which is also the child's process group id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the child: SIGTERM to its process group, then SIGKILL to the
// group if the guard has not exited after the grace period (and a second
// more for the guard's own SIGKILL). It returns once the guard has exited.
func (c *child) stop() {
	if c.cmd == nil {
		return
	}
	pgid := c.pid()
	select {
	case <-c.done:
	default:
		killGroup(pgid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(c.grace + time.Second):
			killGroup(pgid, syscall.SIGKILL)
			<-c.done
		}
	}
	// Whatever is left in the group (the guard is gone) goes now.
	killGroup(pgid, syscall.SIGKILL)
	c.cmd = nil
}

// describe says how the guard exited, for logs and error reports.
func (c *child) describe() string {
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ProcessState.String()
	}
	if c.err != nil {
		return c.err.Error()
	}
	return "exit status 0"
}

// RunGuard is `elector __guard --grace D -- CMD ARGS`: it runs CMD in its
// own process group (of which the guard is the leader) and waits. On
// SIGTERM or SIGINT — from the sidecar stopping the child, or from the
// kernel because the sidecar died — it sends SIGTERM to the whole group,
// waits up to the grace period for CMD to exit, then SIGKILLs the group,
// itself included. When CMD exits by itself, the rest of the group gets
// SIGTERM and the guard exits with CMD's status.
//
// Limit: processes that leave the group (setsid, setpgid, daemonizing)
// escape it, and a guard killed by SIGKILL takes nothing down with it.
func RunGuard(args []string, stderr io.Writer) int {
	grace := 10 * time.Second
	if len(args) >= 2 && args[0] == "--grace" {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "elector %s: --grace: %v\n", GuardCommand, err)
			return 2
		}
		grace, args = d, args[2:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "elector %s: no command\n", GuardCommand)
		return 2
	}
	sigs := make(chan os.Signal, 2)
	notifyStop(sigs)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "elector %s: %v\n", GuardCommand, err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pgid := processGroup()
	select {
	case err := <-done:
		killGroup(pgid, syscall.SIGTERM) // leftovers; the guard ignores it
		return exitStatus(err)
	case <-sigs:
		killGroup(pgid, syscall.SIGTERM)
		select {
		case err := <-done:
			killGroup(pgid, syscall.SIGTERM)
			return exitStatus(err)
		case <-time.After(grace):
			killGroup(pgid, syscall.SIGKILL)
			return 137
		}
	}
}

// exitStatus is the exit code of a finished command.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return 1
	}
	if err != nil {
		return 1
	}
	return 0
}
