package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process that can be started again after it ended.
// Set its fields before the first Start; its methods are safe for
// concurrent use.
type Process struct {
	Bin  string
	Args []string
	// Dir is the working directory, which holds the log (LogName).
	Dir string
	// LogName is the file in Dir that every start appends the process's
	// standard output and error to.
	LogName string
	// EnvPrefix names the settings of the test's environment the process
	// must not see (ETCD_, ELECTOR_): only its flags configure it.
	EnvPrefix string
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	StopTimeout time.Duration

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts the process. It fails if the process is running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("proc: %s is running", filepath.Base(p.Bin))
	}
	log, err := os.OpenFile(filepath.Join(p.Dir, p.LogName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close() // the process holds its own descriptor
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = filterEnv(os.Environ(), p.EnvPrefix)
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	return nil
}

// filterEnv drops the variables of env whose names start with prefix.
func filterEnv(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if prefix == "" || !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// Running reports whether the process was started and has not been
// killed or stopped since.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Signal sends sig to the process, if it runs.
func (p *Process) Signal(sig os.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Pause stops the process with SIGSTOP: it keeps its connections and
// answers nothing, as a frozen machine does.
func (p *Process) Pause() { p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() { p.Signal(syscall.SIGCONT) }

// Kill kills the process with SIGKILL and waits for it.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// Stop ends the process with SIGTERM (after SIGCONT, in case it was
// paused), or SIGKILL if it takes more than StopTimeout.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.StopTimeout):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// Log returns what the process wrote, restarts included.
func (p *Process) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, p.LogName))
	return string(bytes.TrimSpace(b))
}
