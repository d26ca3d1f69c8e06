package bench

import (
	"fmt"
	"strings"
	"testing"
)

// fleetEtcd: `elector serve` of a release build with the etcd backend, on
// the same etcd 3.4 process that it is compared with, loaded by wrk: leader
// reads of 100 elections (300 candidates) beside etcd's
// /v3/election/leader, 32 connections; and campaigns into fresh elections,
// 8 connections, beside etcd's /v3/election/campaign, at 0 elections, at
// 0 again once the prefix is declared upgraded (p/_elector/version, so a
// campaign into an empty election is one transaction: see the etcd
// backend's version.go), and at 5,000. Sizes that fit a CI run: a few
// minutes with the default 10 s loads.
func fleetEtcd(t *testing.T) string {
	const candidates, elections, conns, clients, existing = 300, 100, 32, 8, 5000
	d := fleetSeconds(t)
	etcd := startEtcd(t)
	c := newClient(16)

	// etcd's own, first: leaders of 100 elections, and campaigns with
	// one lease per wrk thread.
	var etcdReads []wrkRequest
	var er, n0, n5 wrkResult
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
	var rd wrkResult
	profileDuring(t, "etcd-leader", d, func() { rd = wrkCycle(t, srv.URL, srv.cmd.Process.Pid, conns, d, reads) })
	if !skipEtcd() {
		er = wrkCycle(t, etcd.URL, etcd.pid, conns, d, etcdReads)
		n0 = runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd", append([]string{"c0"}, leases...)...)
	}
	var m0, m0v, m5 wrkResult
	profileDuring(t, "etcd-campaign0", d, func() { m0 = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c0") })
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
	profileDuring(t, "etcd-campaign0v", d, func() { m0v = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c0v") })
	if err := parallel(existing, 16, func(i int) error {
		_, err := electorCampaign(c, srv.URL, fmt.Sprintf("pre-%d", i), "a", "1h")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	profileDuring(t, "etcd-campaign5k", d, func() { m5 = runWrk(t, srv.URL, srv.cmd.Process.Pid, clients, d, "elector", "c5k") })
	if !skipEtcd() {
		if err := parallel(existing, 16, func(i int) error {
			return call(c, "POST", etcd.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("pre/%d", i)), "lease": leases[0], "value": b64("x")}, nil)
		}); err != nil {
			t.Fatal(err)
		}
		n5 = runWrk(t, etcd.URL, etcd.pid, clients, d, "etcd", append([]string{"c5k"}, leases...)...)
	}
	right := "201"
	if _, err := electorCampaign(c, srv.URL, "after-load", "a", "1h"); err != nil {
		right = short(err.Error())
	}

	var b strings.Builder
	name := "elector serve (etcd backend)"
	tb := &table{title: fmt.Sprintf("etcd backend, leader reads: %d elections of %d candidates, %d connections", elections, candidates/elections, conns)}
	tb.add("system", "reads/s", "p50", "p99", "non-2xx", "vs etcd leader", "server CPU / request")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/leader`", perSecond(er), ms(er.p50()), ms(er.p99()), fails(er), "1.00×", us(er))
	tb.add(name, perSecond(rd), ms(rd.p50()), ms(rd.p99()), fails(rd), ratio(rd.rate(), er.rate()), us(rd))
	b.WriteString(tb.String())
	tb = &table{title: fmt.Sprintf("etcd backend, campaigns into fresh elections, %d connections", clients)}
	tb.add("system", "at 0 /s", "p99", "declared upgraded, at 0 /s", "p99", fmt.Sprintf("declared, at %d /s", existing), "p99", "non-2xx", "vs etcd at 0", fmt.Sprintf("vs etcd at %d", existing), "server CPU / request at 0 / declared / at 5,000", "campaign right after")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/campaign`", perSecond(n0), ms(n0.p99()), "–", "–", perSecond(n5), ms(n5.p99()), fails(n0)+" / "+fails(n5), "1.00×", "1.00×", us(n0)+" / – / "+us(n5), "–")
	tb.add(name, perSecond(m0), ms(m0.p99()), perSecond(m0v), ms(m0v.p99()), perSecond(m5), ms(m5.p99()), fails(m0)+" / "+fails(m0v)+" / "+fails(m5),
		ratio(m0.rate(), n0.rate())+" / "+ratio(m0v.rate(), n0.rate()), ratio(m5.rate(), n5.rate()), us(m0)+" / "+us(m0v)+" / "+us(m5), right)
	b.WriteString(tb.String())
	b.WriteString("\nelector's server CPU is the gateway process alone; etcd's work for it is in etcd's process.\n")
	return b.String()
}
