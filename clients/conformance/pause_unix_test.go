//go:build unix

package conformance

import (
	"syscall"
	"testing"
)

// Pause stops the process (SIGSTOP): it holds its connections and
// answers nothing, as a frozen machine does.
func (g *gatewayProc) Pause(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	g.paused = true
}

// Resume continues a paused process (SIGCONT).
func (g *gatewayProc) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		_ = g.cmd.Process.Signal(syscall.SIGCONT)
		g.paused = false
	}
}
