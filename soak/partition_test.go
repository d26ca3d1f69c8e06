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

// memberNet is the network between the members of a soak's cluster: every
// route from one `elector serve` to another goes through a proxy started
// by the test, one per ordered pair, so that a member can be cut off from
// the others in both directions and healed. Nil for a single gateway.
type memberNet struct {
	proxies [][]*testnet.Proxy // proxies[i][j] carries i's route to j
}

// startMembers starts n gateways on the embedded backend as startGateways
// does (the same flags); with n > 1 their
// embedded servers route to each other through proxies, and each tells
// the others an address nothing listens on as its own, so that no member
// learns another's real address from the routes' gossip and connects past
// the proxies.
func startMembers(t *testing.T, bin string, n int) ([]*gatewayProcess, *memberNet) {
	t.Helper()
	if n == 1 {
		return startGateways(t, bin, 1), nil
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
		g := &gatewayProcess{t: t, bin: bin, URL: "http://" + addr, dir: t.TempDir(), args: []string{"serve",
			"--listen", addr, "--log-level", "warn", "--limits-writes-per-second", "0",
			"--webhooks-allow-private-networks", "--embedded-data-dir", "data",
			"--embedded-server-name", fmt.Sprintf("member-%d", i+1),
			"--embedded-cluster-listen", listen[i], "--embedded-cluster-advertise", nowhere,
			"--embedded-routes", strings.Join(routes, ","), "--nats-replicas", strconv.Itoa(min(n, 3))}}
		if err := g.start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.stop)
		gws[i] = g
	}
	for _, g := range gws {
		if err := g.waitReady(time.Minute); err != nil {
			t.Fatalf("%s not ready: %v\n%s", g.URL, err, g.Log())
		}
	}
	return gws, m
}

// setCut cuts member i off from the others (every route to or from it
// ends, new ones are refused), or heals it.
func (m *memberNet) setCut(i int, cut bool) {
	for j := range m.proxies {
		if j == i {
			continue
		}
		for _, p := range []*testnet.Proxy{m.proxies[i][j], m.proxies[j][i]} {
			if cut {
				p.Cut()
			} else {
				p.Heal()
			}
		}
	}
}

// cutMembers cuts, every ten to twenty seconds until ctx ends, one member
// after the other off from the rest for longer than the candidates' TTL,
// then heals it and waits until its gateway is ready again. Its gateway
// keeps running and taking requests meanwhile: it must refuse them
// (503) rather than tell a stale leader, which the checker would find.
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
		f := Fault{Kind: "member cut off from the others past the TTL, healed", Target: gws[i].URL, Start: time.Now()}
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
