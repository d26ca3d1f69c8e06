package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/gateway"
)

// TestCompareWithEtcd measures elector beside etcd's own HTTP API (its
// JSON gateway) in the same run, on loopback, with the same HTTP client
// settings, and prints Markdown tables with ratios (docs/performance.md
// records a run). It runs only with ELECTOR_BENCH_ETCD=1 and an etcd
// binary (Debian's etcd-server, /usr/bin/etcd); ELECTOR_BENCH_SECONDS sets
// the length of each load (default 5), ELECTOR_BENCH_ONLY the backends
// (memory,nats,nats-cluster,etcd), ELECTOR_LONG_BENCH adds 10,000 subscribers.
//
//	ELECTOR_BENCH_ETCD=1 go test -run TestCompareWithEtcd -v -timeout 30m ./bench/
func TestCompareWithEtcd(t *testing.T) {
	if os.Getenv("ELECTOR_BENCH_ETCD") == "" {
		t.Skip("set ELECTOR_BENCH_ETCD=1 to compare with etcd")
	}
	srv := startEtcd(t)
	t.Logf("etcd %s at %s; %s per load", srv.Version, srv.URL, seconds(t))
	t.Run("heartbeats", func(t *testing.T) { compareHeartbeats(t, srv) })
	t.Run("campaigns", func(t *testing.T) { compareCampaigns(t, srv) })
	t.Run("fanout", func(t *testing.T) { compareFanout(t, srv) })
}

// afterLoad campaigns once into a fresh election and says how the gateway
// answered: it must take campaigns normally right after a load.
func afterLoad(c *http.Client, base, election string) string {
	err := call(c, "POST", base+"/v1/elections/"+election+"/candidates", nil, map[string]any{"id": "after", "ttl": "10s"}, nil)
	if err != nil {
		return short(err.Error())
	}
	return "201"
}

