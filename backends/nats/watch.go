package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Watch implements gateway.Backend with a tail of the records stream,
// filtered to one election's subject or to all of them, which is
// deleted when the watch ends. Event ids are "<stream sequence>-<index in
// that record message>", the same on every replica; a cursor may also be a
// bare "<stream sequence>" (after every event of that record, as Head
// returns). A cursor that does not parse, is past the stream's last
// sequence, or names a record message the stream no longer holds is
// gateway.ErrCursorExpired, and so is one before a record after which a
// watch found records missing (watchGap). The channel closes when ctx
// ends, when the backend is closed, when the NATS connection is closed, or
// when a record is missing from what the consumer delivered (see
// watchGap): the receiver resumes from the last id it got.
//
// Records are checked for continuity because the consumer cannot be
// trusted to report a loss: a watch that falls more than Config.History
// records of an election behind (a slow receiver, a consumer on a lagging
// server, a consumer made again under load) finds the records it has not
// read yet dropped by the per-subject limit, and JetStream delivers the
// next held message with the next delivery sequence, so the tail sees
// nothing wrong.
func (b *Backend) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	filter := "*"
	if election != "" {
		filter = election
	}
	cfg := jetstream.ConsumerConfig{FilterSubject: b.subj.record(filter)}
	w := &watcher{b: b, election: election, start: 1, last: map[string]uint64{}}
	var cursor gateway.Position
	if after == "" {
		// Not DeliverNewPolicy: a consumer made again before its first
		// message would start at "new" again and skip what came in
		// between. Start at an explicit sequence instead.
		last, err := b.lastSeq(ctx)
		if err != nil {
			return nil, fmt.Errorf("nats: watch %q: %w", election, err)
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
		w.start = last + 1
	} else {
		seq, idx, err := parseCursor(after)
		if err != nil {
			return nil, fmt.Errorf("nats: watch %q: %w: %w", election, gateway.ErrCursorExpired, err)
		}
		if err := b.checkCursor(ctx, seq); err != nil {
			return nil, fmt.Errorf("nats: watch %q after %q: %w", election, after, err)
		}
		cursor = gateway.Position{Rev: seq, Index: idx}
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
		if seq > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
			w.skipSeq, w.skipIdx = seq, idx
			w.start = seq
		}
	}
	w.from = w.start
	wctx, wcancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(b.ctx, wcancel)
	w.ctx = wctx

	// A watch of every election from a cursor goes on with the view's own
	// records once it has caught up with them (feed.go); the records up
	// to there come from a tail, unless none of them has an event.
	var fd *feed
	var v *view
	var s0 uint64
	tailNeeded := true
	if election == "" && after != "" {
		if v = b.running(); v != nil && v.isFilled() {
			var noneBefore bool
			fd, s0, noneBefore = v.attach(cursor)
			if fd != nil && noneBefore {
				tailNeeded = false
				// Records up to s0 carry no event after the cursor: the
				// chain of each election is checked from the feed on.
				w.start = max(w.start, s0+1)
			}
		}
	}
	// One that could not be fed yet (no view runs, or it may still skip
	// records) moves onto the view's records as soon as it can (adopt):
	// the hub's watch, made as a replica starts, would otherwise keep a
	// server consumer of its own for as long as it lasts.
	adopting := election == "" && after != "" && fd == nil
	var tl *tail
	tctx, tcancel := context.WithCancel(wctx) // adopt ends the tail with it
	if tailNeeded {
		var err error
		if tl, err = b.openTail(tctx, b.cfg.Stream, cfg); err != nil {
			if fd != nil {
				v.detach(fd)
			}
			tcancel()
			unlink()
			wcancel()
			return nil, fmt.Errorf("nats: watch %q: %w", election, translate(err))
		}
	}
	w.ch = make(chan gateway.Event, 64)
	b.watchers.Add(1)
	go func() {
		defer b.watchers.Done()
		defer close(w.ch)
		defer wcancel()
		defer unlink()
		defer tcancel()
		if fd != nil {
			defer v.detach(fd)
		}
		if tl != nil {
			var adoptions sync.WaitGroup
			tailDone := make(chan struct{})
			if adopting {
				adoptions.Go(func() { w.adopt(tailDone, tcancel) })
			}
			// up to s0 when a feed goes on after it; to the end, or until
			// the view's feed is adopted, otherwise
			ok := w.fromTail(tl, s0, fd != nil)
			close(tailDone)
			adoptions.Wait()
			// Nothing of the watch outlives it: the server consumer goes too.
			tl.Close()
			if a := w.adopted.Load(); a != nil {
				v, fd = a.v, a.fd
				defer v.detach(fd)
				// The tail returned every record up to read, which is at
				// or past where the feed starts.
				s0 = max(a.s0, w.read.Load())
			}
			if !ok {
				return
			}
		}
		if fd != nil {
			w.from = max(w.from, s0+1)
			w.fromFeed(fd)
		}
	}()
	return w.ch, nil
}

