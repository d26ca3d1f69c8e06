package etcd_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

// holdersOf returns the ids of the holders that replica b reads in
// election e.
func holdersOf(t *testing.T, b *etcd.Backend, e string) []string {
	t.Helper()
	s, err := b.Election(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range s.Holders {
		out = append(out, h.ID)
	}
	return out
}

// holdOnly checks, through every replica in bs, that exactly the holders
// want hold election e and that each candidate of followers (id → token
// hash) is told by its heartbeat that it follows.
func holdOnly(t *testing.T, bs []*etcd.Backend, e string, want []string, followers map[string]string) {
	t.Helper()
	for i, b := range bs {
		if got := holdersOf(t, b, e); !slices.Equal(got, want) {
			t.Fatalf("replica %d: holders %v, want %v", i, got, want)
		}
		for id, th := range followers {
			st, err := b.Heartbeat(context.Background(), e, id, th)
			if err != nil || st.Candidate.State != gateway.StateFollower {
				t.Fatalf("replica %d: heartbeat of %s: %+v, %v; want a follower", i, id, st, err)
			}
		}
	}
}

// beatHolder heartbeats holder id through b and checks that the answer
// says it holds (its own term, if term is not 0); the heartbeat writes its
// promise, so the replicas count its TTL from there.
func beatHolder(t *testing.T, b *etcd.Backend, e, id, th string, term uint64) uint64 {
	t.Helper()
	st, err := b.Heartbeat(context.Background(), e, id, th)
	if err != nil || st.Candidate.State != gateway.StateLeader || (term != 0 && st.Term != term) {
		t.Fatalf("heartbeat of holder %s: %+v, %v; want it holding term %d", id, st, err, term)
	}
	return st.Term
}

// TestEndedHolderHoldsOnlyItsSlot: in an election of two holders, a
// holder ends without saying so (etcd revokes its lease right after a
// heartbeat answered "leader", or the gateway fails it) while the other
// goes on. Its slot is filled only once the promise of that heartbeat has
// lapsed on the clock of the replica that fills it (a replica started
// later counting from its load); the other slot is unaffected: its holder
// is told it holds, and when it resigns the first follower takes its
// slot at once. The promise clock is a fake one the test moves; the
// candidates' leases live in real time.
func TestEndedHolderHoldsOnlyItsSlot(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	tests := []struct {
		name string
		end  func(t *testing.T, b1, b2 *etcd.Backend, prefix, e, id, th string, term uint64) int64
	}{
		{"revoked early", func(t *testing.T, b1, _ *etcd.Backend, prefix, e, id, _ string, _ uint64) int64 {
			return revokeLease(t, b1, leaseOf(t, b1, prefix, e, id))
		}},
		{"failed by the gateway", func(t *testing.T, _, b2 *etcd.Backend, prefix, e, id, th string, term uint64) int64 {
			if st, err := b2.FailLeader(context.Background(), e, id, th, term, "leader.begin was not acknowledged"); err != nil || st.Candidate.State != gateway.StateError {
				t.Fatalf("FailLeader(%s): %+v, %v", id, st, err)
			}
			now, err := b2.Client().Get(context.Background(), prefix+"/_elector/lead/"+e) // a revision at or after the verdict's
			if err != nil {
				t.Fatal(err)
			}
			return now.Header.Revision
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms := startCluster(t, 1)
			fc := newFakeClock()
			const prefix, e = "holders", "two"
			b1, b2 := newClocked(t, ms, prefix, fc), newClocked(t, ms, prefix, fc)
			stop1 := runStoppable(t, b1) // b2 runs no reconciler: it only serves
			ctx := context.Background()
			if _, err := b1.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute, Holders: 2}); err != nil {
				t.Fatal(err)
			}
			events := follow(t, b2, e)
			tha, thb := campaignAs(t, b1, e, "a", ttl), campaignAs(t, b1, e, "b", ttl)
			thf, thg := campaignAs(t, b1, e, "f", ttl), campaignAs(t, b1, e, "g", ttl)
			keepBeating(t, b1, e, "f", thf)
			keepBeating(t, b1, e, "g", thg)
			ta, tb := beatHolder(t, b1, e, "a", tha, 0), beatHolder(t, b1, e, "b", thb, 0)

			rev := tt.end(t, b1, b2, prefix, e, "a", tha, ta)
			reconciled(t, b1, rev, fc)
			holdOnly(t, []*etcd.Backend{b1, b2}, e, []string{"b"}, map[string]string{"f": thf, "g": thg})
			if s, err := b2.Election(ctx, e); err != nil || !s.HandoverUntil.After(time.Now()) {
				t.Fatalf("a slot held back: handover_until %v, %v; want when a's promise lapses", s.HandoverUntil, err)
			}
			beatHolder(t, b2, e, "b", thb, tb)

			// The other slot: b resigns, f takes its slot at once.
			if err := b2.Resign(ctx, e, "b", thb); err != nil {
				t.Fatal(err)
			}
			holdOnly(t, []*etcd.Backend{b1, b2}, e, []string{"f"}, map[string]string{"g": thg})
			tf := beatHolder(t, b2, e, "f", thf, 0)

			// A replica started half a TTL on counts a's promise from its
			// load. f, holding, heartbeats after each move of the clock.
			stop1()
			fc.Advance(ttl / 2)
			beatHolder(t, b2, e, "f", thf, tf)
			b3 := newClocked(t, ms, prefix, fc)
			runStoppable(t, b3)
			reconciled(t, b3, rev, fc)
			holdOnly(t, []*etcd.Backend{b1, b2, b3}, e, []string{"f"}, map[string]string{"g": thg})
			fc.Advance(ttl / 2) // lapsed for b1 and b2, which held it, not for b3
			beatHolder(t, b2, e, "f", thf, tf)
			reconciled(t, b3, rev, fc)
			holdOnly(t, []*etcd.Backend{b1, b2, b3}, e, []string{"f"}, map[string]string{"g": thg})

			fc.Advance(ttl / 2)
			beatHolder(t, b2, e, "f", thf, tf)
			waitFor(t, "g holds once a's promise lapsed", func() bool { return slices.Equal(holdersOf(t, b3, e), []string{"f", "g"}) })
			tg := beatHolder(t, b2, e, "g", thg, 0)
			var got []gateway.Event
			waitFor(t, "g's leader.begin in the stream", func() bool {
				got = events()
				return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "g" })
			})
			end := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderEnd && ev.Candidate.ID == "a" })
			begin := slices.IndexFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "g" })
			if end < 0 || begin < end || got[begin].Term != tg || tg <= tf || tf <= tb {
				t.Fatalf("events %v: want a's leader.end, then g's leader.begin of term %d after f's %d", got, tg, tf)
			}
			if err := backendtest.CheckHolderEvents(got, 2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestNativeClientHoldsOnlyAtTheHead: with three holders, a native
// concurrency.Election client second in line does not hold (it considers
// itself a follower, as elector says) and the elector candidate behind it
// waits too; once the native client is the head it holds, as it sees for
// itself, and the candidate behind it with it.
func TestNativeClientHoldsOnlyAtTheHead(t *testing.T) {
	t.Parallel()
	x := newInterop(t, "three")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := x.b.Configure(ctx, x.e, gateway.Settings{ErrorCooldown: time.Second, Holders: 3}); err != nil {
		t.Fatal(err)
	}
	events := follow(t, x.b, x.e)
	x.campaign("a", 0)
	n, won := x.native(ctx, "native-1")
	waitLine(t, x.b, x.e, "a:leader", "native-1:follower")
	x.campaign("c", 0)
	waitLine(t, x.b, x.e, "a:leader", "native-1:follower", "c:follower")
	x.nativeSeesLeader(n, "a")
	notWon(t, won, "a holds")

	if err := x.b.Resign(ctx, x.e, "a", x.tok["a"]); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatalf("native campaign: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the native client did not win after a resigned")
	}
	waitLine(t, x.b, x.e, "native-1:leader", "c:leader")
	var got []gateway.Event
	waitFor(t, "c's leader.begin in the stream", func() bool {
		got = events()
		return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "c" })
	})
	if err := backendtest.CheckHolderEvents(got, 3); err != nil {
		t.Fatal(err)
	}
}
