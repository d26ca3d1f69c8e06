package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

// Shape of the soak.
const (
	soakTTL        = 3 * time.Second
	soakMargin     = soakTTL / 10 // the step-down rule's safety margin
	soakCandidates = 24
	soakElections  = 4
)

// TestSoak drives candidates and event streams through a real `elector
// serve` on the embedded backend while killing (-9) and restarting it and
// pausing leaders past their TTL, then checks the history. It runs for
// ELECTOR_SOAK (a duration, at least 30s) and is skipped without it.
func TestSoak(t *testing.T) { soak(t, 1) }

// TestSoakCluster is TestSoak against three `elector serve` whose embedded
// servers form one cluster, candidates and subscribers spread over the
// three, one member at a time killed and restarted.
func TestSoakCluster(t *testing.T) { soak(t, 3) }

func soak(t *testing.T, members int) {
	spec := os.Getenv("ELECTOR_SOAK")
	if spec == "" {
		t.Skip("set ELECTOR_SOAK to a duration, such as 2m, to run the soak")
	}
	d, err := time.ParseDuration(spec)
	if err != nil || d < 30*time.Second {
		t.Fatalf("ELECTOR_SOAK=%q: want a duration of at least 30s", spec)
	}
	gws, mnet := startMembers(t, buildElector(t), members)
	var urls []string
	for _, g := range gws {
		urls = append(urls, g.URL)
	}

	h := &History{}
	var mu sync.Mutex
	leaders := map[string]int{} // election → index of the candidate last told it leads
	load, err := bench.New(bench.Config{
		Gateways:    urls,
		Candidates:  soakCandidates,
		Elections:   soakElections,
		TTL:         soakTTL,
		Connections: 8,
		Subscribers: max(2, members),
		Duration:    d,
		Timeout:     2 * time.Second,
		ResignWait:  time.Minute,
		Prefix:      "soak",
		Observe: func(op bench.Op) {
			h.ObserveOp(op)
			if op.Err == nil && op.Status.State == client.StateLeader {
				mu.Lock()
				leaders[op.Election] = op.Index
				mu.Unlock()
			}
		},
		ObserveEvent: h.ObserveEvent,
	})
	if err != nil {
		t.Fatal(err)
	}

	// Faults stop two TTLs before the load does, with every gateway up, so
	// that the candidates resign through them.
	ctx, cancel := context.WithTimeout(context.Background(), d-2*soakTTL)
	defer cancel()
	var faults sync.WaitGroup
	faults.Go(func() { mnet.cutMembers(ctx, t, gws, h) })
	faults.Go(func() {
		injectFaults(ctx, t, gws, load, h, func(election string) (int, bool) {
			mu.Lock()
			defer mu.Unlock()
			i, ok := leaders[election]
			return i, ok
		})
	})
	sum, err := load.Run(context.Background())
	cancel()
	faults.Wait()
	if err != nil {
		t.Fatalf("load: %v", err)
	}

	violations := Check(h, Rules{TTL: soakTTL, Margin: soakMargin, End: time.Now()})
	t.Log("\n" + report(d, members, h, sum, violations))
	for i, v := range violations {
		if i == 50 {
			t.Errorf("… and %d more", len(violations)-50)
			break
		}
		t.Error(v)
	}
	// Every candidacy ends: resigned, or, for one whose campaign answer
	// was lost to a fault (the load campaigns again under another id),
	// expired after its TTL.
	c := client.New(urls[0])
	for e := range soakElections {
		election := load.ElectionName(e)
		var left []client.Candidate
		if !waitFor(2*soakTTL+10*time.Second, func() bool {
			cs, err := c.Candidates(context.Background(), election)
			left = cs.Candidates
			return err == nil && len(cs.Candidates) == 0
		}) {
			t.Errorf("%s still has candidates after the run (%d unresigned): %+v", election, sum.Unresigned, left)
		}
	}
}

// waitFor polls cond every 100ms until it holds, and reports whether it did
// within timeout.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		tick := time.NewTimer(100 * time.Millisecond)
		<-tick.C
	}
	return true
}

