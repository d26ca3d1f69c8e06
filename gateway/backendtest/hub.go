package backendtest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// loopless is a backend whose loop the suite already runs: a Gateway
// over it runs its hub, and not the backend's loop a second time.
type loopless struct{ gateway.Backend }

// Run waits for ctx to end.
func (loopless) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// bounded is loopless with the backend's gateway.CursorBound.
type bounded struct {
	loopless
	gateway.CursorBound
}

// hubOver returns b without its loop, and with its CursorBound if it has
// one, which the hub uses.
func hubOver(b gateway.Backend) gateway.Backend {
	if cb, ok := b.(gateway.CursorBound); ok {
		return bounded{loopless{b}, cb}
	}
	return loopless{b}
}

// testHubAgreesWithTheBackend runs a Gateway's hub over b and checks that
// subscribers fed by it (new, resumed from the ring, resumed from before
// the ring) get exactly the events a direct backend watch gets, in the
// same order with the same ids.
func testHubAgreesWithTheBackend(t *testing.T, b gateway.Backend) {
	e := name("hub")
	// Events before the hub starts are older than its ring.
	campaign(t, b, e, "early", 30*time.Second)
	head, err := b.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gateway.ParsePosition(head); !ok {
		t.Fatalf("Head %q is in no known form", head)
	}
	gw := gateway.New(hubOver(b), gateway.Config{Logger: slog.New(slog.DiscardHandler), HubEvents: 16})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.True(t, 10*time.Second, "the hub follows the backend", func() bool {
		return gw.CaughtUp(context.Background()) == nil
	})

	// A subscriber cut off before its first event could only resume with
	// "" and miss what came meanwhile, so every subscriber here starts
	// from a cursor, as SSE streams do (from their snapshot's).
	now, err := b.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	direct := watch(t, b, e, now)
	viaHub := watchGateway(t, gw, e, now)
	fromStart := watchGateway(t, gw, e, head) // older than the ring once it fills
	tokens := map[string]string{}
	for i := range 12 {
		id := fmt.Sprintf("c%02d", i)
		tokens[id], _ = campaign(t, b, e, id, 30*time.Second)
	}
	for i := range 6 { // 12 campaigns and 6 resigns: well past a ring of 16
		id := fmt.Sprintf("c%02d", i)
		if err := b.Resign(context.Background(), e, id, tokens[id]); err != nil {
			t.Fatal(err)
		}
	}
	want := direct.wait(t, 20*time.Second, "the direct watch's events", func(ev []gateway.Event) bool {
		return len(ev) >= 18 // 12 joined, 6 left (and begins)
	})
	wantIDs := eventIDs(want)
	for name, rec := range map[string]*recorder{"new subscriber": viaHub, "subscriber from the head": fromStart} {
		got := rec.wait(t, 20*time.Second, name+" catches up", func(ev []gateway.Event) bool { return len(ev) >= len(want) })
		if !slices.Equal(eventIDs(got[:len(want)]), wantIDs) {
			t.Errorf("%s: %v, want %v", name, eventIDs(got), wantIDs)
		}
	}
	// A late subscriber resuming from an id in the middle gets the rest.
	mid := want[len(want)/2].ID
	late := watchGateway(t, gw, e, mid)
	got := late.wait(t, 20*time.Second, "the late subscriber", func(ev []gateway.Event) bool { return len(ev) >= len(want)-len(want)/2-1 })
	if !slices.Equal(eventIDs(got), wantIDs[len(want)/2+1:]) {
		t.Errorf("resumed after %s: %v, want %v", mid, eventIDs(got), wantIDs[len(want)/2+1:])
	}
}

// testHubCatchesUpWhateverTheLastWriteWas runs a Gateway's hub over b
// and checks that it reports itself caught up (what /readyz asks) after a
// write that caused events, after one that changed only settings, and
// after KV writes, which cause none: a hub is caught up when it holds
// every event there is, not when it has seen a write that had no event to
// show it.
func testHubCatchesUpWhateverTheLastWriteWas(t *testing.T, b gateway.Backend) {
	gw := gateway.New(hubOver(b), gateway.Config{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	caughtUp := func(what string) {
		t.Helper()
		eventually.NoError(t, 20*time.Second, what+": the hub caught up", func() error {
			return gw.CaughtUp(context.Background())
		})
	}
	// A subscriber starting from the snapshot taken after each write is
	// accepted by the hub (a cursor is never past the backend's head) and
	// gets the events that follow.
	e := name("caughtup")
	var subscribers []*recorder
	subscribe := func() {
		subscribers = append(subscribers, watchGateway(t, gw, e, snapshot(t, b, e).Cursor))
	}
	caughtUp("at start")
	campaign(t, b, e, "a", 30*time.Second)
	caughtUp("after a campaign")
	subscribe()
	if _, err := b.Configure(context.Background(), e, gateway.Settings{ErrorCooldown: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	caughtUp("after a change of settings")
	subscribe()
	for i := range 3 {
		if _, err := b.Create(context.Background(), fmt.Sprintf("%s/%d", e, i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp("after KV writes")
	subscribe()
	campaign(t, b, e, "b", 30*time.Second)
	for i, rec := range subscribers {
		rec.wait(t, 10*time.Second, fmt.Sprintf("subscriber %d gets b joining", i), func(ev []gateway.Event) bool {
			return slices.ContainsFunc(ev, func(x gateway.Event) bool {
				return x.Type == gateway.EventCandidateJoined && x.Candidate != nil && x.Candidate.ID == "b"
			})
		})
	}
}

// watchGateway records a Gateway watch until the test ends. When the
// watch ends (a subscriber cut off for falling behind the hub's ring, as
// the other subtests' events make it) it resumes from the last id it got,
// as every client must.
func watchGateway(t *testing.T, gw *gateway.Gateway, election, after string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := gw.Watch(ctx, election, after)
	if err != nil {
		cancel()
		t.Fatalf("gateway watch %q after %q: %v", election, after, err)
	}
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for ev := range ch {
				rec.mu.Lock()
				rec.events = append(rec.events, ev)
				after = ev.ID
				rec.mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			if ch, err = gw.Watch(ctx, election, after); err != nil {
				t.Errorf("resuming gateway watch %q after %q: %v", election, after, err)
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

func eventIDs(ev []gateway.Event) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = e.ID
	}
	return out
}
