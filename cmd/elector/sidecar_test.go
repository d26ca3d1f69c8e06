package main

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
)

func TestSidecarBeginsOnceAndEndsAndResignsOnShutdown(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	logs, stop := inProcess(t, append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "1s"}, hookArgs(log)...)...)

	eventually.True(t, 5*time.Second, "the begin command", func() bool { return len(readLines(log)) >= 1 })
	// Heartbeats carry the leadership past a whole TTL after the begin
	// command, in the same term.
	first, err := g.c.Leader(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "heartbeats past the TTL", func() bool {
		l, err := g.c.Leader(context.Background(), "e")
		if err != nil || l.ID != "a" || l.Term != first.Term {
			t.Fatalf("leader %+v, %v; want a in term %d; logs:\n%s", l, err, first.Term, logs)
		}
		return !l.ExpiresAt.Before(first.ExpiresAt.Add(time.Second))
	})
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected"}) {
		t.Fatalf("commands ran: %q, want the begin command once; logs:\n%s", got, logs)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, logs)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned"}) {
		t.Fatalf("commands ran: %q; logs:\n%s", got, logs)
	}
	// It resigned: the election has no leader at once, not after the TTL.
	if _, err := g.c.Leader(context.Background(), "e"); !errors.Is(err, client.ErrNoLeader) {
		t.Fatalf("leader after shutdown: %v, want ErrNoLeader", err)
	}
	if strings.Contains(logs.String(), "token") {
		t.Errorf("a log line mentions a token:\n%s", logs)
	}
}

func TestSidecarStepsDownBeforeTheGatewayExpiresIt(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := g.c.Watch(ctx, "e", "")
	if err != nil {
		t.Fatal(err)
	}
	// The end command records when it ran.
	args := []string{"--gateway", g.proxy.URL, "--election", "e", "--id", "a", "--ttl", "2s",
		"--leader-begin-command", `echo "begin $ELECTOR_TERM" >> ` + log,
		"--leader-end-command", `echo "end $ELECTOR_TERM $ELECTOR_REASON $(date +%s%N)" >> ` + log}
	logs, _ := inProcess(t, args...)
	eventually.True(t, 5*time.Second, "the begin command", func() bool { return len(readLines(log)) == 1 })

	g.blocked.Store(true) // heartbeats fail from now on; the gateway is told nothing
	var expired client.Event
	for expired.Type != client.EventLeaderEnd {
		select {
		case expired = <-events:
		case <-time.After(5 * time.Second):
			t.Fatalf("no leader.end event; logs:\n%s", logs)
		}
	}
	if expired.Data.Reason != "expired" {
		t.Fatalf("leader.end reason %q, want expired", expired.Data.Reason)
	}
	lines := readLines(log)
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "end 1 heartbeat-timeout ") {
		t.Fatalf("commands ran: %q, want the end command after the heartbeat timeout; logs:\n%s", lines, logs)
	}
	var ns int64
	if _, err := fmtSscan(strings.Fields(lines[1])[3], &ns); err != nil {
		t.Fatal(err)
	}
	if ended := time.Unix(0, ns); !ended.Before(expired.Timestamp) {
		t.Errorf("the end command ran at %s, not before the gateway expired the leader at %s", ended, expired.Timestamp)
	}

	// Once the gateway answers again, the candidacy is found gone: it
	// campaigns again and leads with a new term.
	g.blocked.Store(false)
	eventually.True(t, 5*time.Second, "a new leadership", func() bool { return len(readLines(log)) == 3 })
	if got := readLines(log)[2]; got != "begin 2" {
		t.Fatalf("third command %q, want begin 2", got)
	}
}

