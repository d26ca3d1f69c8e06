package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/testnet"
)

// memberNet is the network a soak's replicas need, through proxies started
// by the test so that a replica can be cut off and healed. In a cluster
// every route from one `elector serve` to another goes through a proxy,
// one per ordered pair, and a member is cut off from the others in both
// directions; on etcd each replica reaches etcd through a proxy of its
// own, and a replica is cut off from etcd. Nil for a single gateway.
type memberNet struct {
	proxies [][]*testnet.Proxy // proxies[i][j] carries i's route to j
	toEtcd  [][]*testnet.Proxy // toEtcd[i][k] carries replica i's connections to etcd member k
}

// startEtcdMembers starts n gateways on the etcd members whose client URLs
// are etcd, each reaching each member through a proxy of its own.
func startEtcdMembers(t *testing.T, bin string, n int, etcd []string) ([]*gatewayProcess, *memberNet) {
	t.Helper()
	m := &memberNet{toEtcd: make([][]*testnet.Proxy, n)}
	endpoints := make([]string, n)
	for i := range n {
		var eps []string
		for _, e := range etcd {
			p := testnet.NewProxy(t, strings.TrimPrefix(e, "http://"))
			m.toEtcd[i] = append(m.toEtcd[i], p)
			eps = append(eps, "http://"+p.Addr())
		}
		endpoints[i] = strings.Join(eps, ",")
	}
	return startReplicas(t, bin, endpoints), m
}

// startMembers starts n gateways on the embedded backend as startGateway
// does (the same flags); with n > 1 their
// embedded servers route to each other through proxies, and each tells
// the others an address nothing listens on as its own, so that no member
// learns another's real address from the routes' gossip and connects past
// the proxies.
func startMembers(t *testing.T, bin string, n int) ([]*gatewayProcess, *memberNet) {
	t.Helper()
	if n == 1 {
		return []*gatewayProcess{startGateway(t, bin)}, nil
	}
	m := &memberNet{proxies: make([][]*testnet.Proxy, n)}
	listen := make([]string, n)
	for i := range n {
		listen[i] = testnet.FreeAddr(t)
	}
	for i := range n {
		m.proxies[i] = make([]*testnet.Proxy, n)
		for j := range n {
			if i != j {
				m.proxies[i][j] = testnet.NewProxy(t, listen[j])
			}
		}
	}
	nowhere := testnet.FreeAddr(t)
	gws := make([]*gatewayProcess, n)
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, m.proxies[i][j].Addr())
			}
		}
		addr := testnet.FreeAddr(t)
		g := newGatewayProcess(t, bin, addr, "--log-level", "warn", "--limits-writes-per-second", "0",
			"--webhooks-allow-private-networks", "--embedded-data-dir", "data",
			"--embedded-server-name", fmt.Sprintf("member-%d", i+1),
			"--embedded-cluster-listen", listen[i], "--embedded-cluster-advertise", nowhere,
			"--embedded-routes", strings.Join(routes, ","), "--nats-replicas", strconv.Itoa(min(n, 3)))
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Stop)
		gws[i] = g
	}
	for _, g := range gws {
		if err := g.waitReady(time.Minute); err != nil {
			t.Fatalf("%s not ready: %v\n%s", g.URL, err, g.Log())
		}
	}
	return gws, m
}

// setCut cuts member i off (every route to or from it ends, new ones are
// refused), or heals it.
func (m *memberNet) setCut(i int, cut bool) {
	for _, p := range m.routes(i) {
		if cut {
			p.Cut()
		} else {
			p.Heal()
		}
	}
}

// routes returns the proxies that carry member i's routes.
func (m *memberNet) routes(i int) []*testnet.Proxy {
	if m.toEtcd != nil {
		return m.toEtcd[i]
	}
	var ps []*testnet.Proxy
	for j := range m.proxies {
		if j != i {
			ps = append(ps, m.proxies[i][j], m.proxies[j][i])
		}
	}
	return ps
}

// cutKind names the fault of setCut in the soak's table.
func (m *memberNet) cutKind() string {
	if m.toEtcd != nil {
		return "replica cut off from etcd past the TTL, healed"
	}
	return "member cut off from the others past the TTL, healed"
}

// cutMembers cuts, every ten to twenty seconds until ctx ends, one member
// after the other off (from the rest of the cluster, or from etcd) for
// longer than the candidates' TTL, then heals it and waits until its
// gateway is ready again. Its gateway keeps running and taking requests
// meanwhile: it must refuse them (503) rather than tell a stale leader,
// which the checker would find.
// It leaves every member healed.
func (m *memberNet) cutMembers(ctx context.Context, t *testing.T, gws []*gatewayProcess, h *History) {
	if m == nil {
		return
	}
	for n := 0; ; n++ {
		wait := time.NewTimer(10*time.Second + rand.N(10*time.Second))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		i := n % len(gws)
		f := Fault{Kind: m.cutKind(), Target: gws[i].URL, Start: time.Now()}
		m.setCut(i, true)
		cut := time.NewTimer(soakTTL + 2*time.Second)
		<-cut.C
		m.setCut(i, false)
		if err := gws[i].waitReady(time.Minute); err != nil {
			t.Errorf("%s not ready a minute after healing: %v", gws[i].URL, err)
		}
		f.End = time.Now()
		h.Fault(f)
	}
}
