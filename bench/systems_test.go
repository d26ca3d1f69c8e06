package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/electorhq/elector/internal/testnet"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/backends/nats"
	"github.com/electorhq/elector/gateway"
)

// elector is one gateway under comparison: its backend and the base URL
// of its HTTP API.
type elector struct {
	name string
	url  string
	be   gateway.Backend
}

// serveGateway serves be as cmd/elector wires it (gateway.New over the
// backend, api.New over the gateway, the backend's loop running) on
// loopback until tb ends, with cmd/elector's default limits except the
// write rate (off, as in the measurements) and an election cap
// that no run reaches (the check still runs on every campaign).
func serveGateway(tb testing.TB, be gateway.Backend) string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gw := gateway.New(be, gateway.Config{MaxCandidates: 1000, MaxElections: 1_000_000, Logger: quiet})
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	srv := httptest.NewServer(api.New(gw, api.Config{Logger: quiet}))
	tb.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv.URL
}

// electors starts a fresh gateway per backend under comparison: memory,
// embedded NATS (as cmd/elector opens it, in a temp dir), the embedded
// 3-member cluster ("nats-cluster": one gateway over member 1, streams
// replicated on all three; only when ELECTOR_BENCH_ONLY names it) and etcd (the etcd backend on the etcd at
// etcdURL, under prefix). ELECTOR_BENCH_ONLY,
// a comma-separated list of those names, keeps some of them.
func electors(tb testing.TB, etcdURL, prefix string) []elector {
	tb.Helper()
	only := os.Getenv("ELECTOR_BENCH_ONLY")
	want := func(name string) bool { return only == "" || strings.Contains(","+only+",", ","+name+",") }
	var out []elector
	if want("memory") {
		be := memory.New()
		out = append(out, elector{name: "memory", url: serveGateway(tb, be), be: be})
	}
	if want("nats") {
		be, err := nats.OpenEmbedded(context.Background(), nats.EmbeddedConfig{DataDir: tb.TempDir()}, nats.Config{}, nats.WithLogger(quiet))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = be.Close() })
		out = append(out, elector{name: "nats", url: serveGateway(tb, be), be: be})
	}
	if strings.Contains(","+only+",", ",nats-cluster,") { // only when named: six more servers

		be := openCluster(tb)
		out = append(out, elector{name: "nats-cluster", url: serveGateway(tb, be), be: be})
	}
	if want("etcd") {
		be, err := etcd.New(etcd.Config{Endpoints: []string{etcdURL}, Prefix: prefix, Logger: quiet})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = be.Close() })
		out = append(out, elector{name: "etcd", url: serveGateway(tb, be), be: be})
		// The same, with the prefix declared upgraded (every replica runs
		// this version): a campaign into an empty election is one
		// transaction.
		be, err = etcd.New(etcd.Config{Endpoints: []string{etcdURL}, Prefix: prefix + "-declared", Logger: quiet})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = be.Close() })
		if err := be.DeclareUpgraded(context.Background()); err != nil {
			tb.Fatal(err)
		}
		out = append(out, elector{name: "etcd declared upgraded", url: serveGateway(tb, be), be: be})
	}
	return out
}

// b64 encodes a key or value for etcd's JSON gateway.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// prefixEnd is the end of etcd's range of keys starting with p.
func prefixEnd(p string) string {
	b := []byte(p)
	b[len(b)-1]++
	return string(b)
}

// etcdLease grants a lease of ttl seconds through etcd's JSON gateway and
// returns its id as the gateway writes it (a decimal string).
func etcdLease(c *http.Client, base string, ttl int) (string, error) {
	var out struct {
		ID string `json:"ID"`
	}
	err := call(c, "POST", base+"/v3/lease/grant", nil, map[string]any{"TTL": ttl}, &out)
	return out.ID, err
}

// openCluster starts three embedded NATS servers that form one cluster, as
// three `elector serve` processes of configs/cluster-N.yaml do, and returns
// the backend of member 1 (the others are only members): every record and
// liveness message is replicated on all three before it is acknowledged.
func openCluster(tb testing.TB) *nats.Backend {
	tb.Helper()
	addrs := []string{testnet.FreeAddr(tb), testnet.FreeAddr(tb), testnet.FreeAddr(tb)}
	backends := make([]*nats.Backend, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		var routes []string
		for j, a := range addrs {
			if j != i {
				routes = append(routes, "nats://"+a)
			}
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			backends[i], errs[i] = nats.OpenEmbedded(ctx, nats.EmbeddedConfig{
				DataDir: tb.TempDir(), ServerName: fmt.Sprintf("bench-%d", i+1),
				ClusterListen: addrs[i], Routes: routes,
			}, nats.Config{}, nats.WithLogger(quiet))
		})
	}
	wg.Wait()
	for i, b := range backends {
		if b != nil {
			tb.Cleanup(func() { _ = b.Close() })
		}
		if errs[i] != nil {
			tb.Fatalf("cluster member %d: %v", i+1, errs[i])
		}
	}
	return backends[0]
}