// compareHeartbeats: 300 candidates in 100 elections, 32 connections
// cycling through them, heartbeating; then leader reads of the 100
// elections over the same connections. etcd: 300 leases, each with a key,
// kept alive with POST /v3/lease/keepalive; leaders read with POST
// /v3/election/leader of 100 elections led through /v3/election/campaign.
func compareHeartbeats(t *testing.T, srv *etcdServer) {
	const candidates, elections, conns = 300, 100, 32
	d := seconds(t)
	hb := &table{title: fmt.Sprintf("Heartbeats: %d candidates in %d elections, %d connections", candidates, elections, conns)}
	hb.add("system", "heartbeats/s", "p50", "p99", "failures", "vs etcd keep-alive", "campaign right after")
	lr := &table{title: fmt.Sprintf("Leader reads: %d elections, %d connections", elections, conns)}
	lr.add("system", "reads/s", "p50", "p99", "failures", "vs etcd leader")

	// etcd first: its rate is the denominator.
	c := newClient(conns)
	leases := make([]string, candidates)
	err := parallel(candidates, 8, func(i int) error {
		id, err := etcdLease(c, srv.URL, 60)
		if err != nil {
			return err
		}
		leases[i] = id
		key := fmt.Sprintf("native-hb/e-%03d/%s", i%elections, id)
		if err := call(c, "POST", srv.URL+"/v3/kv/put", nil, map[string]any{"key": b64(key), "value": b64("x"), "lease": id}, nil); err != nil {
			return err
		}
		if i < elections { // the first candidate of each election leads it
			return call(c, "POST", srv.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("native-el/e-%03d", i)), "lease": id, "value": b64("x")}, nil)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keepalive := load(conns, d, func(w, i int) error {
		var out struct {
			Result struct {
				TTL string `json:"TTL"`
			} `json:"result"`
		}
		if err := call(c, "POST", srv.URL+"/v3/lease/keepalive", nil, map[string]any{"ID": leases[(w+conns*i)%candidates]}, &out); err != nil {
			return err
		}
		if out.Result.TTL == "" || out.Result.TTL == "0" {
			return fmt.Errorf("keepalive: lease gone")
		}
		return nil
	})
	leader := load(conns, d, func(w, i int) error {
		var out struct {
			KV *struct{ Key string } `json:"kv"`
		}
		if err := call(c, "POST", srv.URL+"/v3/election/leader", nil, map[string]any{"name": b64(fmt.Sprintf("native-el/e-%03d", (w+conns*i)%elections))}, &out); err != nil {
			return err
		}
		if out.KV == nil {
			return fmt.Errorf("leader: none")
		}
		return nil
	})
	name := "etcd " + srv.Version + " HTTP"
	hb.add(name+" /v3/lease/keepalive", fmt.Sprintf("%.0f", keepalive.rate()), ms(keepalive.pct(50)), ms(keepalive.pct(99)), failures(keepalive), "1.00×", "–")
	lr.add(name+" /v3/election/leader", fmt.Sprintf("%.0f", leader.rate()), ms(leader.pct(50)), ms(leader.pct(99)), failures(leader), "1.00×")

	for _, e := range electors(t, srv.URL, "bench-hb") {
		c := newClient(conns)
		type cand struct{ url, token string }
		cands := make([]cand, candidates)
		err := parallel(candidates, 8, func(i int) error {
			el, id := fmt.Sprintf("e-%03d", i%elections), fmt.Sprintf("node-%03d", i)
			var st struct{ Token string }
			if err := call(c, "POST", e.url+"/v1/elections/"+el+"/candidates", nil, map[string]any{"id": id, "ttl": "60s"}, &st); err != nil {
				return err
			}
			cands[i] = cand{url: e.url + "/v1/elections/" + el + "/candidates/" + id + "/heartbeat", token: st.Token}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: campaign: %v", e.name, err)
		}
		m := load(conns, d, func(w, i int) error {
			x := cands[(w+conns*i)%candidates]
			return call(c, "PUT", x.url, http.Header{api.TokenHeader: {x.token}}, nil, nil)
		})
		hb.add("elector "+e.name, fmt.Sprintf("%.0f", m.rate()), ms(m.pct(50)), ms(m.pct(99)), failures(m), ratio(m.rate(), keepalive.rate()), afterLoad(c, e.url, "after-hb"))
		m = load(conns, d, func(w, i int) error {
			var l struct{ ID string }
			if err := call(c, "GET", fmt.Sprintf("%s/v1/elections/e-%03d/leader", e.url, (w+conns*i)%elections), nil, nil, &l); err != nil {
				return err
			}
			if l.ID == "" {
				return fmt.Errorf("leader: none")
			}
			return nil
		})
		lr.add("elector "+e.name, fmt.Sprintf("%.0f", m.rate()), ms(m.pct(50)), ms(m.pct(99)), failures(m), ratio(m.rate(), leader.rate()))
	}
	t.Log(hb.String() + lr.String())
}

// compareCampaigns: 8 clients campaigning into fresh elections, on a
// fresh system with no election and on one holding 5,000; etcd: POST
// /v3/election/campaign into fresh elections with one lease per client.
func compareCampaigns(t *testing.T, srv *etcdServer) {
	const clients, existing = 8, 5000
	d := seconds(t)
	tb := &table{title: fmt.Sprintf("Campaigns into fresh elections, %d clients", clients)}
	tb.add("system", "at 0 /s", "p99", fmt.Sprintf("at %d /s", existing), "p99", "rate at 5,000 / at 0", "failures", "vs etcd at 5,000", "campaign right after")

	c := newClient(clients)
	leases := make([]string, clients)
	for i := range leases {
		id, err := etcdLease(c, srv.URL, 3600)
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = id
	}
	native := func(prefix string) measured {
		return load(clients, d, func(w, i int) error {
			return call(c, "POST", srv.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("%s/w%d-%d", prefix, w, i)), "lease": leases[w], "value": b64("x")}, nil)
		})
	}
	n0 := native("native-c0")
	if err := parallel(existing, 16, func(i int) error {
		return call(c, "POST", srv.URL+"/v3/election/campaign", nil, map[string]any{"name": b64(fmt.Sprintf("native-c5k/p%d", i)), "lease": leases[i%clients], "value": b64("x")}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	n5 := native("native-c5k")
	tb.add("etcd "+srv.Version+" HTTP /v3/election/campaign", fmt.Sprintf("%.0f", n0.rate()), ms(n0.pct(99)), fmt.Sprintf("%.0f", n5.rate()), ms(n5.pct(99)), ratio(n5.rate(), n0.rate()), failures(n0)+" / "+failures(n5), "1.00×", "–")

	campaigns := func(e elector) measured {
		c := newClient(clients)
		return load(clients, d, func(w, i int) error {
			return call(c, "POST", fmt.Sprintf("%s/v1/elections/w%d-%d/candidates", e.url, w, i), nil, map[string]any{"id": "a", "ttl": "1h"}, nil)
		})
	}
	at0 := electors(t, srv.URL, "bench-c0")
	at5k := electors(t, srv.URL, "bench-c5k")
	for i, e := range at0 {
		m0 := campaigns(e)
		full := at5k[i]
		start := time.Now()
		if err := parallel(existing, 16, func(i int) error {
			_, err := full.be.Campaign(context.Background(), fmt.Sprintf("p%d", i), gateway.Candidacy{ID: "a", TTL: time.Hour, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
			return err
		}); err != nil {
			t.Fatalf("%s: %d elections: %v", e.name, existing, err)
		}
		t.Logf("%s: %d elections made in %s", e.name, existing, time.Since(start).Round(time.Millisecond))
		m5 := campaigns(full)
		tb.add("elector "+e.name, fmt.Sprintf("%.0f", m0.rate()), ms(m0.pct(99)), fmt.Sprintf("%.0f", m5.rate()), ms(m5.pct(99)), ratio(m5.rate(), m0.rate()), failures(m0)+" / "+failures(m5), ratio(m5.rate(), n5.rate()), afterLoad(newClient(1), full.url, "after-campaigns"))
	}
	t.Log(tb.String())
}
