package bench

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fleetEtcd: `elector serve` of a release build with the etcd backend, on
// the same etcd 3.4 process that it is compared with, loaded by wrk: leader
// reads of 100 elections (300 candidates) beside etcd's
// /v3/election/leader, 32 connections, linearizable and with
// consistency=local; and campaigns into fresh elections,
// 8 connections, beside etcd's /v3/election/campaign, at 0 elections, at
// 0 again once the prefix is declared upgraded (p/_elector/version, so a
// campaign into an empty election is one transaction: see the etcd
// backend's version.go), at 5,000, and at 5,000 in sessions, in rounds
// (ELECTOR_BENCH_ROUNDS) each beside etcd's own campaign. Beside each of elector's loads it
// reports what etcd's process and wrk spent, and etcd's gRPC calls, per
// request; the gateway's ceiling (GET /healthz of the same process) and
// the floor under it (bench/barehttp: net/http alone); and
// last, etcd alone under the requests of a campaign from bare clients
// (etcdFloor). Sizes that fit a CI run: a few minutes with the default
// 10 s loads.
func fleetEtcd(t *testing.T) string {
	const candidates, elections, conns, clients, existing = 300, 100, 32, 8, 5000
	d := fleetSeconds(t)
	etcd := startEtcd(t)
	c := newClient(16)

	// etcd's own, first: leaders of 100 elections, and campaigns with
	// one lease per wrk thread.
	var etcdReads []wrkRequest
	var er, n0, n5, n5g wrkResult
	leases := make([]string, wrkThreads)
	if !skipEtcd() {
		if err := parallel(elections, 16, func(i int) error {
			id, err := etcdLease(c, etcd.URL, 3600)
			if err != nil {
				return err
			}
			return call(c, "POST", etcd.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("native/e-%03d", i)), "lease": id, "value": b64("x")}, nil)
		}); err != nil {
			t.Fatal(err)
		}
		for i := range elections {
			etcdReads = append(etcdReads, wrkRequest{method: "POST", path: "/v3/election/leader", body: fmt.Sprintf(`{"name":"%s"}`, b64(fmt.Sprintf("native/e-%03d", i)))})
		}
		for i := range leases {
			id, err := etcdLease(c, etcd.URL, 3600)
			if err != nil {
				t.Fatal(err)
			}
			leases[i] = id
		}
	}

	const prefix = "fleet-elector"
	srv := startServe(t, fmt.Sprintf("backend:\n  kind: etcd\netcd:\n  endpoints: [%s]\n  prefix: %s\n", etcd.URL, prefix))
	if err := parallel(candidates, 16, func(i int) error {
		_, err := electorCampaign(c, srv.URL, fmt.Sprintf("e-%03d", i%elections), fmt.Sprintf("node-%03d", i), "1h")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var reads []wrkRequest
	for i := range elections {
		reads = append(reads, wrkRequest{method: "GET", path: fmt.Sprintf("/v1/elections/e-%03d/leader", i)})
	}
	// The same reads with consistency=local: from the replica's copy as
	// it is, without the read index.
	localReads := make([]wrkRequest, len(reads))
	for i, r := range reads {
		r.path += "?consistency=local"
		localReads[i] = r
	}
	// Each round: elector's reads, its local reads, its ceiling (GET
	// /healthz of the same process, which touches no backend), the floor
	// under that ceiling (bench/barehttp: net/http alone, answering as
	// /healthz does), etcd's reads; the median round of each counts
	// (ELECTOR_BENCH_ROUNDS).
	bare := startBare(t)
	healthz := []wrkRequest{{method: "GET", path: "/healthz"}}
	var rds, lrs, ceils, bares, ers []besideResult
	for range fleetRounds(t) {
		etcdProfileDuring(t, etcd.URL, "etcd-leader", d, func() {
			rds = append(rds, measureBeside(t, etcd, func() wrkResult { return wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, reads) }))
		})
		etcdProfileDuring(t, etcd.URL, "etcd-leader-local", d, func() {
			lrs = append(lrs, measureBeside(t, etcd, func() wrkResult { return wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, localReads) }))
		})
		etcdProfileDuring(t, etcd.URL, "etcd-healthz", d, func() {
			ceils = append(ceils, measureBeside(t, etcd, func() wrkResult { return wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, healthz) }))
		})
		bares = append(bares, measureBeside(t, etcd, func() wrkResult { return wrkCycle(t, bare.URL, bare.cmd.Process.Pid, conns, d, healthz) }))
		if !skipEtcd() {
			ers = append(ers, measureBeside(t, etcd, func() wrkResult { return wrkCycle(t, etcd.URL, etcd.pid, conns, d, etcdReads) }))
		}
	}
	rd, rdBeside := medianBeside(rds)
	lr, lrBeside := medianBeside(lrs)
	ceil, ceilBeside := medianBeside(ceils)
	bareRes, bareBeside := medianBeside(bares)
	er, erBeside := medianBeside(ers)
	if !skipEtcd() {
		n0 = runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd", append([]string{"c0"}, leases...)...)
	}
	var m0, m0v, m5 wrkResult
	var m0Beside, m0vBeside, m5Beside beside
	etcdProfileDuring(t, etcd.URL, "etcd-campaign0", d, func() {
		m0Beside = besideLoad(t, etcd, func() { m0 = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c0") })
	})
	// What an operator does once every replica runs this version:
	// etcdctl put <prefix>/_elector/version '{"min":2}'.
	if err := call(c, "POST", etcd.URL+"/v3/kv/put", nil, map[string]any{"key": b64(prefix + "/_elector/version"), "value": b64(`{"min":2}`)}, nil); err != nil {
		t.Fatal(err)
	}
	// A campaign answers once the replica's cache holds its own write,
	// so every earlier revision, the declaration's included.
	if _, err := electorCampaign(c, srv.URL, "declared", "a", "1h"); err != nil {
		t.Fatal(err)
	}
	etcdProfileDuring(t, etcd.URL, "etcd-campaign0v", d, func() {
		m0vBeside = besideLoad(t, etcd, func() { m0v = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c0v") })
	})
	if err := parallel(existing, 16, func(i int) error {
		_, err := electorCampaign(c, srv.URL, fmt.Sprintf("pre-%d", i), "a", "1h")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	etcdProfileDuring(t, etcd.URL, "etcd-campaign5k", d, func() {
		m5Beside = besideLoad(t, etcd, func() { m5 = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c5k") })
	})
	if !skipEtcd() {
		if err := parallel(existing, 16, func(i int) error {
			return call(c, "POST", etcd.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("pre/%d", i)), "lease": leases[0], "value": b64("x")}, nil)
		}); err != nil {
			t.Fatal(err)
		}
		n5 = runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd", append([]string{"c5k"}, leases...)...)
	}
	// The same in sessions, one per wrk thread, as etcd's campaigns share
	// a lease per thread: a campaign is then one transaction, no grant.
	// In rounds (ELECTOR_BENCH_ROUNDS), each elector's campaigns and then
	// etcd's own beside them, the median round of each counting: etcd's
	// own campaign moves by a third between loads a minute apart on a
	// small machine, so one load of each is a ratio of the moment. Each
	// round adds its campaigns' elections to both.
	sessions := make([]string, 0, 2*wrkThreads)
	for range wrkThreads {
		var s struct{ ID, Token string }
		if err := call(c, "POST", srv.URL+"/v1/sessions", nil, map[string]any{"ttl": "1h"}, &s); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s.ID, s.Token)
	}
	var m5ss, n5ss []besideResult
	for r := range fleetRounds(t) {
		tag := fmt.Sprintf("c5ks%d", r)
		etcdProfileDuring(t, etcd.URL, fmt.Sprintf("etcd-campaign5ks%d", r), d, func() {
			m5ss = append(m5ss, measureBeside(t, etcd, func() wrkResult {
				return runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector-session", append([]string{tag}, sessions...)...)
			}))
		})
		if !skipEtcd() {
			n5ss = append(n5ss, measureBeside(t, etcd, func() wrkResult {
				return runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd", append([]string{tag}, leases...)...)
			}))
		}
	}
	m5s, m5sBeside := medianBeside(m5ss)
	n5s, _ := medianBeside(n5ss)
	right := "201"
	if _, err := electorCampaign(c, srv.URL, "after-load", "a", "1h"); err != nil {
		right = short(err.Error())
	}
	// Last, as its grants leave thousands of leases in etcd.
	var floor []floorLoad
	if !skipEtcd() {
		floor = etcdFloor(t, etcd, d)
		// etcd's campaign with the grant a candidate of its own TTL
		// needs, as each of elector's campaigns makes (after the floor,
		// whose figures predate it, as it leaves its leases too).
		n5g = runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd-grant", "g5k")
	}

	var b strings.Builder
	name := "elector serve (etcd backend)"
	tb := &table{title: fmt.Sprintf("etcd backend, leader reads: %d elections of %d candidates, %d connections", elections, candidates/elections, conns)}
	tb.add("system", "reads/s", "p50", "p99", "non-2xx", "vs etcd leader", "share of ceiling", "server CPU / request")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/leader`", perSecond(er), ms(er.p50()), ms(er.p99()), fails(er), "1.00×", "–", us(er))
	tb.add(name, perSecond(rd), ms(rd.p50()), ms(rd.p99()), fails(rd), ratio(rd.rate(), er.rate()), pct(rd.rate(), ceil.rate()), us(rd))
	tb.add(name+", `consistency=local`", perSecond(lr), ms(lr.p50()), ms(lr.p99()), fails(lr), ratio(lr.rate(), er.rate()), pct(lr.rate(), ceil.rate()), us(lr))
	b.WriteString(tb.String())
	tb = &table{title: fmt.Sprintf("etcd backend, campaigns into fresh elections, %d connections", clients)}
	tb.add("system", "at 0 /s", "p99", "declared upgraded, at 0 /s", "p99", fmt.Sprintf("declared, at %d /s", existing), "p99", "non-2xx", "vs etcd at 0", fmt.Sprintf("vs etcd at %d", existing), "server CPU / request at 0 / declared / at 5,000", "campaign right after")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/campaign`", perSecond(n0), ms(n0.p99()), "–", "–", perSecond(n5), ms(n5.p99()), fails(n0)+" / "+fails(n5), "1.00×", "1.00×", us(n0)+" / – / "+us(n5), "–")
	tb.add(name, perSecond(m0), ms(m0.p99()), perSecond(m0v), ms(m0v.p99()), perSecond(m5), ms(m5.p99()), fails(m0)+" / "+fails(m0v)+" / "+fails(m5),
		ratio(m0.rate(), n0.rate())+" / "+ratio(m0v.rate(), n0.rate()), ratio(m5.rate(), n5.rate()), us(m0)+" / "+us(m0v)+" / "+us(m5), right)
	tb.add(name+", in sessions", "–", "–", "–", "–", perSecond(m5s), ms(m5s.p99()), fails(m5s), "–", ratio(m5s.rate(), n5s.rate())+" (of etcd's rounds, below)", "– / – / "+us(m5s), "–")
	b.WriteString(tb.String())
	fmt.Fprintf(&b, "\nIn sessions: the campaigns at %d of one session per wrk thread (`POST /v1/sessions`, then campaigns naming it), as etcd's share a lease per thread: %s/s, %s of etcd's CPU and %s of wrk's per campaign; etcd's gRPC calls per campaign %s. In %d round(s), each elector's campaigns then etcd's own, the median of each counting: elector %s, etcd %s (%s non-2xx), so %s of etcd's.\n",
		existing, perSecond(m5s), m5sBeside.etcdPer(m5s), m5sBeside.wrkPer(m5s), m5sBeside.callsPer(m5s),
		len(m5ss), ratesOf(m5ss), ratesOf(n5ss), fails(n5s), ratio(m5s.rate(), n5s.rate()))
	fmt.Fprintf(&b, "Like for like: etcd's campaign at %d on a lease of its own granted just before (`/v3/lease/grant`, then `/v3/election/campaign`, as a candidate with a TTL of its own needs): %s/s (%s of etcd's CPU per campaign, %s non-2xx); elector at %d %s of it.\n",
		existing, perSecond(n5g), us(n5g), fails(n5g), existing, ratio(m5.rate(), n5g.rate()))
	fmt.Fprintf(&b, "Ceiling: `GET /healthz` of the same process, %d connections: %s/s (p99 %s, %s non-2xx, %s of CPU per request, wrk %s).\n",
		conns, perSecond(ceil), ms(ceil.p99()), fails(ceil), us(ceil), ceilBeside.wrkPer(ceil))
	fmt.Fprintf(&b, "Floor under the ceiling: net/http alone (bench/barehttp: elector serve's server settings, no router, middleware or backend, the same answer), %d connections: %s/s (p99 %s, %s of CPU per request, wrk %s); the ceiling is %s of it, the local reads %s, and 4× etcd's leader read would be %s.\n",
		conns, perSecond(bareRes), ms(bareRes.p99()), us(bareRes), bareBeside.wrkPer(bareRes), pct(ceil.rate(), bareRes.rate()), pct(lr.rate(), bareRes.rate()), pct(4*er.rate(), bareRes.rate()))
	fmt.Fprintf(&b, "Reads: the median of %d round(s), each elector's reads, local reads, ceiling, floor, then etcd's reads; rounds: reads %s, local reads %s, ceiling %s, floor %s, etcd's reads %s.\n",
		len(rds), ratesOf(rds), ratesOf(lrs), ratesOf(ceils), ratesOf(bares), ratesOf(ers))
	fmt.Fprintf(&b, "elector's server CPU is the gateway process alone. Beside it, per request of elector's loads: etcd's process %s (reads), %s (local reads), %s / %s / %s (campaigns at 0 / declared / at %d); wrk %s (reads; %s local; %s for etcd's), %s / %s / %s (campaigns).\n",
		rdBeside.etcdPer(rd), lrBeside.etcdPer(lr), m0Beside.etcdPer(m0), m0vBeside.etcdPer(m0v), m5Beside.etcdPer(m5), existing,
		rdBeside.wrkPer(rd), lrBeside.wrkPer(lr), erBeside.wrkPer(er), m0Beside.wrkPer(m0), m0vBeside.wrkPer(m0v), m5Beside.wrkPer(m5))
	if len(floor) > 0 {
		fmt.Fprintf(&b, "etcd alone under a campaign's requests from bare gRPC clients (8 at a time unless said), one watch: ")
		for i, l := range floor {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(l.String())
		}
		b.WriteString(".\n")
	}
	fmt.Fprintf(&b, "etcd's gRPC calls per request: elector's reads %s; local reads %s; etcd's own reads %s; elector's campaigns at 0 %s; declared %s; at %d %s.\n",
		rdBeside.callsPer(rd), lrBeside.callsPer(lr), erBeside.callsPer(er), m0Beside.callsPer(m0), m0vBeside.callsPer(m0v), existing, m5Beside.callsPer(m5))
	return b.String()
}

// beside is the CPU time that the other processes of a load used during
// it: the etcd process serving the gateway, and wrk.
type beside struct {
	etcd, wrk time.Duration
	calls     map[string]float64 // etcd's gRPC calls begun, by method
}

// besideLoad runs load (one wrk run) and returns the CPU time etcd's
// process pid and wrk used meanwhile (wrk's: the children of this
// process that ended, which during a load is wrk alone).
func besideLoad(tb testing.TB, etcd *etcdServer, load func()) beside {
	tb.Helper()
	children := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
			tb.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	e0, w0, c0 := cpuOf(tb, etcd.pid), children(), etcdCalls(tb, etcd.URL)
	load()
	s := beside{etcd: cpuOf(tb, etcd.pid) - e0, wrk: children() - w0, calls: etcdCalls(tb, etcd.URL)}
	for m, n := range c0 {
		s.calls[m] -= n
	}
	return s
}

// etcdCalls reads etcd's count of gRPC calls begun, by method, from its
// metrics.
func etcdCalls(tb testing.TB, base string) map[string]float64 {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatalf("etcd metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("etcd metrics: %v", err)
	}
	calls := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		rest, ok := strings.CutPrefix(line, "grpc_server_started_total{")
		if !ok {
			continue
		}
		_, m, _ := strings.Cut(rest, `grpc_method="`)
		m, _, _ = strings.Cut(m, `"`)
		var n float64
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			_, _ = fmt.Sscan(rest[i+1:], &n)
		}
		calls[m] += n
	}
	return calls
}

// callsPer is what etcd's gRPC calls of s were per request of r, the
// most frequent first.
func (s beside) callsPer(r wrkResult) string {
	if r.Requests == 0 {
		return "–"
	}
	var parts []string
	for m, n := range s.calls {
		if n/float64(r.Requests) >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", m, n/float64(r.Requests)))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func (s beside) etcdPer(r wrkResult) string { return perRequest(s.etcd, r) }
func (s beside) wrkPer(r wrkResult) string  { return perRequest(s.wrk, r) }

func perRequest(cpu time.Duration, r wrkResult) string {
	if r.Requests == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", float64(cpu.Microseconds())/float64(r.Requests))
}

// etcdProfileDuring is profileDuring that, when profiles are asked for
// (ELECTOR_BENCH_PROFILE), also takes a CPU profile of the etcd process
// at base meanwhile, as <dir>/<name>.etcd.cpu.pprof: etcd's share of the
// gateway's work is in etcd's process.
func etcdProfileDuring(tb testing.TB, base, name string, d time.Duration, load func()) {
	tb.Helper()
	dir := os.Getenv("ELECTOR_BENCH_PROFILE")
	if dir == "" {
		profileDuring(tb, name, d, load)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(1, int(d.Seconds())-1)))
		if err != nil {
			tb.Errorf("etcd profile: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, name+".etcd.cpu.pprof"))
		if err != nil {
			tb.Error(err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	})
	profileDuring(tb, name, d, load)
	wg.Wait()
}

// besideResult is a load's result and what etcd and wrk spent beside it.
type besideResult struct {
	r wrkResult
	b beside
}

// measureBeside runs load, noting what etcd and wrk spend beside it.
func measureBeside(t *testing.T, etcd *etcdServer, load func() wrkResult) besideResult {
	var m besideResult
	m.b = besideLoad(t, etcd, func() { m.r = load() })
	return m
}

// medianBeside returns the round of ms with the median rate (nothing for
// no round: etcd's, left out).
func medianBeside(ms []besideResult) (wrkResult, beside) {
	if len(ms) == 0 {
		return wrkResult{}, beside{}
	}
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b besideResult) int { return cmp.Compare(a.r.rate(), b.r.rate()) })
	m := ms[len(ms)/2]
	return m.r, m.b
}

// ratesOf lists the rates of ms, "–" for none.
func ratesOf(ms []besideResult) string {
	if len(ms) == 0 {
		return "–"
	}
	rs := make([]wrkResult, len(ms))
	for i, m := range ms {
		rs[i] = m.r
	}
	return rates(rs)
}