// watcher is one watch as it delivers: its first sequence, the events of
// its cursor's record to skip, and the sequence of the latest record of
// each election it received: each record names the one before it
// (message.Prev), and one at or after start that the watch never
// received was dropped (watchGap).
type watcher struct {
	b        *Backend
	ctx      context.Context
	election string
	start    uint64 // records whose previous record is at or after start are checked
	from     uint64 // records before from are not delivered
	skipSeq  uint64
	skipIdx  int
	last     map[string]uint64
	ch       chan gateway.Event

	// read is the sequence of the last record the watch's tail returned,
	// and adopted, once set, the view's feed the watch goes on with once
	// the tail has returned the records up to the feed's start (adopt).
	read    atomic.Uint64
	adopted atomic.Pointer[adoption]
}

// adoption is a feed of view v that starts after sequence s0 (view.attach).
type adoption struct {
	v  *view
	fd *feed
	s0 uint64
}

// adopt waits, while the watch reads from a tail of its own, for a view
// that can feed it (feedableWait), attaches a feed to it and hands it to
// the reader (adopted), which goes on with the feed once its tail has
// returned every record up to the feed's start, s0. If the tail has
// already returned them, the tail waits for records the feed now brings:
// adopt ends it at once (cancel, its context), and the reader moves on.
// adopt returns once it has handed a feed over, or when tailDone is
// closed (the reader ended) or the watch's context ends.
//
// Nothing is delivered twice or skipped: the reader hands over after the
// record at read (at or past s0), and the feed brings every record after
// s0 in stream order, of which those up to read are skipped (from).
// Both sides of the hand-over are atomics, sequentially consistent: if
// the reader checks adopted before adopt sets it, adopt's later load of
// read sees the reader's record, and ends the tail if it is at or past s0.
func (w *watcher) adopt(tailDone <-chan struct{}, cancel context.CancelFunc) {
	for {
		wait := w.b.feedableWait()
		if v := w.b.running(); v != nil {
			if fd, s0, _ := v.attach(gateway.Position{}); fd != nil {
				w.adopted.Store(&adoption{v: v, fd: fd, s0: s0})
				if w.read.Load() >= s0 {
					cancel()
				}
				return
			}
		}
		select {
		case <-wait:
		case <-tailDone:
			return
		case <-w.ctx.Done():
			return
		}
	}
}

// adoptedBy reports whether a feed was adopted whose start the tail has
// reached at read: the reader then goes on with it.
func (w *watcher) adoptedBy(read uint64) bool {
	a := w.adopted.Load()
	return a != nil && read >= a.s0
}

