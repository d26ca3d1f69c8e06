//go:build !unix

package conformance

import "testing"

// Pause skips the test: stopping a process (SIGSTOP) needs a Unix.
func (g *gatewayProc) Pause(t *testing.T) {
	t.Helper()
	t.Skip("pausing a gateway needs SIGSTOP")
}

// Resume does nothing.
func (g *gatewayProc) Resume() {}
