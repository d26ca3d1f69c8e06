package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

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
