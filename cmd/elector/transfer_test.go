package main

import (
	"strings"
	"testing"
)

func TestTransferCommandRefusals(t *testing.T) {
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	if code, _, errOut := cli(t, "transfer", "--election", "e"); code != 2 || !strings.Contains(errOut, "--to is required") {
		t.Fatalf("without --to: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "transfer", "--election", "e", "--to", "b"); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("in an unknown election: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", "a", "--priority", "2"); code != 0 {
		t.Fatalf("campaign with a priority: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "transfer", "--election", "e", "--to", "a"); code != 1 || !strings.Contains(errOut, "not a follower") {
		t.Fatalf("to the leader: %d %q", code, errOut)
	}
}

func TestTransferCommandSaysTheTransferIsPending(t *testing.T) {
	g := newTestGateway(t)
	t.Setenv(envGateway, g.srv.URL)
	for _, id := range []string{"a", "b"} {
		if code, _, errOut := cli(t, "campaign", "--election", "e", "--id", id); code != 0 {
			t.Fatalf("campaign %s: %d %q", id, code, errOut)
		}
	}
	if code, out, errOut := cli(t, "transfer", "--election", "e", "--to", "b"); code != 0 || !strings.Contains(out, "transfer of e to b pending") {
		t.Fatalf("elector transfer: %d %q %q", code, out, errOut)
	}
}
