package main

import (
	"context"
	"strings"
	"testing"
)

func TestRunCommands(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "version", args: []string{"version"}, code: 0, stdout: "elector dev go"},
		{name: "help", args: []string{"help"}, code: 0, stdout: "elector serve"},
		{name: "no command", args: nil, code: 2, stderr: "Usage:"},
		{name: "unknown command", args: []string{"serv"}, code: 2, stderr: `unknown command "serv"`},
		{name: "serve help", args: []string{"serve", "--help"}, code: 0, stderr: "--elections-default-ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}
