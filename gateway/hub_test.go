package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// counted is a memory backend that counts the watches open on it.
type counted struct {
	*memory.Backend
	opened atomic.Int64 // watches ever opened
	open   atomic.Int64 // watches whose context has not ended
}

func (c *counted) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	ch, err := c.Backend.Watch(ctx, election, after)
	if err != nil {
		return nil, err
	}
	c.opened.Add(1)
	c.open.Add(1)
	context.AfterFunc(ctx, func() { c.open.Add(-1) })
	return ch, nil
}

// hubGateway runs a Gateway over a counted memory backend until the test
// ends, and waits until its hub follows the backend. before, if not nil,
// runs before the hub starts.
func hubGateway(t *testing.T, hubEvents int, before ...func(*gateway.Gateway)) (*gateway.Gateway, *counted) {
	t.Helper()
	b := &counted{Backend: memory.New()}
	gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler), HubEvents: hubEvents})
	for _, f := range before {
		f(gw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.True(t, 10*time.Second, "the hub's watch", func() bool { return b.open.Load() == 1 })
	return gw, b
}

// campaign puts candidates ids into election and returns the events' ids
// as the gateway streams them to an all-elections subscriber.
func campaign(t *testing.T, gw *gateway.Gateway, election string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, _, err := gw.Campaign(context.Background(), election, gateway.CampaignRequest{ID: id, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
}

// collect reads n events from ch.
func collect(t *testing.T, ch <-chan gateway.Event, n int) []gateway.Event {
	t.Helper()
	var out []gateway.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d events", len(out), n)
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

func ids(evs []gateway.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestHubFeedsEverySubscriberFromOneBackendWatch(t *testing.T) {
	gw, b := hubGateway(t, 0)
	ctx := t.Context()
	const n = 1000
	subs := make([]<-chan gateway.Event, n)
	for i := range subs {
		election := ""
		if i%2 == 1 {
			election = "fan"
		}
		ch, err := gw.Watch(ctx, election, "")
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = ch
	}
	campaign(t, gw, "other", "x")
	campaign(t, gw, "fan", "a")
	for i, ch := range subs {
		evs := collect(t, ch, 2)
		want := "candidate.joined leader.begin"
		if i%2 == 0 {
			evs = collect(t, ch, 2) // the other election's two events come first
		}
		if got := fmt.Sprint(evs[0].Type, " ", evs[1].Type); got != want || evs[0].Election != "fan" {
			t.Fatalf("subscriber %d: %s of %q, want %s of fan", i, got, evs[0].Election, want)
		}
	}
	if got := b.opened.Load(); got != 1 {
		t.Errorf("%d subscribers opened %d backend watches, want the hub's 1", n, got)
	}
}

func TestHubResumesFromItsRingWithoutTheBackend(t *testing.T) {
	gw, b := hubGateway(t, 0)
	all, err := gw.Watch(t.Context(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	campaign(t, gw, "ring", "a", "b", "c")
	evs := collect(t, all, 4) // joined a, begin a, joined b, joined c
	ch, err := gw.Watch(t.Context(), "ring", evs[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, ch, 2)
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(evs[2:])) {
		t.Errorf("resumed after %s: %v, want %v", evs[1].ID, ids(got), ids(evs[2:]))
	}
	if n := b.opened.Load(); n != 1 {
		t.Errorf("a resumption within the ring opened %d backend watches beside the hub's", n-1)
	}
}

func TestHubServesAnOldCursorFromTheBackendThenReleasesIt(t *testing.T) {
	// Events written before the hub starts are older than its ring.
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	gw, b := hubGateway(t, 0, func(gw *gateway.Gateway) { campaign(t, gw, "old", names...) })
	all, err := b.Backend.Watch(t.Context(), "", "0")
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, all, 11) // joined n0, begin n0, joined n1…n9

	ch, err := gw.Watch(t.Context(), "old", evs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, ch, 10)
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(evs[1:])) {
		t.Fatalf("resumed after %s: %v, want %v", evs[0].ID, ids(got), ids(evs[1:]))
	}
	// Caught up with the ring: the backend watch is released at once; the
	// hub's stays (the test's own is on the memory backend, not counted).
	eventually.True(t, 10*time.Second, "the catch-up watch to be released", func() bool { return b.open.Load() == 1 })
	campaign(t, gw, "old", "late")
	if e := collect(t, ch, 1)[0]; e.Candidate.ID != "late" {
		t.Errorf("after catching up: %s of %s, want candidate.joined of late", e.Type, e.Candidate.ID)
	}
}

func TestHubCutsOffASlowSubscriberAndNobodyElse(t *testing.T) {
	gw, b := hubGateway(t, 8)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	slow, err := gw.Watch(t.Context(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	fast, err := gw.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// The fast one reads everything, and the writer waits for it after
	// each write, far beyond the ring and the slow one's channel.
	var last atomic.Value
	last.Store("")
	var wg sync.WaitGroup
	wg.Go(func() {
		for e := range fast {
			last.Store(e.ID)
		}
	})
	for i := range 300 {
		campaign(t, gw, fmt.Sprintf("e%d", i/2), fmt.Sprintf("c%d", i))
		head, err := b.Head(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		eventually.True(t, 10*time.Second, "the fast subscriber", func() bool { return last.Load() == head })
	}
	cancel()
	wg.Wait()
	// The slow one never read: it gets what its channel held, then the
	// channel closes, and it resumes from the last id it got.
	var got []string
	for e := range slow {
		got = append(got, e.ID)
	}
	if len(got) == 0 || len(got) >= 300 {
		t.Fatalf("the slow subscriber got %d events before it was cut off, want some but not all", len(got))
	}
	rest, err := gw.Watch(t.Context(), "", got[len(got)-1])
	if err != nil {
		t.Fatalf("resuming the slow subscriber: %v", err)
	}
	if e := collect(t, rest, 1)[0]; !after(t, e.ID, got[len(got)-1]) {
		t.Errorf("resumed after %s with %s", got[len(got)-1], e.ID)
	}
}

// after reports whether event id a comes after b.
func after(t *testing.T, a, b string) bool {
	t.Helper()
	pa, ok1 := gateway.ParsePosition(a)
	pb, ok2 := gateway.ParsePosition(b)
	if !ok1 || !ok2 {
		t.Fatalf("ids %q, %q do not parse", a, b)
	}
	return pa.Compare(pb) > 0
}

func TestHubRefusesCursorsItCannotServe(t *testing.T) {
	gw, _ := hubGateway(t, 0)
	campaign(t, gw, "cur", "a")
	for _, c := range []string{"not-a-cursor", "999999", "7-x"} {
		if _, err := gw.Watch(t.Context(), "cur", c); !errors.Is(err, gateway.ErrCursorExpired) {
			t.Errorf("Watch after %q: %v, want ErrCursorExpired", c, err)
		}
	}
}

func TestHubSubscribersEndWithTheirContext(t *testing.T) {
	gw, b := hubGateway(t, 4)
	campaign(t, gw, "ctx", "a", "b", "c", "d", "e")
	before := b.open.Load()
	ctx, cancel := context.WithCancel(t.Context())
	chans := make([]<-chan gateway.Event, 0, 100)
	for i := range 100 {
		after := ""
		if i%2 == 0 {
			after = "1" // older than the ring: a backend watch each
		}
		ch, err := gw.Watch(ctx, "ctx", after)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	cancel()
	for _, ch := range chans {
		for range ch {
		}
	}
	eventually.True(t, 10*time.Second, "every backend watch to end", func() bool { return b.open.Load() == before })
}

// slowHead is a counted memory backend whose Head waits until released.
type slowHead struct {
	*counted
	asked   chan struct{} // gets a value each time Head is called
	release chan struct{}
}

func (s *slowHead) Head(ctx context.Context) (string, error) {
	select {
	case s.asked <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return s.counted.Head(ctx)
}

// TestSubscribersWaitForAStartingHub: streams that reconnect to a replica
// whose hub has not reached the backend yet wait for it rather than each
// opening a backend watch.
func TestSubscribersWaitForAStartingHub(t *testing.T) {
	b := &slowHead{counted: &counted{Backend: memory.New()}, asked: make(chan struct{}, 1), release: make(chan struct{})}
	gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-b.asked // the hub runs, and has not reached the backend

	const n = 20
	subs := make(chan (<-chan gateway.Event), n)
	for range n {
		go func() {
			ch, err := gw.Watch(t.Context(), "", "")
			if err != nil {
				t.Error(err)
			}
			subs <- ch
		}()
	}
	close(b.release)
	var chans []<-chan gateway.Event
	for range n {
		chans = append(chans, <-subs)
	}
	campaign(t, gw, "late-start", "a")
	for _, ch := range chans {
		collect(t, ch, 2)
	}
	if got := b.opened.Load(); got != 1 {
		t.Errorf("%d streams arriving before the hub started opened %d backend watches, want the hub's 1", n, got)
	}
}
