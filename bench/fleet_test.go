package bench

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFleet measures `elector serve` as it is released and configured by
// default (a release build in its own process, the embedded backend, no
// setting changed but where it listens and stores) beside etcd 3.4 (its
// own process, its HTTP/JSON gateway) at fleet scale, loaded by wrk as an
// operator would load it, and prints Markdown tables with the ratios that
// docs/performance.md records. It runs only when ELECTOR_BENCH_FLEET names
// its parts ("all", or a comma-separated list of heartbeats, campaigns,
// memory, failover, rolling, etcd: the last the etcd backend, at smaller
// sizes) and needs etcd (/usr/bin/etcd) and wrk;
// scripts/perf.sh runs it all:
//
//	ELECTOR_BENCH_FLEET=all go test -run TestFleet -v -timeout 90m ./bench/
//
// ELECTOR_BENCH_SECONDS sets the length of each load (default 10),
// ELECTOR_BENCH_ROUNDS how many times each load of heartbeats and reads
// runs (the etcd part's reads and ceiling too), interleaved (the median
// counts; default 1), ELECTOR_BENCH_OUT a
// file the tables are also written to, ELECTOR_BENCH_CONFIG YAML settings
// added to every elector serve (to measure other settings than the
// defaults), ELECTOR_BENCH_BINARY an elector binary to measure instead
// of a build of this tree, and ELECTOR_BENCH_SKIP_ETCD=1 leaves etcd out
// (elector's figures alone, to iterate faster). To profile, build with the pprof tag
// and name where to serve and keep the profiles:
//
//	ELECTOR_BENCH_TAGS=pprof ELECTOR_BENCH_PPROF=127.0.0.1:6060 ELECTOR_BENCH_PROFILE=/tmp/prof \
//	ELECTOR_BENCH_FLEET=heartbeats go test -run TestFleet -v ./bench/
//
// which writes a CPU and an allocation profile of each load of elector
// (heartbeat, leader, healthz, campaign0, campaign100k) and heap profiles
// (elections100k, memory) there, for `go tool pprof`.
func TestFleet(t *testing.T) {
	only := os.Getenv("ELECTOR_BENCH_FLEET")
	if only == "" {
		t.Skip("set ELECTOR_BENCH_FLEET=all (or heartbeats,campaigns,memory,failover,rolling,etcd) to measure at fleet scale")
	}
	want := func(part string) bool {
		return only == "all" || only == "1" || slices.Contains(strings.Split(only, ","), part)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Run of %s, %s per load, load average at start %s.\n", time.Now().Format("2006-01-02 15:04"), fleetSeconds(t), loadAverage())
	parts := []struct {
		name string
		run  func(t *testing.T) string
	}{
		{"heartbeats", fleetHeartbeats},
		{"campaigns", fleetCampaigns},
		{"memory", fleetMemory},
		{"failover", fleetFailover},
		{"rolling", fleetRolling},
		{"etcd", fleetEtcd},
	}
	for _, p := range parts {
		if want(p.name) {
			t.Run(p.name, func(t *testing.T) { report.WriteString(p.run(t)) })
		}
	}
	t.Log("\n" + report.String())
	if out := os.Getenv("ELECTOR_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// skipEtcd reports whether ELECTOR_BENCH_SKIP_ETCD asks to measure
// elector alone (its figures, no ratio), to iterate on it faster.
func skipEtcd() bool { return os.Getenv("ELECTOR_BENCH_SKIP_ETCD") != "" }

// fleetSeconds is how long each load of TestFleet runs:
// ELECTOR_BENCH_SECONDS, default 10.
func fleetSeconds(tb testing.TB) time.Duration {
	if os.Getenv("ELECTOR_BENCH_SECONDS") == "" {
		return 10 * time.Second
	}
	return seconds(tb)
}

// fleetRounds is how many times each load of heartbeats and reads runs:
// ELECTOR_BENCH_ROUNDS, default 1.
func fleetRounds(tb testing.TB) int {
	s := os.Getenv("ELECTOR_BENCH_ROUNDS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		tb.Fatalf("ELECTOR_BENCH_ROUNDS=%q: want a positive integer", s)
	}
	return n
}

// loadAverage is the machine's 1-minute load average, to note the
// conditions of a run.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// median returns the run of rs with the median rate.
func median(rs []wrkResult) wrkResult {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b wrkResult) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	return rs[len(rs)/2]
}

func perSecond(r wrkResult) string { return fmt.Sprintf("%.0f", r.rate()) }

func fails(r wrkResult) string { return strconv.FormatInt(r.failures(), 10) }

func mib(v float64) string { return fmt.Sprintf("%.0f MiB", v) }

// electorCampaign campaigns candidate id into election with ttl and
// returns its token.
func electorCampaign(c *http.Client, base, election, id, ttl string) (string, error) {
	var st struct{ Token string }
	err := call(c, "POST", base+"/v1/elections/"+election+"/candidates", nil, map[string]any{"id": id, "ttl": ttl}, &st)
	return st.Token, err
}

// fleetHeartbeats: 3,000 candidates in 1,000 elections, each request of 32
// connections a different candidate, beside etcd's lease keep-alive of
// 3,000 leases (each with a key); then leader reads of the 1,000
// elections beside etcd's; and the gateway's own ceiling, GET /healthz of
// the same process.
func fleetHeartbeats(t *testing.T) string {
	const candidates, elections, conns = 3000, 1000, 32
	d, rounds := fleetSeconds(t), fleetRounds(t)
	etcd := startEtcd(t)
	c := newClient(16)
	var keepalives, etcdReads []wrkRequest
	leases := make([]string, candidates)
	if err := parallel(candidates, 16, func(i int) error {
		id, err := etcdLease(c, etcd.URL, 3600)
		if err != nil {
			return err
		}
		leases[i] = id
		if i < elections { // the first candidate of each election leads it
			return call(c, "POST", etcd.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("fleet/e-%04d", i)), "lease": id, "value": b64("x")}, nil)
		}
		return call(c, "POST", etcd.URL+"/v3/kv/put", nil, map[string]any{"key": b64(fmt.Sprintf("fleet/e-%04d/%s", i%elections, leaseHex(id))), "value": b64("x"), "lease": id}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	for i, id := range leases {
		keepalives = append(keepalives, wrkRequest{method: "POST", path: "/v3/lease/keepalive", body: fmt.Sprintf(`{"ID":"%s"}`, id)})
		if i < elections {
			etcdReads = append(etcdReads, wrkRequest{method: "POST", path: "/v3/election/leader", body: fmt.Sprintf(`{"name":"%s"}`, b64(fmt.Sprintf("fleet/e-%04d", i)))})
		}
	}

	srv := startServe(t, "")
	var beats, reads []wrkRequest
	tokens := make([]string, candidates)
	if err := parallel(candidates, 16, func(i int) error {
		var err error
		tokens[i], err = electorCampaign(c, srv.URL, fmt.Sprintf("e-%04d", i%elections), fmt.Sprintf("node-%04d", i), "1h")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i, tok := range tokens {
		beats = append(beats, wrkRequest{method: "PUT", path: fmt.Sprintf("/v1/elections/e-%04d/candidates/node-%04d/heartbeat", i%elections, i), token: tok})
		if i < elections {
			reads = append(reads, wrkRequest{method: "GET", path: fmt.Sprintf("/v1/elections/e-%04d/leader", i)})
		}
	}
	health := []wrkRequest{{method: "GET", path: "/healthz"}}
	bare := startBare(t) // the floor under the ceiling: net/http alone

	var ceil, floor, hb, ka, rd, er []wrkResult
	for range rounds {
		profileDuring(t, "healthz", d, func() { ceil = append(ceil, wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, health)) })
		floor = append(floor, wrkCycle(t, bare.URL, bare.cmd.Process.Pid, conns, d, health))
		profileDuring(t, "heartbeat", d, func() { hb = append(hb, wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, beats)) })
		if skipEtcd() {
			ka, er = append(ka, wrkResult{}), append(er, wrkResult{})
		} else {
			ka = append(ka, wrkCycle(t, etcd.URL, etcd.pid, conns, d, keepalives))
		}
		profileDuring(t, "leader", d, func() { rd = append(rd, wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, reads)) })
		if !skipEtcd() {
			er = append(er, wrkCycle(t, etcd.URL, etcd.pid, conns, d, etcdReads))
		}
	}
	after := "201"
	if _, err := electorCampaign(c, srv.URL, "after-load", "a", "1h"); err != nil {
		after = short(err.Error())
	}
	mc, mf, mh, mk, mr, me := median(ceil), median(floor), median(hb), median(ka), median(rd), median(er)

	var b strings.Builder
	tb := &table{title: fmt.Sprintf("Heartbeats: %d candidates in %d elections, each request a different candidate, %d connections", candidates, elections, conns)}
	tb.add("system", "heartbeats/s", "p50", "p99", "non-2xx", "vs etcd keep-alive", "share of ceiling", "server CPU / request")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/lease/keepalive`", perSecond(mk), ms(mk.p50()), ms(mk.p99()), fails(mk), "1.00×", "–", us(mk))
	tb.add("elector serve (embedded, defaults)", perSecond(mh), ms(mh.p50()), ms(mh.p99()), fails(mh), ratio(mh.rate(), mk.rate()), pct(mh.rate(), mc.rate()), us(mh))
	b.WriteString(tb.String())
	tb = &table{title: fmt.Sprintf("Leader reads: %d elections, %d connections", elections, conns)}
	tb.add("system", "reads/s", "p50", "p99", "non-2xx", "vs etcd leader", "share of ceiling", "server CPU / request")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/leader`", perSecond(me), ms(me.p50()), ms(me.p99()), fails(me), "1.00×", "–", us(me))
	tb.add("elector serve (embedded, defaults)", perSecond(mr), ms(mr.p50()), ms(mr.p99()), fails(mr), ratio(mr.rate(), me.rate()), pct(mr.rate(), mc.rate()), us(mr))
	b.WriteString(tb.String())
	fmt.Fprintf(&b, "\nCeiling: `GET /healthz` of the same process, %d connections: %s/s (p99 %s, %s non-2xx, %s of CPU per request). Campaign right after the loads: %s. Median of %d round(s); rounds: heartbeats %s, keep-alives %s, reads %s, etcd reads %s, ceiling %s.\n",
		conns, perSecond(mc), ms(mc.p99()), fails(mc), us(mc), after, rounds, rates(hb), rates(ka), rates(rd), rates(er), rates(ceil))
	fmt.Fprintf(&b, "Floor under the ceiling: net/http alone (bench/barehttp: elector serve's server settings, no router, middleware or backend, the same answer): %s/s (p99 %s, %s of CPU per request; rounds %s); the ceiling is %s of it, the leader reads %s, and 5× etcd's leader read would be %s.\n",
		perSecond(mf), ms(mf.p99()), us(mf), rates(floor), pct(mc.rate(), mf.rate()), pct(mr.rate(), mf.rate()), pct(5*me.rate(), mf.rate()))
	return b.String()
}

// us is the server's CPU time per request of r.
func us(r wrkResult) string {
	if r.Requests == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", r.cpuPerRequest())
}

func pct(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

func rates(rs []wrkResult) string {
	var out []string
	for _, r := range rs {
		out = append(out, perSecond(r))
	}
	return strings.Join(out, ", ")
}
