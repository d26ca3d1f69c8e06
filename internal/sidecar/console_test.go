package sidecar

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/servertest"
)

// runConsole runs the console sidecar c until its input ends, and returns
// its logs and commands' output with Run's error.
func runConsole(c Config) (*servertest.SyncBuffer, error) {
	out := &servertest.SyncBuffer{}
	c.Logger = slog.New(slog.NewTextHandler(out, nil))
	c.Stdout, c.Stderr = out, out
	s, err := New(c)
	if err != nil {
		return out, err
	}
	return out, s.Run(context.Background())
}

func TestConsoleModeRunsHandlersFromStdinLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	stdin := strings.NewReader("LEADER\n\n# a comment\nnotleader\nLEADER\nbogus\nERROR\nLEADER\n")
	c := candidate("", "me", 0, log)
	c.Console, c.Gateways, c.Election, c.ErrorTimeout, c.Stdin = true, nil, "", time.Hour, stdin
	out, err := runConsole(c)
	if err != nil {
		t.Fatalf("Run: %v; output:\n%s", err, out)
	}
	want := []string{
		"begin me 1 elected",
		"end me 1 lost",
		"begin me 2 elected",
		"end me 2 error",
		"error me 2 error",
		// the last LEADER falls in the error timeout and is ignored
	}
	if got := readLines(log); !slices.Equal(got, want) {
		t.Fatalf("commands ran:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	for _, msg := range []string{"unknown console line", "LEADER ignored during the error timeout"} {
		if !strings.Contains(out.String(), msg) {
			t.Errorf("output lacks %q:\n%s", msg, out)
		}
	}
}

func TestConsoleModeEndsALeadershipWhenStdinEnds(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	c := candidate("", "me", 0, log)
	c.Console, c.Gateways, c.Election, c.Stdin = true, nil, "", strings.NewReader("LEADER\n")
	if out, err := runConsole(c); err != nil {
		t.Fatalf("Run: %v; output:\n%s", err, out)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin me 1 elected", "end me 1 resigned"}) {
		t.Fatalf("commands ran: %q", got)
	}
}
