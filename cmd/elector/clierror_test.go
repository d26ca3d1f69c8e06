package main

import (
	"strings"
	"testing"
)

// TestClientCommandsSuggestCommandsNotRequests: where the gateway's problem
// tells an HTTP client which request to send, the client commands name the
// elector command instead.
func TestClientCommandsSuggestCommandsNotRequests(t *testing.T) {
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", "a", "--ttl", "1m"); code != 0 {
		t.Fatalf("campaign: %d %s", code, errOut)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"heartbeat", "--election", "e", "--id", "ghost", "--token", "t0k3n"}, "campaign again: elector campaign --election e --id ghost"},
		{[]string{"resign", "--election", "e", "--id", "ghost", "--token", "t0k3n"}, "campaign again: elector campaign --election e --id ghost"},
		{[]string{"leader", "--election", "nowhere"}, "the first campaign creates it: elector campaign --election nowhere"},
		{[]string{"campaign", "--election", "e", "--id", "a"}, "resign it with its token (elector resign --election e --id a --token TOKEN) or wait for its TTL to run out"},
		{[]string{"heartbeat", "--election", "e", "--id", "a", "--token", "t0k3n"}, "--token (or $" + envToken + ") is not the token of candidate"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := cli(t, tt.args...)
			if code != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "/v1/") || strings.Contains(errOut, "Elector-Candidate-Token") {
				t.Fatalf("exit %d, %q; want the elector command (%s) and no HTTP request", code, errOut, tt.want)
			}
		})
	}
}
