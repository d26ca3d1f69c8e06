package nats

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestTimersEndOnTheServersClockNotAReplicas: a replica whose clock runs
// an hour ahead carries the heartbeats of the next leader during a
// handover delay, and of a candidate cooling after an error. With the
// delay and the cooldown judged by replica clocks, its first heartbeat
// ends them at once; here they end only when their markers expire on the
// NATS server, at least the delay after they started in real time.
func TestTimersEndOnTheServersClockNotAReplicas(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	fair := open(t, e, cfg)
	run(t, fair)
	ahead := openWith(t, e, cfg, WithClock(func() time.Time { return time.Now().Add(time.Hour) }))
	const delay = 2 * time.Second
	ctx := context.Background()

	tests := []struct {
		name string
		// start starts the timer through fair and returns the id whose
		// heartbeats go through ahead and the event that ends the timer.
		start func(t *testing.T, election string) (id, th string, ended func(gateway.Event) bool)
	}{
		{"HandoverDelay", func(t *testing.T, election string) (string, string, func(gateway.Event) bool) {
			campaignT(t, fair, election, "a", time.Second) // expires: its heartbeats never come
			th, _ := campaignT(t, fair, election, "b", 10*time.Second)
			return "b", th, func(ev gateway.Event) bool {
				return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b"
			}
		}},
		{"ErrorCooldown", func(t *testing.T, election string) (string, string, func(gateway.Event) bool) {
			th, _ := campaignT(t, fair, election, "a", 10*time.Second)
			if _, err := fair.ReportError(ctx, election, "a", th, "begin hook failed"); err != nil {
				t.Fatal(err)
			}
			return "a", th, func(ev gateway.Event) bool {
				return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "a" && ev.Reason == gateway.ReasonRejoined
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			election := "skew-" + strings.ToLower(tt.name)
			if _, err := fair.Configure(ctx, election, gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			events, err := fair.Watch(wctx, election, "")
			if err != nil {
				t.Fatal(err)
			}
			id, th, ended := tt.start(t, election)
			// The timer's start, on the fair replica's clock (the real one),
			// taken before its marker was published.
			var started time.Time
			for started.IsZero() {
				ev, ok := <-events
				if !ok {
					t.Fatal("watch ended before the timer started")
				}
				if ev.Type == gateway.EventLeaderEnd {
					started = ev.Time
				}
			}
			stop := keepBeating(t, ahead, election, id, th)
			defer stop()
			for {
				ev, ok := <-events
				if !ok {
					t.Fatal("watch ended before the timer did")
				}
				if !ended(ev) {
					continue
				}
				if held := time.Since(started); held < delay {
					t.Fatalf("%s %s after the timer started; it is %s long", ev.Type, held, delay)
				}
				return
			}
		})
	}
}

// openWith is open with options.
func openWith(t *testing.T, e *Embedded, cfg Config, opts ...Option) *Backend {
	t.Helper()
	nc, err := e.Connect(testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, nc, cfg, append([]Option{WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	b.ownConn = true
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// keepBeating heartbeats id through b every 100ms until stopped.
func keepBeating(t *testing.T, b *Backend, election, id, th string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := b.Heartbeat(ctx, election, id, th); err != nil && ctx.Err() == nil {
					t.Errorf("heartbeat %s: %v", id, err)
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// TestLostTimerMarkerRunsTheTimerAgainWhole: a handover delay whose marker
// is gone without a delete marker (the in-memory liveness stream lost with
// a restart of the NATS servers) does not end: the sweep gives it a new
// marker of the full delay, so the next leader begins no sooner than a
// whole delay after the delay would have ended. (A delay longer than the
// sweep's grace and interval together tells that from ending the delay
// when the sweep finds the marker gone.)
func TestLostTimerMarkerRunsTheTimerAgainWhole(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx := context.Background()
	const delay = 4 * time.Second
	if _, err := b.Configure(ctx, "lost", gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}); err != nil {
		t.Fatal(err)
	}
	events := watchT(t, b, "lost")
	campaignT(t, b, "lost", "a", time.Second)
	th, _ := campaignT(t, b, "lost", "b", 10*time.Second)
	defer keepBeating(t, b, "lost", "b", th)()
	nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderEnd })
	subject := handoverSubject(t, b, "lost")
	s, err := b.read(ctx, "lost")
	if err != nil {
		t.Fatal(err)
	}
	until := s.rec.Delays[0].Until // by this process's clock, which is the real one
	if err := b.timers.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		t.Fatal(err)
	}
	nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin })
	if late := time.Since(until); late < delay {
		t.Fatalf("leader.begin %s after the lost delay's end; want a whole delay (%s) more", late, delay)
	}
}

// TestTimerThatEndedWhileNoReplicaRanEndsOnStart: the server writes a
// timer's delete marker while no reconciler runs; nothing is promoted
// meanwhile, and a reconciler started afterwards finds the marker and
// ends the delay.
func TestTimerThatEndedWhileNoReplicaRanEndsOnStart(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	stop := runUntil(b)
	ctx := context.Background()
	if _, err := b.Configure(ctx, "restart", gateway.Settings{ErrorCooldown: time.Second, HandoverDelay: time.Second}); err != nil {
		t.Fatal(err)
	}
	events := watchT(t, b, "restart")
	campaignT(t, b, "restart", "a", time.Second)
	campaignT(t, b, "restart", "b", time.Minute)
	nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderEnd })
	subject := handoverSubject(t, b, "restart")
	stop()
	eventually.True(t, 10*time.Second, "the marker's delete marker", func() bool {
		seq, _, alive, err := b.lastBeat(ctx, subject)
		return err == nil && seq > 0 && !alive
	})
	if el, err := b.ElectionLeader(ctx, "restart"); err != nil || el.Leader != nil || el.HandoverUntil.IsZero() {
		t.Fatalf("with no reconciler: %+v, %v; want the delay still running", el, err)
	}
	defer runUntil(b)()
	ev := nextOf(t, events, func(ev gateway.Event) bool { return ev.Type == gateway.EventLeaderBegin })
	if ev.Candidate.ID != "b" {
		t.Fatalf("leader.begin of %s, want b", ev.Candidate.ID)
	}
}

// watchT watches election's events until the test ends.
func watchT(t *testing.T, b *Backend, election string) <-chan gateway.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := b.Watch(ctx, election, "")
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextOf returns the next event of ch that match accepts, failing the
// test after 15s.
func nextOf(t *testing.T, ch <-chan gateway.Event, match func(gateway.Event) bool) gateway.Event {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch ended")
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no matching event within 15s")
		}
	}
}

// handoverSubject is the liveness subject of election's running handover
// delay's marker, once the marker is known alive.
func handoverSubject(t *testing.T, b *Backend, election string) string {
	t.Helper()
	var subject string
	eventually.True(t, 10*time.Second, "a handover delay with its marker", func() bool {
		s, err := b.read(context.Background(), election)
		if err != nil || len(s.rec.Delays) == 0 {
			return false
		}
		subject = b.subj.timer(election, handoverToken(s.rec.Delays[0]))
		_, _, alive, err := b.lastBeat(context.Background(), subject)
		return err == nil && alive
	})
	return subject
}
