package nats

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestFailedLeaderHoldIsTimedByTheServerAfterItsRecord: FailLeader's
// record holds the next leadership (gateway.Record.Held), and the hold's
// marker is published on the liveness stream after that record, on the
// server's clock, with the failed leader's whole TTL: a heartbeat of the
// failed leader may be answered "leader" until the record is stored. When
// the marker is lost (a crash between the two, or the in-memory liveness
// stream lost), the sweep runs the hold again whole: the next leader
// begins no sooner than a whole TTL after the loss.
func TestFailedLeaderHoldIsTimedByTheServerAfterItsRecord(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx := context.Background()
	const ttl = 3 * time.Second

	fail := func(t *testing.T, election string) (marker *jetstream.RawStreamMsg, events <-chan gateway.Event) {
		t.Helper()
		if _, err := b.Configure(ctx, election, gateway.Settings{ErrorCooldown: time.Minute}); err != nil {
			t.Fatal(err)
		}
		events = watchT(t, b, election)
		ta, a := campaignT(t, b, election, "a", ttl)
		tb, _ := campaignT(t, b, election, "b", time.Minute)
		t.Cleanup(keepBeating(t, b, election, "b", tb))
		if _, err := b.FailLeader(ctx, election, "a", ta, a.Term, "begin timed out"); err != nil {
			t.Fatal(err)
		}
		s, err := b.read(ctx, election)
		if err != nil || len(s.rec.Held) != 1 || s.rec.Held[0].Term != a.Term || s.rec.Holding() != 0 {
			t.Fatalf("after FailLeader: %+v, %v; want nobody leading and a's term %d held", s.rec, err, a.Term)
		}
		rec, err := b.records.GetLastMsgForSubject(ctx, b.subj.record(election))
		if err != nil {
			t.Fatal(err)
		}
		subject := b.subj.timer(election, holdToken(s.rec.Held[0]))
		eventually.True(t, 10*time.Second, "the hold's marker", func() bool {
			marker, err = b.timers.GetLastMsgForSubject(ctx, subject)
			return err == nil
		})
		if marker.Time.Before(rec.Time) {
			t.Fatalf("the hold's marker was stored at %v, before the record that starts the hold (%v)", marker.Time, rec.Time)
		}
		if got := msgTTL(marker.Header.Get(jetstream.MsgTTLHeader)); got != liveTTL(ttl) {
			t.Fatalf("the hold's marker lives %s, want a's whole TTL, %s", got, liveTTL(ttl))
		}
		return marker, events
	}

	t.Run("Marker", func(t *testing.T) {
		t.Parallel()
		marker, events := fail(t, "held")
		ev := nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b" })
		if ev.Reason != gateway.ReasonError || ev.Previous == nil || ev.Previous.ID != "a" {
			t.Fatalf("leader.begin %+v: want b after a's error", ev)
		}
		// The server's clock, which timed the marker, and the test's are one
		// machine's.
		if held := time.Since(marker.Time); held < ttl {
			t.Fatalf("b began %s after the hold's marker was stored; a's TTL is %s", held, ttl)
		}
	})
	t.Run("LostMarker", func(t *testing.T) {
		t.Parallel()
		marker, events := fail(t, "lost")
		if err := b.timers.Purge(ctx, jetstream.WithPurgeSubject(marker.Subject)); err != nil {
			t.Fatal(err)
		}
		lost := time.Now()
		nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b" })
		if held := time.Since(lost); held < ttl {
			t.Fatalf("b began %s after the hold's marker was lost; want a whole TTL (%s) more", held, ttl)
		}
	})
}