func TestSidecarFailingBeginReportsErrorHandsOverAndRetries(t *testing.T) {
	g := newTestGateway(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	ctx := context.Background()
	// a's begin command fails the first time only.
	failOnce := `if [ ! -e ` + dir + `/failed ]; then touch ` + dir + `/failed; echo "begin-failed $ELECTOR_CANDIDATE $ELECTOR_TERM" >> ` + log + `; exit 3; fi; echo "begin $ELECTOR_CANDIDATE $ELECTOR_TERM" >> ` + log
	aArgs := append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "1s", "--error-timeout", "1s"}, hookArgs(log)...)
	aArgs[len(aArgs)-5] = failOnce // the begin command
	logsA, stopA := inProcess(t, aArgs...)
	eventually.True(t, 5*time.Second, "a's failed begin", func() bool { return len(readLines(log)) >= 1 })

	// b campaigns after a failed: a is in error, b leads.
	logsB, stopB := inProcess(t, append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "b", "--ttl", "1s"}, hookArgs(log)...)...)
	// a reports the error once its end command has run, then runs its
	// error command: that may come before or after b's begin, but a's
	// end comes before it.
	eventually.True(t, 5*time.Second, "b's begin and a's error command", func() bool {
		lines := readLines(log)
		return slices.Contains(lines, "begin b 2 elected") && slices.Contains(lines, "error a 1 error")
	})
	lines := readLines(log)
	if got := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.Fields(l)[1] != "a" }); !slices.Equal(got, []string{"begin-failed a 1", "end a 1 error", "error a 1 error"}) {
		t.Fatalf("a's commands: %q; logs:\n%s", got, logsA)
	}
	if slices.Index(lines, "end a 1 error") > slices.Index(lines, "begin b 2 elected") {
		t.Fatalf("b began before a's end command ran: %q", lines)
	}
	// After its error timeout a campaigns again, behind b.
	eventually.True(t, 5*time.Second, "a back in line", func() bool {
		cs, err := g.c.Candidates(ctx, "e")
		return err == nil && len(cs.Candidates) == 2 && cs.Candidates[1].ID == "a" && cs.Candidates[1].State == client.StateFollower
	})
	// b leaves: a leads again, and its begin command succeeds now.
	if code := stopB(); code != 0 {
		t.Fatalf("b exit code %d; logs:\n%s", code, logsB)
	}
	eventually.True(t, 5*time.Second, "a's second begin", func() bool { return slices.Contains(readLines(log), "begin a 3") })
	if code := stopA(); code != 0 {
		t.Fatalf("a exit code %d; logs:\n%s", code, logsA)
	}
}

func TestSidecarEndFailingEveryAttemptExitsWithStatus1(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	logs, stop := inProcess(t, "--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "1s",
		"--leader-begin-command", "echo begin >> "+log, "--leader-end-command", "echo end >> "+log+"; exit 1",
		"--end-retries", "2", "--end-retry-interval", "10ms")
	eventually.True(t, 5*time.Second, "the begin command", func() bool { return slices.Equal(readLines(log), []string{"begin"}) })
	if code := stop(); code != 1 {
		t.Fatalf("exit code %d, want 1; logs:\n%s", code, logs)
	}
	if got := readLines(log); !slices.Equal(got, []string{"begin", "end", "end", "end"}) {
		t.Fatalf("commands ran: %q, want begin and the end command 3 times", got)
	}
	if !strings.Contains(logs.String(), "failed on every attempt") {
		t.Errorf("logs do not say why:\n%s", logs)
	}
}

func TestSidecarSupervisedCommandExitingWhileLeadingIsAnError(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	args := append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", "a", "--ttl", "1s", "--error-timeout", "1h"}, hookArgs(log)...)
	logs, stop := inProcess(t, append(args, "--", "/bin/sh", "-c", "exit 5")...)
	eventually.True(t, 5*time.Second, "the error command", func() bool { return len(readLines(log)) == 3 })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 error", "error a 1 error"}) {
		t.Fatalf("commands ran: %q; logs:\n%s", got, logs)
	}
	cs, err := g.c.Candidates(context.Background(), "e")
	if err != nil || len(cs.Candidates) != 1 || cs.Candidates[0].State != client.StateError {
		t.Fatalf("candidates: %+v, %v; want a in error", cs, err)
	}
	if !strings.Contains(logs.String(), "exit status 5") {
		t.Errorf("logs do not give the exit status:\n%s", logs)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
