package nats

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

func TestNewestEventIsWhatAWatchFromItContinuesAfter(t *testing.T) {
	type rec struct {
		seq      uint64
		election string
		events   int
		bad      bool // does not decode
	}
	cases := []struct {
		name string
		recs []rec // delivered in this order
		want string
	}{
		{"nothing delivered", nil, "0"},
		{"a record's last event", []rec{{1, "a", 2, false}}, "1-2"},
		{"a record without events after it keeps it", []rec{{1, "a", 2, false}, {2, "b", 0, false}}, "1-2"},
		{"an undecodable record after it keeps it", []rec{{1, "a", 2, false}, {2, "b", 0, true}}, "1-2"},
		{"a later record's events replace it", []rec{{1, "a", 2, false}, {2, "b", 1, false}}, "2-1"},
		{"records skipped before one without events", []rec{{1, "a", 2, false}, {4, "b", 0, false}}, "4"},
		{"records skipped before one with events", []rec{{1, "a", 2, false}, {4, "b", 3, false}}, "4-3"},
		{"the load starts with a record without events", []rec{{3, "a", 0, false}}, "3"},
		{"History-1 later records of its election keep it held", []rec{{1, "a", 1, false}, {2, "a", 0, false}, {3, "a", 0, false}}, "1-1"},
		{"History later records of its election drop it", []rec{{1, "a", 1, false}, {2, "a", 0, false}, {3, "a", 0, false}, {4, "a", 0, false}}, "4"},
		{"records of other elections do not drop it", []rec{{1, "a", 1, false}, {2, "b", 0, false}, {3, "b", 0, false}, {4, "b", 0, false}}, "1-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(&Backend{cfg: Config{History: 3}})
			for _, x := range tc.recs {
				s := stored{rec: &gateway.Record{Name: x.election}, seq: x.seq, events: make([]gateway.Event, x.events), nev: x.events}
				v.noteNewest(x.seq, s, !x.bad)
				v.seen = x.seq
			}
			if got := v.head().String(); got != tc.want {
				t.Errorf("newest %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSnapshotCursorsAreNotPastHead checks that after a write without
// events (a change of settings) the cursors of snapshots read from the
// view are the newest event, as Head is, so that a Gateway's hub, which
// refuses cursors past Head, accepts them, and watches from them get the
// next events and none before.
func TestSnapshotCursorsAreNotPastHead(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	campaignT(t, b, "e1", "a", 30*time.Second)
	if _, err := b.Configure(ctx, "e1", gateway.Settings{ErrorCooldown: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	if err := eventually.Poll(pctx, func() error {
		if r := b.running(); r == nil || !r.isFilled() {
			return errors.New("the view has not loaded")
		}
		if err := gw.CaughtUp(pctx); err != nil {
			return errors.Join(errors.New("the hub is not caught up"), err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hp, ok := gateway.ParsePosition(head)
	if !ok || hp.Index == 0 || hp.Index == math.MaxInt {
		t.Fatalf("Head %q is not an event id", head)
	}
	_, all, err := b.Elections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one, err := b.Election(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	leader, err := b.ElectionLeader(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	for what, cursor := range map[string]string{"Elections": all, "Election": one.Cursor, "ElectionLeader": leader.Cursor} {
		if cursor != head {
			t.Errorf("%s cursor %q, want Head %q (the campaign's last event; the change of settings had none)", what, cursor, head)
		}
	}

	watches := map[string]<-chan gateway.Event{}
	for what, w := range map[string]struct{ election, cursor string }{
		"all elections from the Elections cursor": {"", all},
		"e1 from the Election cursor":             {"e1", one.Cursor},
	} {
		ch, err := gw.Watch(ctx, w.election, w.cursor)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		watches[what] = ch
	}
	campaignT(t, b, "e1", "b", 30*time.Second)
	for what, ch := range watches {
		select {
		case ev := <-ch:
			p, _ := gateway.ParsePosition(ev.ID)
			if p.Compare(hp) <= 0 || ev.Candidate == nil || ev.Candidate.ID != "b" {
				t.Errorf("%s: first event %s %s of %+v, want the campaign of b after %s", what, ev.ID, ev.Type, ev.Candidate, head)
			}
		case <-pctx.Done():
			t.Fatalf("%s: no event", what)
		}
	}
}

// TestHeadNamesTheEventBeforeRecordsTheViewSkipped starts Run after the
// last write with events was followed by writes without any: the view
// loads each election's latest record only, so it cannot tell the newest
// event from what it delivered. Head reads back for it while the stream
// holds the records in between, so that a hub that got that event is
// caught up; where the stream dropped one, Head is "<seq>" after them all.
func TestHeadNamesTheEventBeforeRecordsTheViewSkipped(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	for _, tc := range []struct {
		name      string
		configure int  // changes of settings after the campaign
		dropped   bool // History (5) of them drop the campaign's record
	}{
		{"records held", 2, false},
		{"the campaign's record dropped", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := freshConfig()
			cfg.History = 5
			b := open(t, e, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			campaignT(t, b, "e1", "a", 30*time.Second)
			campaigned, err := b.Election(ctx, "e1") // from the stream leader: Run is not running
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.configure {
				if _, err := b.Configure(ctx, "e1", gateway.Settings{ErrorCooldown: time.Duration(2+i) * time.Second}); err != nil {
					t.Fatal(err)
				}
			}
			last, err := b.lastSeq(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := campaigned.Cursor
			if tc.dropped {
				want = strconv.FormatUint(last, 10)
			}

			gw := gateway.New(b, gateway.Config{Logger: slog.New(slog.DiscardHandler)})
			rctx, rcancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = gw.Run(rctx) }()
			t.Cleanup(func() { rcancel(); <-done })
			if err := eventually.Poll(ctx, func() error {
				if r := b.running(); r == nil || !r.isFilled() {
					return errors.New("the view has not loaded")
				}
				if err := gw.CaughtUp(ctx); err != nil {
					return errors.Join(errors.New("the hub is not caught up"), err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if head, err := b.Head(ctx); err != nil || head != want {
				t.Errorf("Head %q, %v; want %q (the stream ends at %d)", head, err, want, last)
			}
		})
	}
}