// injectFaults injects, every few seconds until ctx ends, in turn: kill -9
// of a gateway (each in turn) and its restart after a second or so;
// stopping the heartbeats of an election's leader for longer than its TTL;
// SIGSTOP of a gateway past the TTL, then SIGCONT. It leaves every gateway
// up.
func injectFaults(ctx context.Context, t *testing.T, gws []*gatewayProcess, load *bench.Load, h *History, leaderOf func(string) (int, bool)) {
	kills, stops := 0, 0
	for n := 0; ; n++ {
		wait := time.NewTimer(3*time.Second + rand.N(3*time.Second))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		if n%4 == 3 {
			gw := gws[stops%len(gws)]
			stops++
			f := Fault{Kind: "SIGSTOP of a gateway past the TTL, SIGCONT", Target: gw.URL, Start: time.Now()}
			gw.Signal(syscall.SIGSTOP)
			paused := time.NewTimer(soakTTL + time.Second)
			<-paused.C
			gw.Signal(syscall.SIGCONT)
			f.End = time.Now()
			h.Fault(f)
			continue
		}
		if n%4 == 0 {
			gw := gws[kills%len(gws)]
			kills++
			f := Fault{Kind: "kill -9 of a gateway, restarted", Target: gw.URL, Start: time.Now()}
			gw.Kill()
			down := time.NewTimer(500*time.Millisecond + rand.N(time.Second))
			<-down.C
			if err := gw.Restart(); err != nil {
				t.Errorf("restarting %s: %v\n%s", gw.URL, err, gw.Log())
				return
			}
			f.End = time.Now()
			h.Fault(f)
			continue
		}
		election := load.ElectionName(rand.N(soakElections))
		i, ok := leaderOf(election)
		if !ok {
			continue
		}
		pause := soakTTL + time.Second
		load.Pause(i, pause)
		h.Fault(Fault{Kind: "leader's heartbeats stopped past its TTL", Target: fmt.Sprintf("%s/c%06d", election, i),
			Start: time.Now(), End: time.Now().Add(pause)})
	}
}

// report is the soak's table of faults, operations and violations.
func report(d time.Duration, members int, h *History, sum bench.Summary, violations []Violation) string {
	var b strings.Builder
	shape := "1 `elector serve` (embedded backend)"
	if members > 1 {
		shape = fmt.Sprintf("%d `elector serve` whose embedded servers form one cluster", members)
	}
	fmt.Fprintf(&b, "soak of %s: %s, %d candidates in %d elections, TTL %s, %d subscribers\n\n",
		d, shape, sum.Candidates, sum.Elections, soakTTL, sum.Subscribers)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\tcount\tlongest\t")
	faults := map[string]int{}
	longest := map[string]time.Duration{}
	for _, f := range h.Faults() {
		faults[f.Kind]++
		longest[f.Kind] = max(longest[f.Kind], f.End.Sub(f.Start))
	}
	for _, k := range sortedKeys(faults) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", k, faults[k], longest[k].Round(100*time.Millisecond))
	}
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintln(tw, "operation\tcount\terrors\t")
	for _, k := range []string{"campaign", "heartbeat", "resign", "event"} {
		op := sum.Operations[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", k, op.Count, op.Errors)
	}
	_ = tw.Flush()
	resets := 0
	for _, e := range h.Events() {
		if e.Type == client.EventReset {
			resets++
		}
	}
	ls := Leaderships(h.Ops(), Rules{TTL: soakTTL, Margin: soakMargin, End: time.Now()})
	fmt.Fprintf(&b, "\nleaderships observed: %d; events: %d (resets: %d); candidacies left to expire: %d\nerrors by type: %v\n",
		len(ls), len(h.Events()), resets, sum.Unresigned, sum.Errors.ByType)
	byProperty := map[string]int{}
	for _, v := range violations {
		byProperty[v.Property]++
	}
	fmt.Fprintf(&b, "violations: %d", len(violations))
	for _, k := range sortedKeys(byProperty) {
		fmt.Fprintf(&b, "; %s: %d", k, byProperty[k])
	}
	b.WriteString("\n")
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
