package main

import (
	"strings"
	"testing"
)

// TestClientCommandsSuggestCommandsNotRequests: when a candidacy is gone,
// the client commands say which elector command campaigns again, not which
// HTTP request does.
func TestClientCommandsSuggestCommandsNotRequests(t *testing.T) {
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", "a", "--ttl", "1m"); code != 0 {
		t.Fatalf("campaign: %d %s", code, errOut)
	}
	for _, args := range [][]string{
		{"heartbeat", "--election", "e", "--id", "ghost", "--token", "t0k3n"},
		{"resign", "--election", "e", "--id", "ghost", "--token", "t0k3n"},
	} {
		code, _, errOut := cli(t, args...)
		if code != 1 || !strings.Contains(errOut, "not campaigning") ||
			!strings.Contains(errOut, "campaign again: elector campaign --election e --id ghost") ||
			strings.Contains(errOut, "/v1/") {
			t.Errorf("%s of a candidate that is gone: exit %d, %q; want the command that campaigns again and no HTTP request", args[0], code, errOut)
		}
	}
}
