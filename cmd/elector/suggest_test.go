package main

import "testing"

func TestSuggestFindsTheCloseWord(t *testing.T) {
	keys := []string{"elections.default_ttl", "elections.max_ttl", "listen", "log.level"}
	commands := []string{"serve", "run", "leader", "heartbeat", "candidates", "campaign"}
	tests := []struct {
		word  string
		among []string
		want  string
	}{
		{"elections.default_tll", keys, "elections.default_ttl"},
		{"listn", keys, "listen"},
		{"leadr", commands, "leader"},
		{"laeder", commands, "leader"},
		{"sever", commands, "serve"},
		{"runn", commands, "run"},
		{"candidate", commands, "candidates"},
		{"bogus", commands, ""},
		{"x", commands, ""},
		{"elections.bogus", keys, ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, tt.among); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}
