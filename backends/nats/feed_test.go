package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// nextEvents reads n events of ch, failing t when ctx ends first.
func nextEvents(ctx context.Context, t *testing.T, ch <-chan gateway.Event, n int) []gateway.Event {
	t.Helper()
	var got []gateway.Event
	for len(got) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch ended after %d of %d events", len(got), n)
			}
			got = append(got, ev)
		case <-ctx.Done():
			t.Fatalf("%d of %d events", len(got), n)
		}
	}
	return got
}

// describe is the type and candidate of each event.
func describe(evs []gateway.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s", ev.Type, ev.Candidate.ID))
	}
	return out
}

// waitFeeding waits until b's view feeds watches of every election: it
// is filled, its tail has a consumer (counted by watchFedFromHead), and it
// has delivered every record up to where its tail may have skipped some
// (view.attach). A filled view alone is not enough: one filled on an empty
// stream is filled before its tail has made a consumer or delivered the
// records written since, and a watch made then reads from a tail of its
// own.
func waitFeeding(ctx context.Context, t *testing.T, b *Backend) {
	t.Helper()
	eventually.NoErrorUntil(ctx, t, "the view feeding watches", func() error {
		v := b.running()
		if v == nil || !v.isFilled() {
			return errors.New("not filled")
		}
		if !v.following.Load() {
			return errors.New("its tail has no consumer")
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if !v.orderedKnown || v.seen < v.ordered {
			return fmt.Errorf("seen %d, ordered after %d (known %v)", v.seen, v.ordered, v.orderedKnown)
		}
		return nil
	})
}

// setMaxConsumers sets how many consumers b's records stream takes (-1:
// any number), to hold a view's tail off and let it in again.
func setMaxConsumers(ctx context.Context, t *testing.T, b *Backend, n int) {
	t.Helper()
	info, err := b.records.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	c.MaxConsumers = n
	if _, err := b.js.UpdateStream(ctx, c); err != nil {
		t.Fatalf("max consumers %d: %v", n, err)
	}
}

// watchFedFromHead watches every election from b's Head, failing t when
// the watch makes a consumer of the records stream of its own (it is to
// be fed by the view), and returns it with the Head.
func watchFedFromHead(ctx context.Context, t *testing.T, b *Backend) (<-chan gateway.Event, string) {
	t.Helper()
	before := consumers(t, b)[b.cfg.Stream] // the view's tail
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := b.Watch(ctx, "", head)
	if err != nil {
		t.Fatal(err)
	}
	if n := consumers(t, b)[b.cfg.Stream]; n != before {
		t.Fatalf("%d consumers of the records stream with the watch, %d without: the watch made its own", n, before)
	}
	return ch, head
}

// A watch of every election from Head, as the hub makes it, is fed by the
// view's own tail: the records stream has no consumer for it, and its
// events are the view's records'.
func TestWatchOfEveryElectionFollowsTheView(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	campaignT(t, b, "one", "a", time.Minute)
	waitFeeding(ctx, t, b)
	ch, _ := watchFedFromHead(ctx, t, b)
	campaignT(t, b, "two", "b", time.Minute)
	got := describe(nextEvents(ctx, t, ch, 2))
	if want := []string{"candidate.joined b", "leader.begin b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A watch of every election from an older cursor reads the records up to
// the view's from a tail, then goes on with the view's: every event after
// the cursor once and in order (the cursor's own record's later events
// included), and the tail's consumer is gone once it has caught up.
func TestWatchFromAnOlderCursorCatchesUpThenFollowsTheView(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	campaignT(t, b, "first", "a", time.Minute) // joined a, begin a
	waitFeeding(ctx, t, b)
	before := consumers(t, b)[b.cfg.Stream]
	all, err := b.Watch(ctx, "", "0")
	if err != nil {
		t.Fatal(err)
	}
	first := nextEvents(ctx, t, all, 2)
	cursor := first[0].ID // after "joined a": "begin a" is still to come
	for _, id := range []string{"b", "c", "d"} {
		campaignT(t, b, "e-"+id, id, time.Minute)
	}
	ch, err := b.Watch(ctx, "", cursor)
	if err != nil {
		t.Fatal(err)
	}
	got := describe(nextEvents(ctx, t, ch, 7))
	want := []string{"leader.begin a", "candidate.joined b", "leader.begin b", "candidate.joined c", "leader.begin c", "candidate.joined d", "leader.begin d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events after %s: %q, want %q", cursor, got, want)
	}
	campaignT(t, b, "e-e", "e", time.Minute)
	if got := describe(nextEvents(ctx, t, ch, 2)); fmt.Sprint(got) != fmt.Sprint([]string{"candidate.joined e", "leader.begin e"}) {
		t.Fatalf("events after catching up: %q", got)
	}
	eventually.NoErrorUntil(ctx, t, "the catch-up consumer gone", func() error {
		if n := consumers(t, b)[b.cfg.Stream]; n > before+1 { // +1: the watch from "0", which has its own tail
			return fmt.Errorf("%d consumers, %d before the watches", n, before)
		}
		return nil
	})
}

// A watch of every election fed by the view before the view has delivered
// anything misses no record. The view's consumer is held off here (the
// records stream takes no more consumers) while a campaign and a change of
// settings, which has no event, are written. Made once the stream has
// both, a consumer of the last record per election would deliver the
// change alone, and the watch would find the campaign's record missing
// (a gap where there is none: the watch ends, and cursors before the
// change expire). The view's consumer, first tried while the stream was
// empty, starts at its first record instead: the watch gets every event,
// in order, and goes on.
func TestWatchFedBeforeTheViewDeliversMissesNoRecord(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	b := open(t, e, cfg)
	writer := open(t, e, cfg) // no Run: its writes do not wait for a view
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	maxConsumers := func(n int) { t.Helper(); setMaxConsumers(ctx, t, b, n) }
	if _, err := b.js.CreateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{Name: "held", AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Hour}); err != nil {
		t.Fatal(err)
	}
	maxConsumers(1)
	run(t, b)
	eventually.NoErrorUntil(ctx, t, "the view filled and ordered", func() error {
		v := b.running()
		if v == nil || !v.isFilled() {
			return errors.New("not filled")
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if !v.orderedKnown {
			return errors.New("not ordered")
		}
		return nil
	})
	ch, err := b.Watch(ctx, "", "0")
	if err != nil {
		t.Fatal(err) // a watch not fed by the view could make no consumer here
	}
	campaignT(t, writer, "e1", "a", time.Minute)
	if _, err := writer.Configure(ctx, "e1", gateway.Settings{ErrorCooldown: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	v := b.running()
	v.mu.Lock()
	seen := v.seen
	v.mu.Unlock()
	if seen != 0 {
		t.Fatalf("the view delivered up to %d before its consumer was let in", seen)
	}
	maxConsumers(-1)
	campaignT(t, writer, "e1", "b", time.Minute)
	got := describe(nextEvents(ctx, t, ch, 3))
	if want := []string{"candidate.joined a", "leader.begin a", "candidate.joined b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if err := b.checkCursor(ctx, 1); err != nil {
		t.Fatalf("the campaign's record as a cursor: %v", err)
	}
}

// A watch of every election made while no view can feed it reads from a
// tail of its own, then moves onto the view's records once it can: every
// event once and in order across the move, and its consumer gone. The
// view is held off here (the records stream takes no more consumers)
// while records are written, which the watch's tail delivers first.
func TestWatchMadeBeforeTheViewCanFeedMovesOntoIt(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	b := open(t, e, cfg)
	writer := open(t, e, cfg) // no Run: its writes do not wait for a view
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	maxConsumers := func(n int) { t.Helper(); setMaxConsumers(ctx, t, b, n) }
	campaignT(t, writer, "e1", "a", time.Minute)
	ch, err := b.Watch(ctx, "", "0") // no Run yet: a tail of its own
	if err != nil {
		t.Fatal(err)
	}
	if n := consumers(t, b)[cfg.Stream]; n != 1 {
		t.Fatalf("%d consumers of the records stream with the watch alone, want 1", n)
	}
	maxConsumers(1)
	run(t, b) // its view cannot make a consumer yet
	campaignT(t, writer, "e2", "b", time.Minute)
	got := describe(nextEvents(ctx, t, ch, 4))
	if v := b.running(); v == nil || v.following.Load() {
		t.Fatalf("the view followed the stream before its consumer was let in")
	}
	maxConsumers(-1)
	eventually.NoErrorUntil(ctx, t, "the watch's consumer gone, the view's made", func() error {
		if n := consumers(t, b)[cfg.Stream]; n != 1 || !b.running().following.Load() {
			return fmt.Errorf("%d consumers, the view following: %v", n, b.running().following.Load())
		}
		v := b.running()
		v.mu.Lock()
		defer v.mu.Unlock()
		if len(v.feeds) != 1 {
			return fmt.Errorf("%d feeds", len(v.feeds))
		}
		return nil
	})
	campaignT(t, writer, "e3", "c", time.Minute)
	campaignT(t, writer, "e1", "d", time.Minute)
	got = append(got, describe(nextEvents(ctx, t, ch, 3))...)
	want := []string{"candidate.joined a", "leader.begin a", "candidate.joined b", "leader.begin b", "candidate.joined c", "leader.begin c", "candidate.joined d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("an event more: %s %s", ev.Type, ev.Candidate.ID)
		}
		t.Fatal("the watch ended")
	default:
	}
}

// A replica's hub, which watches every election from the moment the
// replica starts, before its view has loaded, goes on with the view's
// records once the view can feed it: the records stream has one consumer
// for the replica, the view's, and the hub's subscribers get the events
// after it.
func TestHubOfAStartingReplicaIsFedByTheView(t *testing.T) {
	for _, records := range []int{0, 20} {
		t.Run(fmt.Sprintf("records=%d", records), func(t *testing.T) {
			e := startServer(t, t.TempDir())
			t.Cleanup(e.Shutdown)
			b := open(t, e, freshConfig())
			for i := range records {
				campaignT(t, b, fmt.Sprintf("e%d", i), "a", time.Minute)
			}
			gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler)})
			rctx, rcancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = gw.Run(rctx) }()
			t.Cleanup(func() { rcancel(); <-done })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			eventually.NoErrorUntil(ctx, t, "the hub fed by the view alone", func() error {
				v := b.running()
				if v == nil {
					return errors.New("no view")
				}
				v.mu.Lock()
				feeds := len(v.feeds)
				v.mu.Unlock()
				if n := consumers(t, b)[b.cfg.Stream]; n != 1 || feeds != 1 {
					return fmt.Errorf("%d consumers of the records stream, %d feeds of the view; want 1 and 1", n, feeds)
				}
				return gw.CaughtUp(ctx)
			})
			ch, err := gw.Watch(ctx, "fresh", "")
			if err != nil {
				t.Fatal(err)
			}
			campaignT(t, b, "fresh", "b", time.Minute)
			if got := describe(nextEvents(ctx, t, ch, 2)); fmt.Sprint(got) != fmt.Sprint([]string{"candidate.joined b", "leader.begin b"}) {
				t.Fatalf("events through the hub: %q", got)
			}
			if n := consumers(t, b)[b.cfg.Stream]; n != 1 {
				t.Fatalf("%d consumers of the records stream with a subscriber of the hub, want 1", n)
			}
		})
	}
}

