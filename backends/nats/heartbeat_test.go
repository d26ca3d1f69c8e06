package nats

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestHeartbeatNeverTellsADeposedLeaderItLeads deposes a leader through
// one replica (an error report, as the begin-deadline webhook makes) and
// heartbeats it through another at once: the answer, served from the
// second replica's view, must already show the leader deposed, whatever
// that view had delivered when the heartbeat arrived.
func TestHeartbeatNeverTellsADeposedLeaderItLeads(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	a := open(t, e, freshConfig())
	b := open(t, e, a.cfg)
	run(t, a)
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 30 {
		election := fmt.Sprintf("depose-%d", i)
		x, _ := campaignT(t, a, election, "x", time.Minute)
		campaignT(t, a, election, "y", time.Minute)
		st, err := a.Heartbeat(ctx, election, "x", x)
		if err != nil || st.Candidate.State != gateway.StateLeader {
			t.Fatalf("round %d: heartbeat of the leader: %+v, %v", i, st, err)
		}
		view := a.running()
		before, _ := view.latest(election)
		if _, err := b.ReportError(ctx, election, "x", x, "begin webhook failed"); err != nil {
			t.Fatalf("round %d: report error: %v", i, err)
		}
		if i%10 == 0 {
			// Make a's view lag for sure: back to where it was before the
			// report, as if its watch had not delivered it yet.
			for {
				if s, _ := view.latest(election); s.seq > before.seq {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatal("a's view never got the report")
				case <-time.After(time.Millisecond):
				}
			}
			view.mu.Lock()
			view.recs[election], view.seen = before.viewed(), before.seq
			delete(view.ahead, election)
			view.mu.Unlock()
		}
		st, err = a.Heartbeat(ctx, election, "x", x)
		if err != nil {
			t.Fatalf("round %d: heartbeat after the error: %v", i, err)
		}
		if st.Candidate.State != gateway.StateError || st.Leader == nil || st.Leader.ID != "y" || st.Term <= 0 {
			t.Fatalf("round %d: deposed leader told %+v (leader %+v), want state error under y", i, st.Candidate, st.Leader)
		}
	}
}

// TestHeartbeatAnswersExpiry: a heartbeat's answer carries the new expiry
// of the candidate and of its leader, read from liveness, not the record.
func TestHeartbeatAnswersExpiry(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	campaignT(t, b, "expiry", "lead", time.Hour)
	y, _ := campaignT(t, b, "expiry", "follow", time.Minute)
	start := time.Now()
	st, err := b.Heartbeat(ctx, "expiry", "follow", y)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Candidate.ExpiresAt; got.Before(start.Add(time.Minute-time.Second)) || got.After(time.Now().Add(time.Minute+time.Second)) {
		t.Errorf("follower expires at %s, want about a minute from %s", got, start)
	}
	if st.Leader == nil || st.Leader.ID != "lead" || st.Leader.ExpiresAt.Before(start.Add(50*time.Minute)) {
		t.Errorf("leader %+v, want lead expiring in about an hour", st.Leader)
	}
}

// TestHeartbeatWritesOnlyWhenItMovesTheExpiry: on a standalone embedded
// server a heartbeat whose candidacy's live message already outlives the
// heartbeat's TTL writes nothing and answers that message's expiry, which
// the server holds; a candidacy without renewal slack (TTL under 100 s)
// and a replica over a connection to a server elsewhere write every
// heartbeat.
func TestHeartbeatWritesOnlyWhenItMovesTheExpiry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		embedded bool
		ttl      time.Duration
		writes   bool
	}{
		{"standalone, an hour", true, time.Hour, false},
		{"standalone, a minute", true, time.Minute, true},
		{"over a connection, an hour", false, time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b *Backend
			if tc.embedded {
				b = openEmbedded(t, EmbeddedConfig{}, Config{})
			} else {
				e := startServer(t, t.TempDir())
				t.Cleanup(e.Shutdown)
				b = open(t, e, freshConfig())
				run(t, b)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			th, _ := campaignT(t, b, "renew", "a", tc.ttl)
			subject := b.subj.alive("renew", nonce(th))
			eventually.NoErrorUntil(ctx, t, "the view to know the candidacy and its live message", func() error {
				r := b.running()
				if r == nil || !r.isFilled() {
					return fmt.Errorf("the view is not filled")
				}
				if s, ok := r.latest("renew"); !ok || s.rec.Find("a") == nil {
					return fmt.Errorf("the view has no candidate a")
				}
				if _, ok := b.live.expiry(subject); !ok {
					return fmt.Errorf("no live message known")
				}
				return nil
			})
			last := func() uint64 {
				t.Helper()
				m, err := b.alive.GetLastMsgForSubject(ctx, subject)
				if err != nil {
					t.Fatal(err)
				}
				return m.Sequence
			}
			for i := range 5 {
				before := last()
				sent := time.Now()
				st, err := b.Heartbeat(ctx, "renew", "a", th)
				if err != nil || st.Candidate.State != gateway.StateLeader {
					t.Fatalf("heartbeat %d: %+v, %v", i, st, err)
				}
				if wrote := last() != before; wrote != tc.writes {
					t.Fatalf("heartbeat %d wrote a liveness message: %t, want %t", i, wrote, tc.writes)
				}
				// What the server holds outlives the heartbeat's TTL from
				// before it was sent, and the answer says when it ends.
				_, exp, alive, err := b.lastBeat(ctx, subject)
				if err != nil || !alive {
					t.Fatalf("heartbeat %d: the live message: alive %t, %v", i, alive, err)
				}
				if exp.Before(sent.Add(tc.ttl)) {
					t.Fatalf("heartbeat %d: the server expires the candidacy at %s, before %s", i, exp, sent.Add(tc.ttl))
				}
				if got := st.Candidate.ExpiresAt; got.Before(sent.Add(tc.ttl)) || got.After(exp) {
					t.Fatalf("heartbeat %d answered expiry %s, want between %s and the server's %s", i, got, sent.Add(tc.ttl), exp)
				}
			}
		})
	}
}

func TestLifeTTLAddsOnePercentInWholeSeconds(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 1500 * time.Millisecond: 2 * time.Second,
		99 * time.Second: 99 * time.Second, 100 * time.Second: 101 * time.Second,
		150 * time.Second: 151 * time.Second, time.Hour: time.Hour + 36*time.Second,
	} {
		if got := lifeTTL(in); got != want {
			t.Errorf("lifeTTL(%s) = %s, want %s", in, got, want)
		}
	}
}
