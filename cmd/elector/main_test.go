package main

import (
	"context"
	"os"
	"testing"

	"github.com/electorhq/elector/internal/sidecar"
)

// TestMain lets the test binary stand in for elector as the guard of a
// supervised command: the sidecar starts os.Executable() as
// `elector __guard`, which in tests is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sidecar.GuardCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if dir := builtDir.Load(); dir != nil {
		_ = os.RemoveAll(*dir)
	}
	os.Exit(code)
}
