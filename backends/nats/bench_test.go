package nats

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// BenchmarkHeartbeatParallel: 300 candidates in 100 elections, heartbeated
// by 32 goroutines cycling through them, straight on the backend (no
// HTTP), with Run running as in a gateway.
func BenchmarkHeartbeatParallel(b *testing.B) {
	e := startServer(b, b.TempDir())
	b.Cleanup(e.Shutdown) // after the backend's cleanup
	be := openB(b, e)
	type cand struct{ election, id, token string }
	var cands []cand
	for i := range 300 {
		c := cand{election: fmt.Sprintf("hb-%d", i%100), id: fmt.Sprintf("node-%d", i), token: gateway.HashToken(gateway.NewToken())}
		if _, err := be.Campaign(context.Background(), c.election, gateway.Candidacy{ID: c.id, TTL: time.Hour, TokenHash: c.token}, gateway.DefaultSettings()); err != nil {
			b.Fatal(err)
		}
		cands = append(cands, c)
	}
	var next atomic.Int64
	b.SetParallelism(16) // 32 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := cands[next.Add(1)%int64(len(cands))]
			if _, err := be.Heartbeat(context.Background(), c.election, c.id, c.token); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "heartbeats/s")
}

// BenchmarkCampaignFresh campaigns into new elections, 8 at a time, with
// 0 and 2,000 elections already stored.
func BenchmarkCampaignFresh(b *testing.B) {
	for _, existing := range []int{0, 2000} {
		b.Run(fmt.Sprintf("elections=%d", existing), func(b *testing.B) {
			e := startServer(b, b.TempDir())
			b.Cleanup(e.Shutdown) // after the backend's cleanup
			be := openB(b, e)
			campaign := func(name string) error {
				_, err := be.Campaign(context.Background(), name, gateway.Candidacy{ID: "a", TTL: time.Hour, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
				return err
			}
			for i := range existing {
				if err := campaign(fmt.Sprintf("old-%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := campaign(fmt.Sprintf("new-%d", next.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "campaigns/s")
		})
	}
}

// openB opens a backend on e, syncing its records in groups as elector
// serve's does, and runs its reconciler until b ends.
func openB(b *testing.B, e *Embedded) *Backend {
	b.Helper()
	nc, err := e.Connect(slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be, err := New(ctx, nc, freshConfig(), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	be.ownConn = true
	be.startGroupCommit(e)
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = be.Run(rctx) }()
	b.Cleanup(func() { rcancel(); <-done; _ = be.Close() })
	return be
}

// BenchmarkHeartbeatElectionSize heartbeats the last of n candidates of
// one election, one at a time, with Run running: the cost should not
// depend on n.
func BenchmarkHeartbeatElectionSize(b *testing.B) {
	for _, n := range []int{3, 1000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			e := startServer(b, b.TempDir())
			b.Cleanup(e.Shutdown) // after the backend's cleanup
			be := openB(b, e)
			var id, token string
			for i := range n {
				id, token = fmt.Sprintf("node-%d", i), gateway.HashToken(gateway.NewToken())
				if _, err := be.Campaign(context.Background(), "size", gateway.Candidacy{ID: id, TTL: time.Hour, TokenHash: token}, gateway.DefaultSettings()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := be.Heartbeat(context.Background(), "size", id, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkElectionParallel reads 100 elections of 3 candidates each, 32
// goroutines at a time, with Run running: the leader-read path under the
// API, linearizable reads coalescing on the read index.
func BenchmarkElectionParallel(b *testing.B) {
	e := startServer(b, b.TempDir())
	b.Cleanup(e.Shutdown) // after the backend's cleanup
	be := openB(b, e)
	for i := range 300 {
		c := gateway.Candidacy{ID: fmt.Sprintf("node-%d", i), TTL: time.Hour, TokenHash: gateway.HashToken(gateway.NewToken())}
		if _, err := be.Campaign(context.Background(), fmt.Sprintf("read-%d", i%100), c, gateway.DefaultSettings()); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism(16) // 32 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := be.Election(context.Background(), fmt.Sprintf("read-%d", next.Add(1)%100)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}