// On a stream that had records when Run started, the view loads the last
// record of each election; once it has passed the stream's end as it was
// then, a watch of every election from Head is fed by it again (no
// consumer of its own) and gets the events after Head.
func TestWatchFollowsTheViewOfAStreamThatHadRecords(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	b := open(t, e, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	campaignT(t, b, "e1", "a", time.Minute)
	if _, err := b.Configure(ctx, "e1", gateway.Settings{ErrorCooldown: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	waitFeeding(ctx, t, b)
	ch, head := watchFedFromHead(ctx, t, b)
	campaignT(t, b, "e1", "b", time.Minute)
	if got := describe(nextEvents(ctx, t, ch, 1)); fmt.Sprint(got) != fmt.Sprint([]string{"candidate.joined b"}) {
		t.Fatalf("events after %s: %q", head, got)
	}
}

// A feed whose receiver falls too far behind ends, after the records it
// holds, rather than hold the view's records without bound.
func TestFeedOfASlowReceiverEnds(t *testing.T) {
	f := newFeed()
	for i := range maxFeedQueue + 1 {
		f.push(stored{seq: uint64(i + 1)})
	}
	got, ended := f.take(nil)
	if len(got) != maxFeedQueue || !ended {
		t.Fatalf("took %d records, ended %v; want %d and ended", len(got), ended, maxFeedQueue)
	}
	f.push(stored{seq: maxFeedQueue + 2})
	if got, _ := f.take(nil); len(got) != 0 {
		t.Fatalf("an ended feed took %d more records", len(got))
	}
}
