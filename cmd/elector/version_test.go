package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildVersion(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-22T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"no build info", "dev", nil, "dev"},
		{"linked release wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v1.2.3"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.1"}}, "v0.4.1"},
		{"git checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"dev (commit 0123456789ab, 2026-11-22T10:00:00Z, modified)"},
		{"pseudo-version with vcs", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261122100000-0123456789ab"}, Settings: vcs[:2]},
			"v0.0.0-20261122100000-0123456789ab (commit 0123456789ab)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := readBuildVersion(tt.linked, tt.bi, tt.bi != nil).String(); got != tt.want {
				t.Fatalf("got %q; want %q", got, tt.want)
			}
		})
	}
}

// TestVersionCommandAndFlag checks that `elector version` and `elector
// --version` print the same line, naming the Go version and platform.
func TestVersionCommandAndFlag(t *testing.T) {
	t.Parallel()
	var lines []string
	for _, arg := range []string{"version", "--version"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{arg}, &out, &errOut); code != 0 {
			t.Fatalf("elector %s exited %d: %s", arg, code, errOut.String())
		}
		lines = append(lines, out.String())
	}
	if lines[0] != lines[1] || !strings.HasPrefix(lines[0], "elector ") || !strings.Contains(lines[0], " go1.") {
		t.Fatalf("elector version printed %q, --version %q", lines[0], lines[1])
	}
}
