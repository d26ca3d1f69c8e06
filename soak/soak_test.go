package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/etcdtest"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/webhooks"
)

// Shape of the soak.
const (
	soakTTL       = 3 * time.Second
	soakMargin    = soakTTL / 10 // the step-down rule's safety margin
	soakElections = 4
	// soakLine is the fewest candidates in an election.
	soakLine = 6
)

// soakCandidates is how many candidates campaign, over all elections,
// when each has the given holders: max(soakLine, 2×holders) per election,
// so that at least as many wait in line as hold. "No instant with more
// than N acting" can only fail with more than N candidates, and each
// holder that stops heartbeating has a successor waiting for its slot.
func soakCandidates(holders int) int { return soakElections * max(soakLine, 2*holders) }

// webhookDrain bounds the wait, after the load, for every event to reach
// the webhook: a killed replica's claim on an endpoint runs out after
// webhooks.DefaultClaimTTL before another replica continues its
// deliveries, and a restarted one may die again meanwhile.
const webhookDrain = 3 * webhooks.DefaultClaimTTL

// setup is the shape of a soak: how many `elector serve`, on which
// backend.
type setup struct {
	members int
	// etcd returns the etcd server binary the replicas run on, three
	// members of it as processes of their own; nil for the embedded
	// backend.
	etcd func(testing.TB) string
}

// TestSoak drives candidates and event streams through a real `elector
// serve` on the embedded backend while killing (-9) and restarting it and
// pausing leaders past their TTL, then checks the history, webhook
// deliveries included. It runs for ELECTOR_SOAK (a duration, at least
// 30s) and is skipped without it.
func TestSoak(t *testing.T) { soak(t, setup{members: 1}) }

// TestSoakCluster is TestSoak against three `elector serve` whose embedded
// servers form one cluster, candidates and subscribers spread over the
// three, one member at a time killed and restarted.
func TestSoakCluster(t *testing.T) { soak(t, setup{members: 3}) }

// TestSoakEtcd is TestSoak against three `elector serve` replicas on a
// cluster of three etcd members, processes of the etcd installed on the
// machine (Debian's etcd-server, 3.4): candidates and subscribers spread
// over the replicas, one replica at a time killed and restarted, stopped,
// or cut off from etcd, and etcd's members stopped (the raft leader past
// the candidates' TTL, or a follower), killed and restarted.
func TestSoakEtcd(t *testing.T) { soak(t, setup{members: 3, etcd: etcdtest.System}) }

// TestSoakEtcdModule is TestSoakEtcd on etcd at the version of elector's
// go.mod, built from the module.
func TestSoakEtcdModule(t *testing.T) { soak(t, setup{members: 3, etcd: etcdtest.BuildModule}) }

