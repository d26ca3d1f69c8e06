package etcd_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
)

// BenchmarkLeaderRead: leader reads of 100 elections of 3 candidates by
// 32 goroutines, straight on the backend (no HTTP), with a gateway
// running over it (runB): the snapshot (Election) beside the leader alone
// (ElectionLeader), each linearizable.
func BenchmarkLeaderRead(b *testing.B) {
	ms := startCluster(b, 1)
	be := newBackend(b, ms, "bench")
	runB(b, be)
	const elections = 100
	for i := range 3 * elections {
		if _, err := be.Campaign(context.Background(), fmt.Sprintf("e-%d", i%elections), gateway.Candidacy{ID: fmt.Sprintf("n-%d", i), TTL: time.Hour, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings()); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		read func(context.Context, string) (gateway.Election, error)
	}{{"snapshot", be.Election}, {"leader", be.ElectionLeader}} {
		b.Run(r.name, func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ResetTimer()
			cpu := cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e, err := r.read(context.Background(), fmt.Sprintf("e-%d", next.Add(1)%elections))
					if err != nil || e.Leader == nil {
						b.Errorf("%+v, %v", e.Leader, err)
						return
					}
				}
			})
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}

// BenchmarkCampaignFresh: campaigns into new elections, 8 at a time,
// straight on the backend, with a gateway running over it (runB), on a prefix
// as deployed and on one declared upgraded (a campaign into an empty
// election in one transaction), each on a lease of its own and in one
// session (session, session-declared: every campaign on the session's
// lease, as etcd's concurrency.Session campaigns). It reports the
// requests to etcd per campaign (txn/op, grant/op…, the reconciler's and
// the lease pool's included) and the process's CPU per campaign
// (cpu-µs/op: the backend and the embedded etcd member together, which
// share the process).
func BenchmarkCampaignFresh(b *testing.B) {
	ms := startCluster(b, 1)
	var runs atomic.Int64 // each run of a sub-benchmark on a prefix of its own
	for _, session := range []bool{false, true} {
		for _, declared := range []bool{false, true} {
			name := "default"
			if declared {
				name = "declared"
			}
			if session {
				name = "session-" + name
			}
			b.Run(name, func(b *testing.B) {
				benchCampaignFresh(b, ms, fmt.Sprintf("bench-%s-%d", name, runs.Add(1)), declared, session)
			})
		}
	}
}

// benchCampaignFresh is a run of BenchmarkCampaignFresh on prefix.
func benchCampaignFresh(b *testing.B, ms []*member, prefix string, declared, session bool) {
	be := newBackend(b, ms, prefix)
	if declared {
		if err := be.DeclareUpgraded(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	runB(b, be)
	var sid, th string
	if session {
		sid, th = openSession(b, be, time.Hour)
	}
	n, err := be.CountRequests(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.ResetTimer()
	n.Take()
	cpu := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := gateway.Candidacy{ID: "a", TTL: time.Hour, TokenHash: gateway.HashToken(gateway.NewToken())}
			if session {
				c = gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}
			}
			st, err := be.Campaign(context.Background(), fmt.Sprintf("new-%d", next.Add(1)), c, gateway.DefaultSettings())
			if err != nil || st.Candidate.State != gateway.StateLeader {
				b.Errorf("%s, %v", st.Candidate.State, err)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "campaigns/s")
	for what, k := range n.Take() {
		b.ReportMetric(float64(k)/float64(b.N), what+"/op")
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runB runs a gateway over be until the benchmark ends: the backend's
// reconciler, and the hub that follows every election's events, as in
// elector serve.
func runB(b *testing.B, be *etcd.Backend) {
	b.Helper()
	g := gateway.New(be, gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
}
