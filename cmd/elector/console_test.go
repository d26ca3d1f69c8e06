package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConsoleModeRunsHandlersFromStdinLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	stdin := strings.NewReader("LEADER\n\n# a comment\nnotleader\nLEADER\nbogus\nERROR\nLEADER\n")
	var out syncBuffer
	args := append([]string{"--console", "--id", "me", "--error-timeout", "1h"}, hookArgs(log)...)
	if code := runSidecar(context.Background(), args, stdin, &out, &out); code != 0 {
		t.Fatalf("exit code %d; output:\n%s", code, &out)
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
		t.Fatalf("commands ran:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), &out)
	}
	for _, msg := range []string{"unknown console line", "LEADER ignored during the error timeout"} {
		if !strings.Contains(out.String(), msg) {
			t.Errorf("output lacks %q:\n%s", msg, &out)
		}
	}
}

func TestConsoleModeEndsALeadershipWhenStdinEnds(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	var out syncBuffer
	args := append([]string{"--console", "--id", "me"}, hookArgs(log)...)
	if code := runSidecar(context.Background(), args, strings.NewReader("LEADER\n"), &out, &out); code != 0 {
		t.Fatalf("exit code %d; output:\n%s", code, &out)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin me 1 elected", "end me 1 resigned"}) {
		t.Fatalf("commands ran: %q", got)
	}
}
