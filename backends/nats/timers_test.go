package nats

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
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