// fromTail delivers the records of tl, until one after until when
// bounded, or until the feed adopt hands over starts. It reports whether
// the watch goes on.
func (w *watcher) fromTail(tl *tail, until uint64, bounded bool) bool {
	b := w.b
	for {
		m, md, err := tl.Next()
		if err != nil {
			if errors.Is(err, errTailClosed) && w.ctx.Err() == nil && w.adoptedBy(w.read.Load()) {
				return true // adopt ended the tail: the feed goes on
			}
			if w.ctx.Err() == nil {
				b.log.LogAttrs(w.ctx, slog.LevelWarn, "nats: watch ended", slog.String("election", w.election), slog.Any("err", err))
			}
			return false
		}
		seq := md.Sequence.Stream
		if bounded && seq > until {
			return true // the feed has it
		}
		// No event leaves before its record is on disk (commit.go).
		if err := b.durable(w.ctx, seq); err != nil {
			if w.ctx.Err() == nil {
				b.log.LogAttrs(w.ctx, slog.LevelWarn, "nats: watch ended", slog.String("election", w.election), slog.Any("err", err))
			}
			return false
		}
		name := b.subj.electionOf(m.Subject())
		s, err := decode(name, seq, m.Data())
		if err != nil {
			b.log.LogAttrs(w.ctx, slog.LevelError, "nats: watch: bad record", slog.Any("err", err))
		} else if !w.deliver(name, s) {
			return false
		}
		w.read.Store(seq)
		if (bounded && seq >= until) || w.adoptedBy(seq) {
			return true
		}
	}
}

// fromFeed delivers the records of fd until it ends or the watch does.
func (w *watcher) fromFeed(fd *feed) {
	var batch []stored
	for {
		var ended bool
		batch, ended = fd.take(batch[:0])
		for _, s := range batch {
			if !w.deliver(s.rec.Name, s) {
				return
			}
		}
		clear(batch)
		if ended {
			return
		}
		select {
		case <-fd.wake:
		case <-w.ctx.Done():
			return
		}
	}
}

// deliver sends the events of s, a record of election name; false when
// the watch ends: a record before s was dropped unread (watchGap), or the
// watch's context ended.
func (w *watcher) deliver(name string, s stored) bool {
	if s.seq < w.from {
		return true
	}
	if s.hasPrev && s.prev >= w.start && w.last[name] != s.prev {
		w.b.watchGap(w.ctx, w.election, name, s)
		return false
	}
	w.last[name] = s.seq
	for i, ev := range s.events {
		if s.seq == w.skipSeq && i+1 <= w.skipIdx {
			continue
		}
		select {
		case w.ch <- ev:
		case <-w.ctx.Done():
			return false
		}
	}
	return true
}

// watchGap handles a record s of election name whose previous record
// (s.prev) the watch should have delivered before it and did not: the
// consumer delivers every held record at or after its start in order, so
// s.prev was dropped by the History limit before the watch read it (the
// watch fell that far behind, or its cursor is older than the records the
// stream still holds of name). The watch ends before s, and every cursor
// before s.seq is expired from then on (checkCursor): the receiver resumes
// from the last id it got, is told gateway.ErrCursorExpired and starts
// again from a snapshot (the hub cuts its subscribers, the event stream
// sends a reset), rather than going on past events it never got.
//
// The mark is conservative: a cursor before s.seq that needed none of the
// dropped records (a cursor of another election, resumed in a watch of that
// election) is refused too, which costs its receiver a snapshot; a watch on
// a replica that has not seen the gap finds it itself.
func (b *Backend) watchGap(ctx context.Context, election, name string, s stored) {
	for {
		cur := b.lost.Load()
		if cur >= s.seq || b.lost.CompareAndSwap(cur, s.seq) {
			break
		}
	}
	b.log.LogAttrs(ctx, slog.LevelWarn, "nats: watch missed records dropped by the history limit; ending it, and cursors before the record after them are expired",
		slog.String("watch", election), slog.String("election", name), slog.Uint64("seq", s.seq), slog.Uint64("missed", s.prev))
}

// checkCursor reports gateway.ErrCursorExpired unless the stream still
// holds the record message at seq (or, for seq 0, has lost nothing yet)
// and no watch found records dropped after it (watchGap). Records of one
// election are dropped oldest first, so a held message means
// every later record of its election is held too.
func (b *Backend) checkCursor(ctx context.Context, seq uint64) error {
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	info, err := b.records.Info(ctx)
	if err != nil {
		return translate(err)
	}
	st := info.State
	switch {
	case seq < b.lost.Load():
		return fmt.Errorf("records after sequence %d were dropped before a watch read them: %w", seq, gateway.ErrCursorExpired)
	case seq > st.LastSeq:
		return fmt.Errorf("sequence %d is past the stream's last %d: %w", seq, st.LastSeq, gateway.ErrCursorExpired)
	case seq == 0 && st.FirstSeq > 1:
		return fmt.Errorf("the stream no longer starts at 1: %w", gateway.ErrCursorExpired)
	case seq == 0:
		return nil
	}
	if _, err := b.records.GetMsg(ctx, seq); err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("sequence %d is no longer held: %w", seq, gateway.ErrCursorExpired)
		}
		return translate(err)
	}
	return nil
}

