package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

func TestSidecarFollowerBeginsWhenTheLeaderResignsNotAtItsNextHeartbeat(t *testing.T) {
	g := newTestGateway(t)
	log := filepath.Join(t.TempDir(), "log")
	// With a TTL of a minute, b's next heartbeat after joining is 20s away:
	// only the event stream can tell it sooner that it leads.
	args := func(id string) []string {
		return append([]string{"--gateway", g.srv.URL, "--election", "e", "--id", id, "--ttl", "1m"}, hookArgs(log)...)
	}
	logsA, stopA := inProcess(t, args("a")...)
	eventually.True(t, 5*time.Second, "a's begin", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	logsB, stopB := inProcess(t, args("b")...)
	eventually.True(t, 5*time.Second, "b in line", func() bool {
		cs, err := g.c.Candidates(context.Background(), "e")
		return err == nil && len(cs.Candidates) == 2
	})
	if code := stopA(); code != 0 {
		t.Fatalf("a's exit code %d; logs:\n%s", code, logsA)
	}
	eventually.True(t, 10*time.Second, "b's begin", func() bool { return slices.Contains(readLines(log), "begin b 2 elected") })
	if got := readLines(log); !slices.Equal(got, []string{"begin a 1 elected", "end a 1 resigned", "begin b 2 elected"}) {
		t.Fatalf("commands ran: %q; logs of b:\n%s", got, logsB)
	}
	stopB()
}

// BenchmarkSidecarHandoverOnSIGTERM measures how long after the leading
// `elector run --ttl 30s` gets SIGTERM the following one's begin command
// runs: the leader runs its end command and resigns, the gateway promotes
// the follower, whose event stream tells it to heartbeat, whose answer
// says it leads. It reports the median and the worst of b.N rounds, each
// with two fresh processes; run it with -benchtime=7x or so.
func BenchmarkSidecarHandoverOnSIGTERM(b *testing.B) {
	g := newTestGateway(b)
	var lat []time.Duration
	for i := range b.N {
		b.StopTimer()
		dir := b.TempDir()
		log := filepath.Join(dir, "log")
		election := fmt.Sprintf("h%d", i)
		start := func(id string) *os.Process {
			cmd, _ := startProcess(b, "run", "--gateway", g.srv.URL, "--election", election, "--id", id, "--ttl", "30s",
				"--leader-begin-command", `echo "begin $ELECTOR_CANDIDATE $(date +%s%N)" >> `+log,
				"--leader-end-command", "true")
			return cmd.Process
		}
		a := start("a")
		eventually.True(b, 10*time.Second, "a's begin", func() bool { return len(readLines(log)) == 1 })
		start("b")
		eventually.True(b, 10*time.Second, "b in line", func() bool {
			cs, err := g.c.Candidates(context.Background(), election)
			return err == nil && len(cs.Candidates) == 2
		})
		b.StartTimer()
		sent := time.Now()
		if err := a.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		eventually.True(b, 20*time.Second, "b's begin", func() bool { return len(readLines(log)) == 2 })
		b.StopTimer()
		f := strings.Fields(readLines(log)[1])
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if f[1] != "b" || err != nil {
			b.Fatalf("second begin %q", f)
		}
		lat = append(lat, time.Unix(0, ns).Sub(sent))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.Logf("handover latencies: %v", lat)
}

func TestSidecarTriesGatewaysInTurn(t *testing.T) {
	g := newTestGateway(t)
	g.blocked.Store(true) // the first gateway drops every request
	log := filepath.Join(t.TempDir(), "log")
	logs, stop := inProcess(t, append([]string{"--gateway", g.proxy.URL + ", " + g.srv.URL, "--election", "e", "--id", "a", "--ttl", "3s"}, hookArgs(log)...)...)
	eventually.True(t, 5*time.Second, "the begin command", func() bool { return slices.Contains(readLines(log), "begin a 1 elected") })
	if !strings.Contains(logs.String(), "switched gateway") {
		t.Errorf("logs do not say which gateway answered:\n%s", logs)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, logs)
	}
}
