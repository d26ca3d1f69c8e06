package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

func TestSidecarBeginsOnceAndEndsAndResignsOnShutdown(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	a := start(t, candidate(g.srv.URL, "a", time.Second, log))
	logs := a.logs

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
	if err := a.stop(); err != nil {
		t.Fatalf("Run: %v; logs:\n%s", err, logs)
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
	c := candidate(g.proxy.URL, "a", 2*time.Second, "")
	c.Begin = `echo "begin $ELECTOR_TERM" >> ` + log
	c.End = `echo "end $ELECTOR_TERM $ELECTOR_REASON $(date +%s%N)" >> ` + log
	logs := start(t, c).logs
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
	// The end command's date is taken before the expiry, but its line may
	// be appended after the event reached the test: wait for it, and let
	// the date say when it ran.
	var lines []string
	eventually.True(t, 10*time.Second, "the end command's line", func() bool { lines = readLines(log); return len(lines) >= 2 })
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "end 1 heartbeat-timeout ") {
		t.Fatalf("commands ran: %q, want the end command after the heartbeat timeout; logs:\n%s", lines, logs)
	}
	var ns int64
	if _, err := fmt.Sscan(strings.Fields(lines[1])[3], &ns); err != nil {
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
	ca := candidate(g.srv.URL, "a", time.Second, log)
	ca.ErrorTimeout = time.Second
	ca.Begin = failOnce
	a := start(t, ca)
	logsA := a.logs
	eventually.True(t, 5*time.Second, "a's failed begin", func() bool { return len(readLines(log)) >= 1 })

	// b campaigns after a failed: a is in error, b leads.
	b := start(t, candidate(g.srv.URL, "b", time.Second, log))
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
	if err := b.stop(); err != nil {
		t.Fatalf("b's Run: %v; logs:\n%s", err, b.logs)
	}
	eventually.True(t, 5*time.Second, "a's second begin", func() bool { return slices.Contains(readLines(log), "begin a 3") })
	if err := a.stop(); err != nil {
		t.Fatalf("a's Run: %v; logs:\n%s", err, logsA)
	}
}

func TestSidecarEndFailingEveryAttemptReturnsErrEndFailed(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	c := candidate(g.srv.URL, "a", time.Second, "")
	c.Begin, c.End = "echo begin >> "+log, "echo end >> "+log+"; exit 1"
	c.EndRetries, c.EndRetryInterval = 2, 10*time.Millisecond
	a := start(t, c)
	logs := a.logs
	eventually.True(t, 5*time.Second, "the begin command", func() bool { return slices.Equal(readLines(log), []string{"begin"}) })
	if err := a.stop(); !errors.Is(err, ErrEndFailed) {
		t.Fatalf("Run: %v, want ErrEndFailed; logs:\n%s", err, logs)
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
	c := candidate(g.srv.URL, "a", time.Second, log)
	c.ErrorTimeout = time.Hour
	c.Command = []string{"/bin/sh", "-c", "exit 5"}
	a := start(t, c)
	logs := a.logs
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
	if err := a.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestSidecarBacksOffWhileTheGatewayIsUnreachable(t *testing.T) {
	g := newTestGateway(t)
	g.blocked.Store(true)
	logs := &servertest.SyncBuffer{}
	c := candidate(g.proxy.URL, "a", time.Second, "")
	c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := start(t, c)
	eventually.True(t, 10*time.Second, "five failed campaigns", func() bool { return strings.Contains(logs.String(), "failures=5") })
	warnings := 0
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "campaign failed") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings for five failed campaigns, want 1; logs:\n%s", warnings, logs)
	}
	// The waits grow: each retry_in of the series is logged.
	re := regexp.MustCompile(`failures=(\d+) retry_in=(\S+)`)
	var waits []time.Duration
	for _, m := range re.FindAllStringSubmatch(logs.String(), 5) {
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, d)
	}
	if len(waits) < 5 || waits[4] <= waits[0] {
		t.Errorf("retry waits %v do not grow", waits)
	}
	// Once the gateway answers, it campaigns and leads.
	g.blocked.Store(false)
	eventually.True(t, 20*time.Second, "leadership", func() bool {
		l, err := g.c.Leader(context.Background(), "e")
		return err == nil && l.ID == "a"
	})
	// The campaign's answer is logged after the gateway has made a leader.
	eventually.True(t, 5*time.Second, "the logs to say the gateway answers again", func() bool {
		return strings.Contains(logs.String(), "the gateway answers again")
	})
	_ = a.stop()
}
