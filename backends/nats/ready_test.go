package nats

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestPingFailsWhileTheLivenessStreamHasNoLeader: on a three-member
// cluster, the member that leads the liveness stream (and not the records
// stream) stops. Heartbeats cannot be written until the other two elect a
// new leader of the liveness stream, and Ping says so, although the
// records stream's leader still hears from its quorum; once a new leader
// is elected, Ping and heartbeats succeed again.
func TestPingFailsWhileTheLivenessStreamHasNoLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	pc := startProxiedCluster(t)
	servers := pc.servers
	cfg := freshConfig()
	probe := openWhenReady(t, servers[0], cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := func(s jetstream.Stream) string {
		t.Helper()
		var name string
		eventually.NoErrorUntil(ctx, t, "a stream leader", func() error {
			info, err := s.Info(ctx)
			if err != nil {
				return err
			}
			if info.Cluster == nil || info.Cluster.Leader == "" {
				return errors.New("no leader yet")
			}
			name = info.Cluster.Leader
			return nil
		})
		return name
	}
	// Make the two streams' leaders differ: step the records stream's
	// leader down until another member leads it.
	for leader(probe.records) == leader(probe.alive) {
		if _, err := probe.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+cfg.Stream, nil, 5*time.Second); err != nil {
			t.Logf("step down: %v", err)
		}
	}
	victim := slices.IndexFunc(servers, func(e *Embedded) bool { return e.srv.Name() == leader(probe.alive) })
	if victim < 0 {
		t.Fatalf("no server named %s", leader(probe.alive))
	}
	b := openWhenReady(t, servers[(victim+1)%3], cfg)
	run(t, b)
	th, _ := campaignT(t, b, "ready", "node-a", 30*time.Second)
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ping before the stop: %v", err)
	}

	// A crash. A member shut down in order hands the streams it leads to
	// the others first (Server.Shutdown steps its raft leaders down, and a
	// follower may take over within a millisecond), and the liveness
	// stream would not be without a leader at all. Cut off from the
	// others first, it cannot hand anything over.
	stopped := time.Now()
	pc.cut(victim)
	servers[victim].srv.Shutdown()
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second) // as /readyz asks
	err := b.Ping(pctx)
	pcancel()
	heard, herr := b.quorumHeard(ctx)
	if since := time.Since(stopped); since < minElection {
		// Nobody can have been elected yet: the liveness stream has no
		// leader, while the records stream's still has its quorum.
		if !errors.Is(err, gateway.ErrUnavailable) {
			t.Fatalf("ping %s after the liveness stream's leader stopped: %v; want ErrUnavailable", since, err)
		}
		if herr != nil || heard >= minElection {
			t.Fatalf("the records stream lost its quorum too (%s, %v): the test does not show what it should", heard, herr)
		}
		t.Logf("ping %s after the stop: %v", since.Round(time.Millisecond), err)
	} else {
		t.Logf("the machine is too slow to look within %s of the stop (took %s); checking the recovery only", minElection, since)
	}
	eventually.NoErrorUntil(ctx, t, "ping after a new leader of the liveness stream", func() error { return b.Ping(ctx) })
	eventually.NoErrorUntil(ctx, t, "a heartbeat after the new leader", func() error {
		_, err := b.Heartbeat(ctx, "ready", "node-a", th)
		return err
	})
	t.Logf("ready again %s after the stop", time.Since(stopped).Round(time.Millisecond))
}
