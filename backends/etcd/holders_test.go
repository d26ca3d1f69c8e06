package etcd_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
	"github.com/electorhq/elector/internal/eventually"
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
			eventually.True(t, 10*time.Second, "g holds once a's promise lapsed", func() bool { return slices.Equal(holdersOf(t, b3, e), []string{"f", "g"}) })
			tg := beatHolder(t, b2, e, "g", thg, 0)
			var got []gateway.Event
			eventually.True(t, 10*time.Second, "g's leader.begin in the stream", func() bool {
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
	eventually.True(t, 10*time.Second, "c's leader.begin in the stream", func() bool {
		got = events()
		return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "c" })
	})
	if err := backendtest.CheckHolderEvents(got, 3); err != nil {
		t.Fatal(err)
	}
}

// leadOnly is holdOnly for an election of one holder: want ("" for
// nobody) leads, through every replica in bs.
func leadOnly(t *testing.T, bs []*etcd.Backend, e, want string, followers map[string]string) {
	t.Helper()
	for i, b := range bs {
		s, err := b.Election(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Leader; (got == nil) != (want == "") || (got != nil && got.ID != want) {
			t.Fatalf("replica %d: leader %+v, want %q", i, got, want)
		}
	}
	for i, b := range bs {
		for id, th := range followers {
			st, err := b.Heartbeat(context.Background(), e, id, th)
			if err != nil || st.Candidate.State != gateway.StateFollower {
				t.Fatalf("replica %d: heartbeat of %s: %+v, %v; want a follower", i, id, st, err)
			}
		}
	}
}

// TestHandoverWaitsForASlotHeldBack: two holders, a transfer from a to d
// pending, and the holders lowered to one, which ends b's holdership and
// holds its slot until b's promise lapses. When a then hands over, its
// holdership ends, but d does not hold yet: b may still act, and the one
// slot is taken. d holds once b's promise has lapsed on the clock of the
// replica that acknowledges it, as gateway.Record.Handover does.
func TestHandoverWaitsForASlotHeldBack(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	ms := startCluster(t, 1)
	fc := newFakeClock()
	const prefix, e = "handover-held", "two"
	b1, b2 := newClocked(t, ms, prefix, fc), newClocked(t, ms, prefix, fc)
	runStoppable(t, b1)
	ctx := context.Background()
	if _, err := b1.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	events := follow(t, b2, e)
	tha, thb := campaignAs(t, b1, e, "a", ttl), campaignAs(t, b1, e, "b", ttl)
	thd := campaignAs(t, b1, e, "d", ttl)
	keepBeating(t, b1, e, "d", thd)
	keepBeating(t, b1, e, "b", thb)
	beatHolder(t, b1, e, "a", tha, 0)
	if _, err := b2.TransferFrom(ctx, e, "a", "d", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute, Holders: 1}); err != nil {
		t.Fatal(err)
	}
	leadOnly(t, []*etcd.Backend{b1, b2}, e, "a", map[string]string{"b": thb, "d": thd})

	st, err := b2.Handover(ctx, e, "a", tha)
	if err != nil || st.Candidate.State != gateway.StateFollower {
		t.Fatalf("Handover(a): %+v, %v; want a follower", st, err)
	}
	s, err := b1.Election(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := strconv.ParseInt(s.Cursor, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	reconciled(t, b1, rev, fc)
	leadOnly(t, []*etcd.Backend{b1, b2}, e, "", map[string]string{"a": tha, "b": thb, "d": thd})
	if s, err := b2.Election(ctx, e); err != nil || s.Transfer == nil || s.Transfer.To != "d" {
		t.Fatalf("after a handed over: transfer %+v, %v; want d still next", s.Transfer, err)
	}

	fc.Advance(ttl)
	eventually.True(t, 10*time.Second, "d holds once b's promise lapsed", func() bool {
		s, err := b2.Election(ctx, e)
		return err == nil && s.Leader != nil && s.Leader.ID == "d"
	})
	beatHolder(t, b2, e, "d", thd, 0)
	var got []gateway.Event
	eventually.True(t, 10*time.Second, "d's leader.begin in the stream", func() bool {
		got = events()
		return slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "d" })
	})
	end := slices.IndexFunc(got, func(ev gateway.Event) bool {
		return ev.Type == gateway.EventLeaderEnd && ev.Candidate.ID == "a" && ev.Reason == gateway.ReasonTransferred
	})
	if end < 0 || slices.ContainsFunc(got, func(ev gateway.Event) bool { return ev.Type == gateway.EventTransferCancelled }) {
		t.Fatalf("events %v: want a's leader.end (transferred), no transfer cancelled", got)
	}
}

// TestHandoverToANativeTargetBehindAHolder: with two holders, b (not the
// head) hands over to a native client. The native client is not the head
// after the handover (a is), so it does not hold, by its own rule and by
// elector's: it takes the slot once it is the head. Then a resigns: the
// native client holds, and the elector candidate behind it takes the
// other slot.
func TestHandoverToANativeTargetBehindAHolder(t *testing.T) {
	t.Parallel()
	x := newInterop(t, "native-target")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := x.b.Configure(ctx, x.e, gateway.Settings{ErrorCooldown: time.Second, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	x.campaign("a", 0)
	x.campaign("b", 0)
	_, won := x.native(ctx, "native-1")
	waitLine(t, x.b, x.e, "a:leader", "b:leader", "native-1:follower")
	x.campaign("c", 0)
	if _, err := x.b.TransferFrom(ctx, x.e, "b", "native-1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := x.b.Handover(ctx, x.e, "b", x.tok["b"]); err != nil {
		t.Fatal(err)
	}
	waitLine(t, x.b, x.e, "a:leader", "native-1:follower", "c:follower", "b:follower")
	notWon(t, won, "a is the head")

	if err := x.b.Resign(ctx, x.e, "a", x.tok["a"]); err != nil {
		t.Fatal(err)
	}
	waitLine(t, x.b, x.e, "native-1:leader", "c:leader", "b:follower")
	if err := <-won; err != nil {
		t.Fatalf("native campaign: %v", err)
	}
}
