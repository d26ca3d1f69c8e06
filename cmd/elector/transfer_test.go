package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
)

// TestSidecarHandsOverAfterItsEndCommand: `elector run` asked to hand over
// stops its child and runs its end command, and only then hands over; the
// target's begin command runs with the next term. Both sidecars have a TTL
// of a minute, so nothing here waits for an expiry.
func TestSidecarHandsOverAfterItsEndCommand(t *testing.T) {
	g := newTestGateway(t)
	log := t.TempDir() + "/log"
	args := func(id string) []string {
		return append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", "1m"}, hookArgs(log)...)
	}
	// a's end command takes its time: b must not begin before it is done.
	argsA := args("a")
	for i, a := range argsA {
		if a == "--leader-end-command" {
			argsA[i+1] = "sleep 0.3; " + argsA[i+1]
		}
	}
	logsA, stopA := inProcess(t, argsA...)
	eventually.True(t, 5*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	logsB, stopB := inProcess(t, args("b")...)
	eventually.True(t, 5*time.Second, "b in line", func() bool {
		cs, err := g.c.Candidates(context.Background(), "e")
		return err == nil && len(cs.Candidates) == 2
	})
	if code, out, errOut := cli(t, "transfer", "--gateway", g.srv.URL, "--election", "e", "--to", "b"); code != 0 || !strings.Contains(out, "transfer of e to b pending") {
		t.Fatalf("elector transfer: %d %q %q", code, out, errOut)
	}
	eventually.True(t, 10*time.Second, "b's begin", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 transferred", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of a:\n%s\nlogs of b:\n%s", got, logsA, logsB)
	}
	if l, err := g.c.Leader(context.Background(), "e"); err != nil || l.ID != "b" || l.Term != 2 {
		t.Fatalf("leader %+v, %v", l, err)
	}
	if cs, err := g.c.Candidates(context.Background(), "e"); err != nil || len(cs.Candidates) != 2 || cs.Candidates[1].ID != "a" || cs.Candidates[1].State != client.StateFollower {
		t.Fatalf("a is not back in line as a follower: %+v, %v", cs, err)
	}
	if code := stopA(); code != 0 {
		t.Fatalf("a's exit code %d; logs:\n%s", code, logsA)
	}
	stopB()
}

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
