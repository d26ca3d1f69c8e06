package etcd_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/etcdtest"
)

// BenchmarkFailoverAfterCrash measures how late the next leader begins
// after a leader crashes: each round, a leader's heartbeat is answered
// "leader" and it then stops, a follower keeps heartbeating, and the
// round's lateness is the time from the leader's deadline (when it sent
// that heartbeat, plus its TTL) to the follower's leader.begin on a
// stream. "etcd" is the same on etcd alone, beside it on the same member:
// a concurrency.Election leader whose lease is kept alive once more and
// then left, and the time from that keep-alive plus the TTL to the next
// campaigner's Campaign returning. It reports the median and the worst
// round; run it with -benchtime=Nx for N rounds of TTL (2s) each.
func BenchmarkFailoverAfterCrash(b *testing.B) {
	endpoint := etcdtest.Start(b, "failover")
	be, err := etcd.New(etcd.Config{Endpoints: []string{endpoint}, Prefix: "failover", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() { _ = be.Run(ctx) }()
	const ttl = 2 * time.Second

	b.Run("elector", func(b *testing.B) {
		var late []time.Duration
		for i := range b.N {
			late = append(late, electorFailover(b, be, fmt.Sprintf("crash-%d", i), ttl))
		}
		reportLateness(b, late)
	})
	b.Run("etcd", func(b *testing.B) {
		var late []time.Duration
		for i := range b.N {
			late = append(late, nativeFailover(b, be.Client(), fmt.Sprintf("native/crash-%d", i), ttl))
		}
		reportLateness(b, late)
	})
}

// electorFailover runs one round on be in election e.
func electorFailover(b *testing.B, be *etcd.Backend, e string, ttl time.Duration) time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := be.Watch(ctx, e, "")
	if err != nil {
		b.Fatal(err)
	}
	campaign := func(id string) string {
		th := gateway.HashToken(gateway.NewToken())
		if _, err := be.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, gateway.DefaultSettings()); err != nil {
			b.Fatal(err)
		}
		return th
	}
	thl, thf := campaign("leader"), campaign("follower")
	go func() {
		tick := time.NewTicker(ttl / 6)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = be.Heartbeat(ctx, e, "follower", thf)
			}
		}
	}()
	sent := time.Now()
	if st, err := be.Heartbeat(ctx, e, "leader", thl); err != nil || st.Candidate.State != gateway.StateLeader {
		b.Fatalf("the leader's last heartbeat: %+v, %v", st, err)
	}
	deadline := sent.Add(ttl) // the leader crashes now
	for ev := range w {
		if ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "follower" {
			late := time.Since(deadline)
			_ = be.Resign(ctx, e, "follower", thf)
			return late
		}
	}
	b.Fatal("the watch ended before the follower led")
	return 0
}

// nativeFailover runs one round on etcd alone with cli in election e.
func nativeFailover(b *testing.B, cli *clientv3.Client, e string, ttl time.Duration) time.Duration {
	ctx := context.Background()
	secs := int(ttl / time.Second)
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(secs))
	if err != nil {
		b.Fatal(err)
	}
	if err := concurrency.NewElection(s1, e).Campaign(ctx, "leader"); err != nil {
		b.Fatal(err)
	}
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(secs))
	if err != nil {
		b.Fatal(err)
	}
	defer s2.Close()
	led := make(chan time.Time, 1)
	go func() {
		if err := concurrency.NewElection(s2, e).Campaign(ctx, "follower"); err == nil {
			led <- time.Now()
		}
	}()
	s1.Orphan() // the leader crashes: no more keep-alives, after this last one
	sent := time.Now()
	if _, err := cli.KeepAliveOnce(ctx, s1.Lease()); err != nil {
		b.Fatal(err)
	}
	return (<-led).Sub(sent.Add(ttl))
}

// reportLateness reports the median and the worst of late, in ms.
func reportLateness(b *testing.B, late []time.Duration) {
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(late[len(late)/2]), "ms-late-median")
	b.ReportMetric(ms(late[len(late)-1]), "ms-late-worst")
	b.ReportMetric(0, "ns/op")
}
