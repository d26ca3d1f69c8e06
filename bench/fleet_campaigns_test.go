package bench

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leaseHex writes etcd's decimal lease id in hex, as concurrency.Election
// names its keys.
func leaseHex(id string) string {
	n, _ := strconv.ParseInt(id, 10, 64)
	return strconv.FormatInt(n, 16)
}

// fleetCampaigns: 8 connections campaigning into fresh elections, at 0
// elections and at 100,000 (one candidate each), beside etcd's campaign
// into fresh elections with one lease per wrk thread; and the resident
// memory of both holding 100,000 elections of one candidate (etcd: one
// shared lease), and after the second load.
func fleetCampaigns(t *testing.T) string {
	const conns, existing = 8, 100_000
	d := fleetSeconds(t)
	etcd := startEtcd(t)
	c := newClient(16)
	var n0, n1 wrkResult
	var etcdRSS, etcdAfter float64
	etcdCount := 0
	if !skipEtcd() {
		leases := make([]string, wrkThreads)
		for i := range leases {
			id, err := etcdLease(c, etcd.URL, 3600)
			if err != nil {
				t.Fatal(err)
			}
			leases[i] = id
		}
		n0 = runWrk(t, etcd.URL, etcd.pid, conns, d, "etcd", append([]string{"c0"}, leases...)...)
		if err := parallel(existing-int(n0.Requests-n0.failures()), 16, func(i int) error {
			return call(c, "POST", etcd.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("pre/%d", i)), "lease": leases[0], "value": b64("x")}, nil)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // let both settle alike before their memory is read
		etcdRSS = rssOf(t, etcd.pid)
		n1 = runWrk(t, etcd.URL, etcd.pid, conns, d, "etcd", append([]string{"c100k"}, leases...)...)
		time.Sleep(5 * time.Second)
		etcdAfter, etcdCount = rssOf(t, etcd.pid), existing+int(n1.Requests-n1.failures())
	}
	// The comparable etcd: a lease per candidate, as elector keeps a TTL
	// per candidate, in an etcd of its own.
	var etcdPerLease float64
	if !skipEtcd() {
		etcdPerLease = etcdMemory(t, startEtcd(t), c, existing, 1)
	}

	srv := startServe(t, "")
	var m0, m1 wrkResult
	profileDuring(t, "campaign0", d, func() { m0 = runWrk(t, srv.URL, srv.cmd.Process.Pid, conns, d, "elector", "c0") })
	preErr := parallel(existing-int(m0.Requests-m0.failures()), 16, func(i int) error {
		_, err := electorCampaign(c, srv.URL, fmt.Sprintf("pre-%d", i), "a", "1h")
		return err
	})
	if preErr != nil {
		t.Errorf("making %d elections: %v", existing, preErr)
	}
	time.Sleep(5 * time.Second)
	rss := srv.rssMiB(t)
	heapProfile(t, "elections100k")
	profileDuring(t, "campaign100k", d, func() { m1 = runWrk(t, srv.URL, srv.cmd.Process.Pid, conns, d, "elector", "c100k") })
	time.Sleep(5 * time.Second)
	after, count := srv.rssMiB(t), existing+int(m1.Requests-m1.failures())
	right := "201"
	if _, err := electorCampaign(c, srv.URL, "after-load", "a", "1h"); err != nil {
		right = short(err.Error())
	}

	var b strings.Builder
	tb := &table{title: fmt.Sprintf("Campaigns into fresh elections, %d connections", conns)}
	tb.add("system", "at 0 /s", "p99", "at 100,000 /s", "p99", "at 100,000 / at 0", "non-2xx", "vs etcd at 100,000", "server CPU / request at 0 / at 100,000", "campaign right after")
	tb.add("etcd "+etcd.Version+" HTTP `/v3/election/campaign`", perSecond(n0), ms(n0.p99()), perSecond(n1), ms(n1.p99()), ratio(n1.rate(), n0.rate()), fails(n0)+" / "+fails(n1), "1.00×", us(n0)+" / "+us(n1), "–")
	tb.add("elector serve (embedded, defaults)", perSecond(m0), ms(m0.p99()), perSecond(m1), ms(m1.p99()), ratio(m1.rate(), m0.rate()), fails(m0)+" / "+fails(m1), ratio(m1.rate(), n1.rate()), us(m0)+" / "+us(m1), right)
	b.WriteString(tb.String())
	tb = &table{title: "Resident memory, elections of one candidate"}
	tb.add("system", "at 100,000 elections", "per election", "after the second load", "elections then", "vs etcd, one shared lease", "vs etcd, a lease each")
	tb.add("etcd "+etcd.Version+", one shared lease (campaigns)", mib(etcdRSS), kib(etcdRSS, existing), mib(etcdAfter), strconv.Itoa(etcdCount), "1.00×", "–")
	tb.add("etcd "+etcd.Version+", a lease and a key per candidate", mib(etcdPerLease), kib(etcdPerLease, existing), "–", strconv.Itoa(existing), "–", "1.00×")
	tb.add("elector serve (embedded, defaults)", mib(rss), kib(rss, existing), mib(after), strconv.Itoa(count), ratio(rss, etcdRSS), ratio(rss, etcdPerLease))
	b.WriteString(tb.String())
	return b.String()
}

// kib is v MiB per n, in KiB.
func kib(v float64, n int) string { return fmt.Sprintf("%.1f KiB", v*1024/float64(n)) }

// fleetMemory: the resident memory of 100,000 elections of 3 candidates
// each; etcd holds a lease and a key per candidate (as
// concurrency.Election makes them).
func fleetMemory(t *testing.T) string {
	const elections, per = 100_000, 3
	n := elections * per
	c := newClient(16)
	etcd, etcdRSS := startEtcd(t), 0.0
	if !skipEtcd() {
		etcdRSS = etcdMemory(t, etcd, c, elections, per)
	}

	srv := startServe(t, "")
	start := time.Now()
	if err := parallel(n, 16, func(i int) error {
		_, err := electorCampaign(c, srv.URL, fmt.Sprintf("e-%06d", i%elections), fmt.Sprintf("c%d", i/elections), "1h")
		return err
	}); err != nil {
		t.Errorf("campaigns: %v", err)
	}
	took := time.Since(start)
	time.Sleep(5 * time.Second)
	rss := srv.rssMiB(t)
	heapProfile(t, "memory")

	tb := &table{title: fmt.Sprintf("Resident memory, %d elections × %d candidates", elections, per)}
	tb.add("system", "resident", "per candidate", "vs etcd")
	tb.add("etcd "+etcd.Version+" (a lease and a key per candidate)", mib(etcdRSS), kib(etcdRSS, n), "1.00×")
	tb.add("elector serve (embedded, defaults)", mib(rss), kib(rss, n), ratio(rss, etcdRSS))
	return tb.String() + fmt.Sprintf("\nThe %d campaigns took %s (%.0f/s, 16 at a time).\n", n, took.Round(time.Second), float64(n)/took.Seconds())
}

// etcdMemory fills etcd with elections × per candidates, each a lease and
// a key, and returns its resident memory then.
func etcdMemory(t *testing.T, etcd *etcdServer, c *http.Client, elections, per int) float64 {
	if err := parallel(elections*per, 16, func(i int) error {
		id, err := etcdLease(c, etcd.URL, 3600)
		if err != nil {
			return err
		}
		return call(c, "POST", etcd.URL+"/v3/kv/put", nil, map[string]any{"key": b64(fmt.Sprintf("mem/e-%06d/%s", i%elections, leaseHex(id))), "value": b64("x"), "lease": id}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	return rssOf(t, etcd.pid)
}
