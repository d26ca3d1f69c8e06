package backendtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// churn makes a fixed series of transitions in an empty election e, whose
// error cooldown outlasts the test: three campaigns, two resignations, an
// error report. It returns how many events they cause.
func churn(t *testing.T, b gateway.Backend, e string) int {
	t.Helper()
	tok := map[string]string{}
	for _, id := range []string{"a", "b", "c"} {
		// Long enough that nobody expires while a slow backend is resumed
		// from every one of the events: an expiry would add an event.
		tok[id], _ = campaign(t, b, e, id, 5*time.Minute)
	}
	resign(t, b, e, "a", tok["a"]) // leader.end, candidate.left, leader.begin(b)
	resign(t, b, e, "c", tok["c"]) // candidate.left
	if _, err := b.ReportError(context.Background(), e, "b", tok["b"], "x"); err != nil {
		t.Fatal(err) // leader.error, leader.end
	}
	// joined(a) begin(a) joined(b) joined(c); end(a) left(a) begin(b);
	// left(c); error(b) end(b)
	return 4 + 3 + 1 + 2
}

func testWatchResume(t *testing.T, b gateway.Backend) {
	e := name("resume")
	snap, err := b.Configure(context.Background(), e, gateway.Settings{ErrorCooldown: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rec := watch(t, b, e, snap.Cursor)
	n := churn(t, b, e)
	all := rec.wait(t, 10*time.Second, "every churn event", func(ev []gateway.Event) bool { return len(ev) >= n })
	if len(all) != n {
		t.Fatalf("got %d events, want %d: %s", len(all), n, describe(all))
	}
	seen := map[string]bool{}
	for _, ev := range all {
		if ev.ID == "" || seen[ev.ID] {
			t.Fatalf("event id %q empty or repeated: %s", ev.ID, describe(all))
		}
		seen[ev.ID] = true
	}
	// Resume after every event at once; then one marker event: a watcher
	// that has the marker has everything before it, so exactly the rest
	// must precede it, with no duplicate and nothing extra.
	rests := make([]*recorder, len(all))
	for k := range all {
		rests[k] = watch(t, b, e, all[k].ID)
	}
	campaign(t, b, e, "marker", 5*time.Minute)
	for k, rest := range rests {
		got := rest.wait(t, 10*time.Second, "the rest and the marker", func(ev []gateway.Event) bool {
			return has(ev, gateway.EventCandidateJoined, "marker", "")
		})
		got = got[:find(got, gateway.EventCandidateJoined, "marker", "")]
		if len(got) != n-k-1 {
			t.Fatalf("resume after event %d: got %s, want %s", k, describe(got), describe(all[k+1:]))
		}
		for i := range got {
			if got[i].ID != all[k+1+i].ID || got[i].Type != all[k+1+i].Type {
				t.Fatalf("resume after event %d: event %d is %s %s, want %s %s", k, i, got[i].ID, got[i].Type, all[k+1+i].ID, all[k+1+i].Type)
			}
		}
	}
	// The global stream replays every election's events since the cursor,
	// those of the tests running beside this one too: a bound, not a
	// measure, generous for a loaded machine.
	global := watch(t, b, "", snap.Cursor)
	got := global.wait(t, time.Minute, "churn on the global stream", func(ev []gateway.Event) bool { return len(filter(ev, e)) >= n })
	if f := filter(got, e); f[0].ID != all[0].ID || f[n-1].ID != all[n-1].ID {
		t.Fatalf("the global stream has other ids: %s vs %s", describe(f), describe(all))
	}
}

func testWatchFilter(t *testing.T, b gateway.Backend) {
	e1, e2 := name("filt-one"), name("filt-two")
	rec := watch(t, b, e1, "")
	campaign(t, b, e2, "x", 10*time.Second)
	campaign(t, b, e1, "y", 10*time.Second)
	got := rec.wait(t, eventWait, "y leads e1", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "y", "") })
	for _, ev := range got {
		if ev.Election != e1 {
			t.Fatalf("watch of %s got an event of %s", e1, ev.Election)
		}
	}
}

func testWatchUnknownCursor(t *testing.T, b gateway.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []string{"999999999999", "not-a-cursor", "-1", strings.Repeat("9", 40)} {
		if _, err := b.Watch(ctx, "", c); !errors.Is(err, gateway.ErrCursorExpired) {
			t.Errorf("watch after %q: %v, want ErrCursorExpired", c, err)
		}
	}
}

func testWatchCloses(t *testing.T, b gateway.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx, name("close"), "")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, open := <-ch:
		for open {
			_, open = <-ch
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel still open 5s after its context ended")
	}
}

func filter(events []gateway.Event, election string) []gateway.Event {
	var out []gateway.Event
	for _, e := range events {
		if e.Election == election {
			out = append(out, e)
		}
	}
	return out
}

func types(events []gateway.Event) string {
	var ts []gateway.EventType
	for _, e := range events {
		ts = append(ts, e.Type)
	}
	return describeTypes(ts)
}

func describeTypes(ts []gateway.EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, " ")
}