func soak(t *testing.T, s setup) {
	spec := os.Getenv("ELECTOR_SOAK")
	if spec == "" {
		t.Skip("set ELECTOR_SOAK to a duration, such as 2m, to run the soak")
	}
	d, err := time.ParseDuration(spec)
	if err != nil || d < 30*time.Second {
		t.Fatalf("ELECTOR_SOAK=%q: want a duration of at least 30s", spec)
	}
	holders := 1
	if n := os.Getenv("ELECTOR_SOAK_HOLDERS"); n != "" {
		if holders, err = strconv.Atoi(n); err != nil || holders < 1 || holders > gateway.MaxHolders {
			t.Fatalf("ELECTOR_SOAK_HOLDERS=%q: want 1 to %d", n, gateway.MaxHolders)
		}
	}
	candidates := soakCandidates(holders)
	bin := buildElector(t)
	var (
		gws     []*gatewayProcess
		mnet    *memberNet        // nil for a single gateway: no cuts
		cluster *etcdtest.Cluster // nil on the embedded backend
	)
	if s.etcd != nil {
		cluster = etcdtest.StartCluster(t, s.etcd(t), 3)
		gws, mnet = startEtcdMembers(t, bin, s.members, cluster.Endpoints())
	} else {
		gws, mnet = startMembers(t, bin, s.members)
	}
	var urls []string
	for _, g := range gws {
		urls = append(urls, g.URL)
	}

	h := &History{}
	var mu sync.Mutex
	leaders := map[string]int{} // election → index of the candidate last told it leads
	load, err := bench.New(bench.Config{
		Gateways:   urls,
		Failover:   true, // as client.Candidacy and the sidecar move
		Candidates: candidates,
		Elections:  soakElections,
		TTL:        soakTTL,
		// A loop per candidate, as each would be a process of its own:
		// a request that hangs on a stopped replica holds up only the
		// candidate that sent it.
		Connections: candidates,
		Subscribers: max(2, s.members),
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

	// The webhook of each election is in place before the load starts,
	// so that every event of it must be delivered; so is its holders
	// setting.
	rcv := startReceiver(t, h)
	for e := range soakElections {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := rcv.subscribe(ctx, urls[e%len(urls)], load.ElectionName(e))
		if err == nil && holders > 1 {
			_, err = client.New(urls[e%len(urls)]).Configure(ctx, load.ElectionName(e), client.SettingsPatch{Holders: &holders})
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Faults stop two TTLs before the load does, with every gateway up, so
	// that the candidates resign through them.
	ctx, cancel := context.WithTimeout(context.Background(), d-2*soakTTL)
	defer cancel()
	var faults sync.WaitGroup
	faults.Go(func() { mnet.cutMembers(ctx, t, gws, h) })
	faults.Go(func() { injectEtcdFaults(ctx, t, cluster, h) })
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

	// Every event the subscribers got reaches the webhook, at the latest
	// once the claims of replicas killed near the end have run out.
	end := time.Now()
	dctx, dcancel := context.WithTimeout(context.Background(), webhookDrain)
	_ = eventually.Poll(dctx, func() error { // Check reports what is left
		if n := h.Undelivered(); n > 0 {
			return fmt.Errorf("%d undelivered", n)
		}
		return nil
	})
	dcancel()
	drain := time.Since(end)

	violations := Check(h, Rules{TTL: soakTTL, Margin: soakMargin, End: end, Holders: holders})
	t.Log("\n" + report(d, s, cluster, urls, h, sum, drain, violations, holders))
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
		ectx, ecancel := context.WithTimeout(context.Background(), 2*soakTTL+10*time.Second)
		err := eventually.Poll(ectx, func() error {
			cs, err := c.Candidates(context.Background(), election)
			if err == nil && len(cs.Candidates) > 0 {
				err = fmt.Errorf("candidates %+v", cs.Candidates)
			}
			return err
		})
		ecancel()
		if err != nil {
			t.Errorf("%s still has candidates after the run (%d unresigned): %v", election, sum.Unresigned, err)
		}
	}
	// Load that ends leaves every replica ready: its hub holds every
	// event there is, whatever the last writes were (webhook cursors,
	// markers, resignations).
	for _, g := range gws {
		if err := g.waitReady(10 * time.Second); err != nil {
			t.Errorf("%s is not ready after the run: %v\n%s", g.URL, err, lastLines(g.Log(), 20))
		}
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

// report is the soak's table of faults, operations, webhook deliveries
// and violations.
func report(d time.Duration, s setup, cluster *etcdtest.Cluster, gateways []string, h *History, sum bench.Summary, drain time.Duration, violations []Violation, holders int) string {
	var b strings.Builder
	shape := "1 `elector serve` (embedded backend)"
	switch {
	case cluster != nil:
		shape = fmt.Sprintf("%d `elector serve` on %d etcd %s members (processes)", s.members, len(cluster.Members), cluster.Version)
	case s.members > 1:
		shape = fmt.Sprintf("%d `elector serve` whose embedded servers form one cluster", s.members)
	}
	fmt.Fprintf(&b, "soak of %s: %s, %d candidates in %d elections of %d %s, TTL %s, %d subscribers\n\n",
		d, shape, sum.Candidates, sum.Elections, holders, plural(holders, "holder", "holders"), soakTTL, sum.Subscribers)
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
	byProperty := map[string]int{}
	for _, v := range violations {
		byProperty[v.Property]++
	}
	w := h.DeliveryFigures()
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintf(tw, "webhook (drained %s after the load)\tcount\t\t\n", drain.Round(100*time.Millisecond))
	for _, row := range []struct {
		what string
		n    int
	}{
		{"requests", w.Requests}, {"events delivered", w.Events}, {"duplicates", w.Duplicates}, {"refused", w.Refused},
		{"missing", byProperty[Undelivered]}, {"out of order", byProperty[DeliveryOutOfOrder]},
	} {
		fmt.Fprintf(tw, "%s\t%d\t\t\n", row.what, row.n)
	}
	_ = tw.Flush()
	resets := 0
	for _, e := range h.Events() {
		if e.Type == client.EventReset {
			resets++
		}
	}
	ls := Leaderships(h.Ops(), Rules{TTL: soakTTL, Margin: soakMargin, End: time.Now()})
	from, to := LongestOutage(h.Ops())
	outage := to.Sub(from).Round(100 * time.Millisecond).String()
	if during := During(h.Faults(), from, to); len(during) > 0 {
		outage += ", during: " + strings.Join(during, "; ")
	}
	fmt.Fprintf(&b, "\nleaderships observed: %d (most acting at once in one election: %d); events: %d (resets: %d); candidacies left to expire: %d\nacknowledged writes checked against the streams: %d\nlongest time without an answered heartbeat: %s\nerrors by type: %v\n",
		len(ls), MostActing(ls), len(h.Events()), resets, sum.Unresigned, DurableChecked(h), outage, sum.Errors.ByType)
	if cluster != nil {
		longest, in, n := LongestAnswer(h.Ops(), h.Faults(), faultEtcdFollower, gateways)
		fmt.Fprintf(&b, "longest answer to a candidate while an etcd follower was stopped: %s (%d operations; in the stop of %s at %s)\n",
			longest.Round(10*time.Millisecond), n, in.Target, stamp(in.Start))
		lost := LostEarly(h.Ops(), soakTTL)
		after, revoked := 0, 0
		for _, l := range lost {
			if afterFault(h.Faults(), faultEtcdLeader, l.Told, etcdRevokeWindow) {
				after++
			}
			if l.Revoked {
				revoked++
			}
		}
		fmt.Fprintf(&b, "acknowledged candidacies lost early: %d (told so, \"revoked\": %d; within %s of an etcd leader's resumption: %d)\n", len(lost), revoked, etcdRevokeWindow, after)
	}
	fmt.Fprintf(&b, "violations: %d", len(violations))
	for _, k := range sortedKeys(byProperty) {
		fmt.Fprintf(&b, "; %s: %d", k, byProperty[k])
	}
	b.WriteString("\n")
	return b.String()
}

// etcdRevokeWindow is how long after an etcd leader resumes a loss of a
// candidacy counts as caused by it: the resumed member's lessor revokes
// the leases it did not see renewed within seconds.
const etcdRevokeWindow = 15 * time.Second

// afterFault reports whether at is while a fault of kind was under way or
// within window after it ended.
func afterFault(faults []Fault, kind string, at time.Time, window time.Duration) bool {
	for _, f := range faults {
		if f.Kind == kind && !at.Before(f.Start) && !at.After(f.End.Add(window)) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
