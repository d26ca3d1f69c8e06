package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/testnet"
)

// proxiedCluster is three embedded servers whose routes all go through
// proxies, one per ordered pair of members, so that a test can cut one
// member off from the others in both directions.
type proxiedCluster struct {
	servers []*Embedded
	proxies [3][3]*testnet.Proxy // proxies[i][j] carries i's route to j
}

// startProxiedCluster starts three members, n0 to n2. Each lists the
// proxies to the other two as its routes, and advertises a cluster
// address nothing listens on, so that no member learns another's real
// address from the gossip of routes and connects to it past the proxies.
func startProxiedCluster(t *testing.T) *proxiedCluster {
	t.Helper()
	pc := &proxiedCluster{servers: make([]*Embedded, 3)}
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = testnet.FreeAddr(t)
	}
	for i := range 3 {
		for j := range 3 {
			if i != j {
				pc.proxies[i][j] = testnet.NewProxy(t, addrs[j])
			}
		}
	}
	nowhere := testnet.FreeAddr(t)
	for i := range pc.servers {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, pc.proxies[i][j].Addr())
			}
		}
		e, err := StartEmbedded(EmbeddedConfig{
			DataDir: t.TempDir(), ServerName: fmt.Sprintf("n%d", i),
			ClusterListen: addrs[i], ClusterAdvertise: nowhere, Routes: routes,
		}, slog.New(slog.DiscardHandler)) // route errors while cut
		if err != nil {
			t.Fatalf("start n%d: %v", i, err)
		}
		t.Cleanup(e.Shutdown)
		pc.servers[i] = e
	}
	return pc
}

// cut takes member i off the network: every route to or from it ends and
// new ones are refused until heal.
func (pc *proxiedCluster) cut(i int) {
	for j := range 3 {
		if j != i {
			pc.proxies[i][j].Cut()
			pc.proxies[j][i].Cut()
		}
	}
}

// heal lets routes to and from member i through again.
func (pc *proxiedCluster) heal(i int) {
	for j := range 3 {
		if j != i {
			pc.proxies[i][j].Heal()
			pc.proxies[j][i].Heal()
		}
	}
}

// read is one read of an election's leader through a cut-off member.
type read struct {
	election   string
	start, end time.Time
	leader     string
	term       uint64
	err        error
}

