package sidecar

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
)

func TestSidecarFollowerBeginsWhenTheLeaderResignsNotAtItsNextHeartbeat(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	// With a TTL of a minute, b's next heartbeat after joining is 20s away:
	// only the event stream can tell it sooner that it leads.
	a := start(t, candidate(g.srv.URL, "a", time.Minute, log))
	eventually.True(t, 5*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	b := start(t, candidate(g.srv.URL, "b", time.Minute, log))
	eventually.True(t, 5*time.Second, "b in line", func() bool {
		cs, err := g.c.Candidates(context.Background(), "e")
		return err == nil && len(cs.Candidates) == 2
	})
	if err := a.stop(); err != nil {
		t.Fatalf("a's Run: %v; logs:\n%s", err, a.logs)
	}
	eventually.True(t, 10*time.Second, "b's begin", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of b:\n%s", got, b.logs)
	}
	_ = b.stop()
}

// TestSidecarHandsOverAfterItsEndCommand: a sidecar asked to hand over
// stops its child and runs its end command, and only then hands over; the
// target's begin command runs with the next term. Both sidecars have a TTL
// of a minute, so nothing here waits for an expiry.
func TestSidecarHandsOverAfterItsEndCommand(t *testing.T) {
	g := newTestGateway(t)
	log := t.TempDir() + "/log"
	// a's end command takes its time: b must not begin before it is done.
	ca := candidate(g.srv.URL, "a", time.Minute, log)
	ca.End = "sleep 0.3; " + ca.End
	a := start(t, ca)
	eventually.True(t, 5*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	b := start(t, candidate(g.srv.URL, "b", time.Minute, log))
	eventually.True(t, 5*time.Second, "b in line", func() bool {
		cs, err := g.c.Candidates(context.Background(), "e")
		return err == nil && len(cs.Candidates) == 2
	})
	if _, err := g.c.Transfer(context.Background(), "e", "b", ""); err != nil {
		t.Fatalf("transfer to b: %v", err)
	}
	eventually.True(t, 10*time.Second, "b's begin", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 transferred", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of a:\n%s\nlogs of b:\n%s", got, a.logs, b.logs)
	}
	if l, err := g.c.Leader(context.Background(), "e"); err != nil || l.ID != "b" || l.Term != 2 {
		t.Fatalf("leader %+v, %v", l, err)
	}
	if cs, err := g.c.Candidates(context.Background(), "e"); err != nil || len(cs.Candidates) != 2 || cs.Candidates[1].ID != "a" || cs.Candidates[1].State != client.StateFollower {
		t.Fatalf("a is not back in line as a follower: %+v, %v", cs, err)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("a's Run: %v; logs:\n%s", err, a.logs)
	}
	_ = b.stop()
}
