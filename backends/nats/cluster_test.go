package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/testnet"
)

// startCluster starts three embedded servers routed to each other, as
// three `elector serve` processes with cluster settings would.
func startCluster(t *testing.T) []*Embedded {
	t.Helper()
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = testnet.FreeAddr(t) // not ":0": an outgoing connection may take that port first
	}
	servers := make([]*Embedded, 3)
	for i := range servers {
		var routes []string
		for j, a := range addrs {
			if j != i {
				routes = append(routes, a)
			}
		}
		e, err := StartEmbedded(EmbeddedConfig{
			DataDir: t.TempDir(), ServerName: fmt.Sprintf("n%d", i),
			ClusterListen: addrs[i], Routes: routes,
		}, slog.New(slog.DiscardHandler)) // route errors while members come and go
		if err != nil {
			t.Fatalf("start n%d: %v", i, err)
		}
		servers[i] = e
		t.Cleanup(e.Shutdown)
	}
	return servers
}

// openWhenReady opens a backend on e with R3 streams, retrying while the
// cluster has no JetStream leader yet, or has one that does not know all
// three members yet ("no suitable peers for placement"), as
// OpenEmbedded does.
func openWhenReady(t *testing.T, e *Embedded, cfg Config) *Backend {
	t.Helper()
	cfg.Replicas = 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b *Backend
	eventually.NoErrorUntil(ctx, t, "a backend on the cluster", func() error {
		nc, err := e.Connect(testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
		defer ocancel()
		if b, err = New(octx, nc, cfg, WithLogger(testLogger(t))); err != nil {
			nc.Close()
			if !errors.Is(err, gateway.ErrUnavailable) && !isNoPeers(err) {
				t.Fatalf("open on cluster: %v", err)
			}
			return err
		}
		return nil
	})
	b.ownConn = true
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConformanceCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	next := 0
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) gateway.Backend {
			next++
			// The storm writes one election a few thousand times in
			// seconds, more than the default history holds, while a
			// watch's consumer on a follower may not have delivered its
			// first record yet: the watch would end, as one that falls
			// behind does ("Watchers that fall behind" in the package
			// doc), and the storm checks an unbroken stream.
			cfg := freshConfig()
			cfg.History = 20 * DefaultHistory
			return openWhenReady(t, servers[next%3], cfg)
		},
		Replica: func(t *testing.T, b gateway.Backend) gateway.Backend {
			next++
			return openWhenReady(t, servers[next%3], b.(*Backend).cfg)
		},
		// The same backend code as on one server, over R3 streams: fewer
		// steps of the model test, for CI's time.
		ModelOps: 60,
	})
	// The KV on R3, on the same cluster: conflicts come back as 10164 there.
	t.Run("KV", func(t *testing.T) {
		backendtest.RunKV(t, func(t *testing.T) gateway.KV { return openWhenReady(t, servers[1], freshConfig()) })
	})
}