// TestMemberCutOffServesNoStaleLeader cuts the member leading the
// JetStream meta group and the records stream off from the other two, in
// both directions, while a leader heartbeats through it and another
// resigns through the majority. The cut-off member must stop serving reads
// (gateway.ErrUnavailable) and report itself not ready, rather than go on
// telling the old leader as current; the other two elect the next
// candidate once the old leader's TTL has passed since its last
// heartbeat; terms increase without overlap; and after healing the member
// catches up and serves the same state.
func TestMemberCutOffServesNoStaleLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	pc := startProxiedCluster(t)
	cfg := freshConfig()
	bs := make([]*Backend, 3)
	for i := range bs {
		bs[i] = openWhenReady(t, pc.servers[i], cfg)
		run(t, bs[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	// Cut the member that leads both the JetStream meta group and the
	// records stream: the one that goes on answering reads from its own
	// store longest after the cut (NATS notices a lost quorum only every
	// ten seconds, and a meta leader answers until it has).
	c := -1
	eventually.NoErrorUntil(ctx, t, "the meta group's leader to lead the records stream", func() error {
		c = -1
		for i, e := range pc.servers {
			if e.srv.JetStreamIsLeader() {
				c = i
			}
		}
		if c < 0 {
			return errors.New("no meta leader")
		}
		name := fmt.Sprintf("n%d", c)
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		info, err := bs[0].records.Info(sctx)
		if err != nil {
			return err
		}
		if info.Cluster.Leader == name {
			return nil
		}
		req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, name)
		if _, err := bs[0].nc.RequestWithContext(sctx, jetstream.DefaultAPIPrefix+"STREAM.LEADER.STEPDOWN."+cfg.Stream, []byte(req)); err != nil {
			return fmt.Errorf("asking %s to hand the records stream to %s: %w", info.Cluster.Leader, name, err)
		}
		return fmt.Errorf("%s led the records stream; asked it to hand over to %s", info.Cluster.Leader, name)
	})
	o := (c + 1) % 3
	t.Logf("cutting n%d, the meta group's and the records stream's leader", c)

	const ttlA, ttlB = 3 * time.Second, 30 * time.Second
	thA, stA := campaignT(t, bs[c], "e", "a", ttlA)
	thB, _ := campaignT(t, bs[o], "e", "b", ttlB)
	if stA.Candidate.State != gateway.StateLeader {
		t.Fatalf("a campaigned first and is %s", stA.Candidate.State)
	}
	termA := stA.Term
	// In election r, the leader attached to the member to be cut resigns
	// through the majority after the cut: its successor leads at once.
	thR1, stR1 := campaignT(t, bs[c], "r", "r1", ttlB)
	campaignT(t, bs[o], "r", "r2", ttlB)

	// a heartbeats through the member to be cut, b through another; each
	// notes when it last sent a heartbeat that succeeded.
	var mu sync.Mutex
	lastOK := map[string]time.Time{}
	beat := func(b *Backend, id, th string, every time.Duration) {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sent := time.Now()
			hctx, hcancel := context.WithTimeout(ctx, every)
			_, err := b.Heartbeat(hctx, "e", id, th)
			hcancel()
			if err == nil {
				mu.Lock()
				lastOK[id] = sent
				mu.Unlock()
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { beat(bs[c], "a", thA, ttlA/3) })
	wg.Go(func() { beat(bs[o], "b", thB, time.Second) })

	pc.cut(c)
	cutAt := time.Now()

	// Reads of the leader through the cut-off member, all along the cut.
	var rmu sync.Mutex
	var reads []read
	readsDone := make(chan struct{})
	rctx, stopReads := context.WithCancel(ctx)
	defer func() { stopReads(); <-readsDone }()
	go func() {
		defer close(readsDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, election := range []string{"e", "r"} {
				r := read{election: election, start: time.Now()}
				sctx, scancel := context.WithTimeout(rctx, time.Second)
				el, err := bs[c].ElectionLeader(sctx, election)
				scancel()
				r.end, r.err, r.term = time.Now(), err, el.Term
				if el.Leader != nil {
					r.leader = el.Leader.ID
				}
				if rctx.Err() != nil {
					return
				}
				rmu.Lock()
				reads = append(reads, r)
				rmu.Unlock()
			}
			select {
			case <-tick.C:
			case <-rctx.Done():
				return
			}
		}
	}()

	// r1 resigns through the majority as soon as it has stream leaders.
	var resigned time.Time
	eventually.NoErrorUntil(ctx, t, "r1 to resign through the majority", func() error {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		if err := bs[o].Resign(sctx, "r", "r1", thR1); err != nil {
			return err
		}
		resigned = time.Now()
		return nil
	})
	t.Logf("r1 resigned through the majority %s after the cut", resigned.Sub(cutAt).Round(time.Millisecond))

	// (a) The cut-off member reports itself not ready.
	eventually.NoErrorUntil(ctx, t, "the cut-off member to fail its readiness check", func() error {
		if err := bs[c].Ping(ctx); err == nil {
			return errors.New("ping succeeds")
		} else if !errors.Is(err, gateway.ErrUnavailable) {
			return fmt.Errorf("ping: %v, want ErrUnavailable", err)
		}
		return nil
	})
	t.Logf("n%d not ready %s after the cut", c, time.Since(cutAt).Round(time.Millisecond))

	// (b) The majority promotes b once a's TTL has passed.
	var promoted time.Time
	var termB uint64
	eventually.NoErrorUntil(ctx, t, "the majority to promote b", func() error {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		el, err := bs[o].ElectionLeader(sctx, "e")
		if err != nil {
			return err
		}
		if el.Leader == nil || el.Leader.ID != "b" {
			return fmt.Errorf("leader %+v", el.Leader)
		}
		promoted, termB = time.Now(), el.Term
		return nil
	})
	t.Logf("b promoted at term %d, seen %s after the cut", termB, promoted.Sub(cutAt).Round(time.Millisecond))
	if termB <= termA {
		t.Fatalf("b leads at term %d, not above a's %d", termB, termA)
	}
	// The step-down rule: a, timing its TTL from the last heartbeat it
	// sent that succeeded, has stopped acting before b is known to lead.
	mu.Lock()
	aLast := lastOK["a"]
	mu.Unlock()
	if !promoted.After(aLast.Add(ttlA)) {
		t.Fatalf("b known to lead at %s, before a's last successful heartbeat (sent %s) plus its TTL", promoted.Format(time.StampMilli), aLast.Format(time.StampMilli))
	}
	// Reads through the cut-off member that start after b's promotion was
	// seen: each must fail as unavailable (it cannot know of b).
	eventually.NoErrorUntil(ctx, t, "three reads through the cut-off member after b's promotion", func() error {
		rmu.Lock()
		defer rmu.Unlock()
		after := 0
		for _, r := range reads {
			if r.start.After(promoted) {
				after++
			}
		}
		if after < 3 {
			return fmt.Errorf("%d reads", after)
		}
		return nil
	})
	stopReads()
	<-readsDone
	for _, r := range reads {
		since := r.start.Sub(cutAt).Round(time.Millisecond)
		switch {
		case r.err != nil && !errors.Is(r.err, gateway.ErrUnavailable):
			t.Errorf("read of %s through the cut-off member %s after the cut: %v, want ErrUnavailable", r.election, since, r.err)
		case r.err != nil:
		case r.election == "e" && r.start.After(promoted):
			t.Errorf("read of e through the cut-off member started %s after b's promotion was seen: leader %q at term %d",
				r.start.Sub(promoted).Round(time.Millisecond), r.leader, r.term)
		case r.election == "e" && (r.leader != "a" || r.term != termA):
			t.Errorf("read of e through the cut-off member %s after the cut: leader %q at term %d", since, r.leader, r.term)
		case r.election == "r" && r.start.After(resigned):
			t.Errorf("read of r through the cut-off member started %s after r1's resignation was acknowledged: leader %q at term %d",
				r.start.Sub(resigned).Round(time.Millisecond), r.leader, r.term)
		case r.election == "r" && (r.leader != "r1" || r.term != stR1.Term):
			t.Errorf("read of r through the cut-off member %s after the cut: leader %q at term %d", since, r.leader, r.term)
		}
	}
	served := 0
	for _, r := range reads {
		if r.err == nil {
			served++
		}
	}
	t.Logf("%d reads through the cut-off member, %d served", len(reads), served)

	// (d) Healed, the member catches up and serves the majority's state.
	pc.heal(c)
	healed := time.Now()
	eventually.NoErrorUntil(ctx, t, "the healed member to serve b as leader", func() error {
		if err := bs[c].Ping(ctx); err != nil {
			return err
		}
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		el, err := bs[c].ElectionLeader(sctx, "e")
		if err != nil {
			return err
		}
		if el.Leader == nil || el.Leader.ID != "b" || el.Term != termB {
			return fmt.Errorf("leader %+v at term %d", el.Leader, el.Term)
		}
		return nil
	})
	t.Logf("n%d serves b again %s after healing", c, time.Since(healed).Round(time.Millisecond))
	// The cluster may still settle after healing (503s from JetStream).
	eventually.NoErrorUntil(ctx, t, "the healed member to serve the majority's state", func() error {
		got, err := bs[c].Election(ctx, "e")
		if err != nil {
			return err
		}
		want, err := bs[o].Election(ctx, "e")
		if err != nil {
			return err
		}
		if got.Term != want.Term || got.Cursor != want.Cursor || ids(got) != ids(want) {
			return fmt.Errorf("healed member serves term %d cursor %s candidates %s; the majority term %d cursor %s candidates %s",
				got.Term, got.Cursor, ids(got), want.Term, want.Cursor, ids(want))
		}
		return nil
	})

	// (c) The whole history, read through the healed member: leaderships
	// never overlap and terms strictly increase.
	events, err := bs[c].Watch(ctx, "e", "0")
	if err != nil {
		t.Fatal(err)
	}
	var history []gateway.Event
	for ev := range events {
		history = append(history, ev)
		if ev.Type == gateway.EventLeaderBegin && ev.Term == termB {
			break
		}
	}
	if err := backendtest.CheckEvents(history); err != nil {
		t.Fatal(err)
	}
	if n := len(history); n == 0 || history[n-1].Type != gateway.EventLeaderBegin || history[n-1].Candidate.ID != "b" {
		t.Fatalf("history through the healed member ends without b's leader.begin: %d events", n)
	}
}

// ids lists an election's candidates in line order.
func ids(e gateway.Election) string {
	var s []string
	for _, c := range e.Candidates {
		s = append(s, c.ID+":"+string(c.State))
	}
	return strings.Join(s, ",")
}