// pullOpts make a tail, or the ordered consumer of a one-off read (scan),
// notice a lost server consumer (its JetStream member died or was cut off,
// or the connection dropped) within two heartbeats and make it again after
// the last message delivered.
func pullOpts() []jetstream.PullMessagesOpt {
	return []jetstream.PullMessagesOpt{jetstream.PullExpiry(10 * time.Second), jetstream.PullHeartbeat(2 * time.Second)}
}

// lastSeq returns the records stream's last sequence.
func (b *Backend) lastSeq(ctx context.Context) (uint64, error) {
	var info *jetstream.StreamInfo
	err := b.resent(ctx, func(ctx context.Context) (err error) {
		info, err = b.records.Info(ctx)
		return err
	})
	if err != nil {
		return 0, translate(err)
	}
	return info.State.LastSeq, nil
}

// consumerIdle is the InactiveThreshold of every consumer the backend
// creates: a backstop only, for consumers whose owner died before it could
// delete them (release). An active consumer always has a pull request
// waiting (pullOpts renews them well within this), so it never idles out.
const consumerIdle = 30 * time.Second

// release deletes the server consumer an ordered consumer currently uses
// (scan's), once its iterator is stopped, so that no consumer outlives the
// request that made it.
func (b *Backend) release(stream string, c jetstream.Consumer) {
	if info := c.CachedInfo(); info != nil {
		b.deleteConsumer(stream, info.Name)
	}
}

// deleteConsumer deletes the server consumer name of stream, if any. It
// gives up quietly when NATS is not reachable: consumerIdle then removes
// the consumer.
func (b *Backend) deleteConsumer(stream, name string) {
	if name == "" || b.connected() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.OpTimeout)
	defer cancel()
	if err := b.js.DeleteConsumer(ctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.log.LogAttrs(ctx, slog.LevelDebug, "nats: delete consumer", slog.String("stream", stream), slog.String("consumer", name), slog.Any("err", err))
	}
}

// Head implements gateway.Header: the position of the newest event, the id
// "<seq>-<i>" of the last event of the newest record that has any, as Run's
// view knows it once it has delivered the records stream's last sequence
// fetched through the read index (see view). Not the stream's last
// sequence itself: a record without events (a change of settings) moves
// it, and a hub waiting for an event there would never catch up. No event
// lies after the answer up to that sequence, so Watch(ctx, "", head) goes
// on with the next event. Where the view cannot tell (records it skipped
// while loading or lagging, a record the stream no longer holds) it reads
// back through the stream for the event (lookBack), and failing that
// answers "<seq>" after them (view.noteNewest).
//
// When the view cannot be used (Run is not running, or still loading, or
// its watch lags or may have missed records), Head is the stream's last
// sequence, "<seq>", as Watch reads it: after every event of that record.
// A hub behind it is then not caught up, which is right for a replica
// whose view lags. Head places watches and readiness only: no write, and
// so no leadership, depends on it. Errors: gateway.ErrUnavailable.
func (b *Backend) Head(ctx context.Context) (string, error) {
	if err := b.connected(); err != nil {
		return "", fmt.Errorf("nats: head: %w", err)
	}
	v, err := b.view(ctx)
	if err != nil {
		return "", fmt.Errorf("nats: head: %w", err)
	}
	if v != nil {
		return v.head().String(), nil
	}
	seq, err := b.lastSeq(ctx)
	if err != nil {
		return "", fmt.Errorf("nats: head: %w", err)
	}
	return gateway.After(seq).String(), nil
}