// TestClusterSurvivesLosingOneServer kills one of three servers; campaign,
// heartbeat, leader and events go on through the other two.
func TestClusterSurvivesLosingOneServer(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	cfg := freshConfig()
	a := openWhenReady(t, servers[0], cfg)
	b := openWhenReady(t, servers[1], cfg)
	run(t, a)
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 15 * time.Second // outlives the move of stream leaders
	th, _ := campaignT(t, a, "jobs", "node-a", ttl)
	events, err := b.Watch(ctx, "jobs", "")
	if err != nil {
		t.Fatal(err)
	}

	servers[2].Shutdown()
	killed := time.Now()

	// The stream leaders may have been on n2: retry while they move.
	var st gateway.Status
	eventually.NoErrorUntil(ctx, t, "a campaign with one server down", func() error {
		st, err = b.Campaign(ctx, "jobs", gateway.Candidacy{ID: "node-b", TTL: ttl, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
		if err != nil && !errors.Is(err, gateway.ErrUnavailable) {
			t.Fatalf("campaign with one server down: %v", err)
		}
		return err
	})
	t.Logf("campaign succeeded %s after the kill", time.Since(killed).Round(time.Millisecond))
	if st.Candidate.State != gateway.StateFollower || st.Leader == nil || st.Leader.ID != "node-a" {
		t.Fatalf("campaign with one server down: %+v", st)
	}
	if _, err := a.Heartbeat(ctx, "jobs", "node-a", th); err != nil {
		t.Fatalf("heartbeat with one server down: %v", err)
	}
	for {
		select {
		case ev := <-events:
			t.Logf("event %s %s %s after the kill", ev.ID, ev.Type, time.Since(killed).Round(time.Millisecond))
			if ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "node-b" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no candidate.joined event with one server down")
		}
	}
}

// TestShutdownHandsStreamLeadershipToAnotherMember: a member that shuts
// down first moves the leadership of the streams it leads, so that the
// others name a leader for each of them as soon as it is gone, without an
// election after its silence (4 to 9 s), which would stall writes.
func TestShutdownHandsStreamLeadershipToAnotherMember(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	b := openWhenReady(t, servers[0], freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := b.records.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("records stream: %+v, %v", info, err)
	}
	gone := -1
	for i, e := range servers {
		if e.srv.Name() == info.Cluster.Leader {
			gone = i
		}
	}
	if gone < 0 {
		t.Fatalf("no member is named %q", info.Cluster.Leader)
	}
	servers[gone].Shutdown()

	up := servers[(gone+1)%3]
	jsz, err := up.srv.Jsz(&server.JSzOptions{Account: up.srv.GlobalAccount().Name, Streams: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range jsz.AccountDetails {
		for _, st := range a.Streams {
			n++
			if st.Cluster == nil || st.Cluster.Leader == "" || st.Cluster.Leader == servers[gone].srv.Name() {
				t.Errorf("stream %s right after its leader shut down: %+v", st.Name, st.Cluster)
			}
		}
	}
	if n == 0 {
		t.Fatal("no stream seen")
	}
}

// TestShutdownHandsMetaLeadershipToAnotherMember: the member that leads
// JetStream's meta group moves that leadership before it shuts down, so
// that the others have a meta leader as soon as it is gone. Without one,
// every member answers a record read at once with "JetStream system
// temporarily unavailable", and writes fail until the others elect.
func TestShutdownHandsMetaLeadershipToAnotherMember(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	bs := []*Backend{openWhenReady(t, servers[0], freshConfig()), nil, nil}
	cfg := bs[0].cfg
	bs[1], bs[2] = openWhenReady(t, servers[1], cfg), openWhenReady(t, servers[2], cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := bs[0].Campaign(ctx, "meta", gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	gone := -1
	eventually.NoErrorUntil(ctx, t, "a meta leader", func() error {
		for i, e := range servers {
			if e.srv.JetStreamIsLeader() {
				gone = i
				return nil
			}
		}
		return errors.New("no member leads the meta group")
	})
	servers[gone].Shutdown()

	for _, i := range []int{(gone + 1) % 3, (gone + 2) % 3} {
		jsz, err := servers[i].srv.Jsz(&server.JSzOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if jsz.Meta == nil || jsz.Meta.Leader == "" || jsz.Meta.Leader == servers[gone].srv.Name() {
			t.Errorf("meta group as %s sees it right after its leader %s shut down: %+v", servers[i].srv.Name(), servers[gone].srv.Name(), jsz.Meta)
		}
	}
	up := bs[(gone+1)%3]
	if _, found, err := up.load(ctx, "meta"); err != nil || !found {
		t.Errorf("record read right after the meta leader shut down: found %v, %v", found, err)
	}
}

// TestClusterClientsAuthenticateAsBefore: a clustered embedded server lets
// clients in as a server without authentication does, into the global
// account, whatever user they name; only the process itself gets into the
// system account, with the password it made.
func TestClusterClientsAuthenticateAsBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	e := servers[0]
	tests := []struct {
		name   string
		opts   []nats.Option
		system bool // lands in the system account
		refuse bool
	}{
		{name: "NoCredentials"},
		{name: "AnyUser", opts: []nats.Option{nats.UserInfo("someone", "anything")}},
		{name: "SystemUserWrongPassword", opts: []nats.Option{nats.UserInfo(systemUser, "guess")}, refuse: true},
		{name: "SystemUserNoPassword", opts: []nats.Option{nats.UserInfo(systemUser, "")}, refuse: true},
		{name: "SystemUser", opts: []nats.Option{nats.UserInfo(systemUser, e.auth.secret)}, system: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Through the member's client port (a cluster member has one),
			// as any client of the host would come.
			nc, err := nats.Connect(e.srv.ClientURL(), append(tt.opts, nats.NoReconnect())...)
			if tt.refuse {
				if err == nil {
					nc.Close()
					t.Fatal("connected")
				}
				if !errors.Is(err, nats.ErrAuthorization) {
					t.Fatalf("refused with %v, want %v", err, nats.ErrAuthorization)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			// $SYS.REQ.USER.INFO answers with the account the connection is in.
			resp, err := nc.Request("$SYS.REQ.USER.INFO", nil, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var info struct {
				Data struct {
					Account string `json:"account"`
				} `json:"data"`
			}
			if err := json.Unmarshal(resp.Data, &info); err != nil {
				t.Fatalf("%s: %v", resp.Data, err)
			}
			want := e.srv.GlobalAccount().Name
			if tt.system {
				want = e.srv.SystemAccount().Name
			}
			if info.Data.Account != want {
				t.Errorf("account %q, want %q (%s)", info.Data.Account, want, resp.Data)
			}
		})
	}
}

// TestShutdownMovesTheConsumersItHosts: a member that shuts down deletes
// the consumers of one replica it hosts, the watches' of other members,
// so that each reader makes another at once from where it was, rather
// than after two missed heartbeats (4 s), during which its replica's
// view stood still. Right after the shutdown the consumer is gone from
// the cluster (without the deletion it is still assigned to the stopped
// member), and the watch goes on to deliver what is written next.
func TestShutdownMovesTheConsumersItHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	cfg := freshConfig()
	bs := []*Backend{openWhenReady(t, servers[0], cfg), nil, nil}
	cfg = bs[0].cfg
	bs[1], bs[2] = openWhenReady(t, servers[1], cfg), openWhenReady(t, servers[2], cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A tail of member 0's backend whose consumer another member hosts.
	var (
		tl   *tail
		host = -1
	)
	for host < 0 {
		var err error
		if tl, err = bs[0].openTail(ctx, cfg.Stream, jetstream.ConsumerConfig{FilterSubject: bs[0].subj.record("*")}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < 3; i++ {
			if slices.Contains(servers[i].hostedConsumers(servers[i].srv.GlobalAccount().Name, servers[i].srv.Name()), [2]string{cfg.Stream, tl.name}) {
				host = i
			}
		}
		if host < 0 {
			tl.Close()
		}
	}
	name := tl.name
	got := make(chan string, 16)
	go func() {
		defer close(got)
		for {
			m, _, err := tl.Next()
			if err != nil {
				return
			}
			got <- m.Subject()
		}
	}()
	defer tl.Close()

	servers[host].Shutdown()
	up := bs[3-host] // the member neither the tail's nor the stopped one
	if _, err := up.js.Consumer(ctx, cfg.Stream, name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the tail's consumer on the stopped member, right after it stopped: %v; want it deleted", err)
	}

	th := gateway.HashToken(gateway.NewToken())
	if _, err := up.Campaign(ctx, "moved", gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case s, ok := <-got:
			if !ok {
				t.Fatal("the tail ended")
			}
			if s == bs[0].subj.record("moved") {
				return
			}
		case <-ctx.Done():
			t.Fatal("the tail delivered no record written after the member stopped")
		}
	}
}
