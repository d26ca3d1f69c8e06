package main

import (
	"strings"
	"testing"
)

// TestElectionCommandSetsHoldersAndLeaderListsThem: elector election
// --holders changes the setting and shows it; elector leader lists every
// holder, each with its own term; elector transfer names the holder with
// --from.
func TestElectionCommandSetsHoldersAndLeaderListsThem(t *testing.T) {
	isolateClient(t)
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	code, out, errOut := cli(t, "election", "--election", "e", "--holders", "2", "--handover-delay", "1s")
	if code != 0 || !strings.Contains(out, "settings: holders 2, error_cooldown 30s, handover_delay 1s, preempt false") {
		t.Fatalf("election --holders 2: %d %q %q", code, out, errOut)
	}
	for _, id := range []string{"a", "b", "c"} {
		if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", id, "--ttl", "1m"); code != 0 {
			t.Fatalf("campaign %s: %s", id, errOut)
		}
	}
	code, out, errOut = cli(t, "leader", "--election", "e")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "a (term 1, since ") || !strings.HasPrefix(lines[1], "b (term 2, since ") {
		t.Fatalf("leader: %d %q %q; want a and b, each with its term", code, out, errOut)
	}
	code, out, errOut = cli(t, "election", "--election", "e")
	if code != 0 || !strings.Contains(out, "holders: a (term 1), b (term 2)") || !strings.Contains(out, "3 candidates") {
		t.Fatalf("election: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli(t, "transfer", "--election", "e", "--to", "c"); code != 1 || !strings.Contains(errOut, "from") {
		t.Fatalf("transfer naming no holder: %d %q", code, errOut)
	}
	code, out, errOut = cli(t, "transfer", "--election", "e", "--to", "c", "--from", "b")
	if code != 0 || !strings.Contains(out, "holder b hands over") {
		t.Fatalf("transfer --from b: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cli(t, "election", "--election", "e", "--holders", "0"); code != 1 || !strings.Contains(errOut, "holders must be between 1 and 64") {
		t.Fatalf("election --holders 0: %d %q %q", code, out, errOut)
	}
}
