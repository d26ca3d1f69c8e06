package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// view is a replica's view of every election, which reads and heartbeats
// answer from: the latest record of each, as the watch of the records
// stream delivered them (recs, every record up to sequence seen), and the
// records this replica wrote that the watch has not delivered yet
// (ahead). Each Run has one, which its watch feeds and its reconciler
// acts on.
//
// Reads served from the view are linearizable: before answering, a read
// fetches the stream's last sequence through the read index (fetched after
// the read arrived, coalesced across concurrent reads) and waits until the
// watch has delivered it, so it reflects every write acknowledged before
// it began (a local read, which the reads of elections may be, skips the
// read index: see viewAs). The watch delivers in stream order, so recs at
// any moment is the stream's state at sequence seen.
type view struct {
	b *Backend

	// following is whether the tail feeding the view has a consumer made
	// and not given up (tail.live): local reads answer from the view as
	// it is only then.
	following atomic.Bool

	mu   sync.Mutex
	recs map[string]viewed // as delivered: the stream's state at seen
	// order lists the elections of recs in the order the watch first
	// delivered them, for the sweep to visit them a chunk at a time.
	order []string
	// tombstones counts the deleted elections among recs.
	tombstones int
	ahead      map[string]viewed // written here, not delivered yet
	seen       uint64            // the highest records stream sequence the watch delivered
	// pending is how many records followed seen in the stream when the
	// server sent it (the consumer's NumPending): see caughtUpTo.
	pending uint64
	seenCh  chan struct{} // closed (and replaced) when seen grows
	// newest is the position of the newest event among the records up to
	// seen: no event lies after it up to seen (see noteNewest). Head
	// returns it, and snapshots of the view take their cursors from it.
	newest gateway.Position
	// newestOf is the election of the record newest is in, and newestAfter
	// how many later records of that election the watch delivered: at
	// History of them the stream has dropped that record, and newest
	// becomes a cursor after the latest record instead.
	newestOf    string
	newestAfter int
	// lookedBack is the Rev of a "<seq>" newest that lookBack could not
	// name, so that it does not read back again for it.
	lookedBack uint64
	// feeds are the watches fed by record (feed.go); none is added once
	// feedsEnded is set, as Run ends.
	feeds      map[*feed]struct{}
	feedsEnded bool
	// ordered is a sequence after which the view's watch delivers every
	// record, in order; orderedKnown once there is one (see resume and
	// learnOrdered). A feed is attached only once seen has reached it.
	ordered      uint64
	orderedKnown bool
	// feedableNoted is set once canFeedLocked has been signalled
	// (noteFeedableLocked).
	feedableNoted bool
	bg            sync.WaitGroup // learnOrdered; Run waits for it
	// filled is set once the watch has delivered the stream's last
	// sequence as of Run's start: until then the view is still loading,
	// and reads go to the stream leader without waiting for it.
	filled bool

	// changed, when set, is called under mu with an election's latest
	// record before and after each record the view takes in from its
	// watch (the same record when it was not the latest), and with each
	// record put ahead of the watch: Run's reconciler follows the
	// elections' deadlines and candidacies with it. It may take the
	// reconciler's and the liveness' locks, which never wait for mu.
	changed func(prev, cur stored)

	done chan struct{} // closed when Run returns
}

func newView(b *Backend) *view {
	return &view{
		b: b, recs: map[string]viewed{}, ahead: map[string]viewed{}, seenCh: make(chan struct{}),
		newest: gateway.Position{Index: math.MaxInt}, // "0": before every event
		done:   make(chan struct{}),
	}
}

// record takes a record message from the watch into the view.
func (v *view) record(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	if !v.onDisk(ctx, md.Sequence.Stream) {
		return // ctx ended: the next watch starts again at this record
	}
	s, err := decode(v.b.subj.electionOf(m.Subject()), md.Sequence.Stream, m.Data())
	if err != nil {
		v.b.log.Error("nats: reconciler: bad record", "err", err)
	}
	v.mu.Lock()
	if err == nil {
		prev := v.latestLocked(s.rec.Name)
		if old, ok := v.recs[s.rec.Name]; !ok || s.seq > old.seq {
			if !ok {
				v.order = append(v.order, s.rec.Name)
			}
			if ok && old.deleted {
				v.tombstones--
			}
			if s.deleted {
				v.tombstones++
			}
			v.recs[s.rec.Name] = s.viewed()
		}
		if a, ok := v.ahead[s.rec.Name]; ok && a.seq <= s.seq {
			delete(v.ahead, s.rec.Name)
		}
		if v.changed != nil {
			v.changed(prev, v.latestLocked(s.rec.Name))
		}
		for f := range v.feeds {
			f.push(s)
		}
	}
	if v.seen == 0 && !v.orderedKnown {
		v.bg.Go(func() { v.learnOrdered(ctx) }) // the first record, of the last per election
	}
	if md.Sequence.Stream > v.seen {
		v.noteNewest(md.Sequence.Stream, s, err == nil)
		v.seen, v.pending = md.Sequence.Stream, md.NumPending
		close(v.seenCh)
		v.seenCh = make(chan struct{})
		v.noteFeedableLocked()
	}
	v.mu.Unlock()
}

// onDisk waits until the record at seq is on disk (commit.go) before the
// view takes it in, trying again while flushes fail; false once ctx ends.
func (v *view) onDisk(ctx context.Context, seq uint64) bool {
	for warned := false; ; warned = true {
		err := v.b.durable(ctx, seq)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !warned {
			v.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: reconciler: record not on disk", slog.Uint64("seq", seq), slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

// resume is where a new watch of the records stream starts once this one
// has delivered something: just after seen, so that it delivers every
// held record after it in order. Starting again from the last record per
// election would skip the records superseded meanwhile while seen passes
// them, and reads waiting for a sequence among them would answer from
// records older than it.
//
// Before anything is delivered it is 0, the last record per election
// (DeliverLastPerSubject: a replica starting on a long stream loads one
// record per election, not their history), unless the stream is empty:
// then 1, every record from the first, in order. A consumer of the last
// per election skips the records superseded before it is made, and one
// made again before it delivers anything is made the same way (tail.make),
// so while the view has seen nothing, a watch fed by it (feed.go) would
// miss the records written before that consumer was made, superseded
// since, and find a gap where there is none (watchGap). Started at 1, it
// skips nothing: the view is ordered from 0, and watches of every
// election are fed by it from the start, as a new replica's hub is.
func (v *view) resume(ctx context.Context) uint64 {
	v.mu.Lock()
	seen, known := v.seen, v.orderedKnown
	v.mu.Unlock()
	switch {
	case seen > 0:
		return seen + 1
	case known:
		return 1
	}
	if last, err := v.b.fetchHead(ctx); err != nil || last > 0 {
		return 0 // ordered once it has delivered a record (learnOrdered)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.orderedKnown = true // ordered from 0; and every later watch starts at 1 or after seen
	v.noteFeedableLocked()
	return 1
}

// learnOrdered notes, once the view's watch has delivered a record in a
// consumer of the last record per election (see resume), where that
// consumer's skipping ends: the stream's last sequence, read after the
// record came, so after the consumer chose where to start (in a cluster,
// as it took its leadership, which also precedes its first delivery). It
// is the read index's fetch (fetchHead): from the stream leader, its
// quorum confirmed, never a lagging member's copy, which could name an
// earlier sequence. A consumer of the last per election delivers every
// record after the stream's last as it started; and once a record is
// delivered, every consumer made after it starts right after the last one
// delivered (tail.make, resume), skipping nothing. So every record after
// that sequence is delivered, in order. It reads on a goroutine of its
// own (record starts it at the first record, Run waits for it), trying
// again every second until it has an answer or ctx ends, so that the view
// never waits for it; until then no feed is attached, and a watch reads
// from a tail of its own.
func (v *view) learnOrdered(ctx context.Context) {
	for {
		last, err := v.b.fetchHead(ctx)
		if err == nil {
			v.mu.Lock()
			v.ordered, v.orderedKnown = last, true
			v.noteFeedableLocked()
			v.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// put takes a record this replica wrote (or loaded) into the view, ahead
// of the watch, unless the view already has it or a later one.
func (v *view) put(s stored) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if prev := v.latestLocked(s.rec.Name); s.seq > prev.seq {
		v.ahead[s.rec.Name] = s.viewed()
		if v.changed != nil {
			v.changed(prev, v.latestLocked(s.rec.Name))
		}
	}
}

// latest returns the latest record of election in the view; a tombstone
// (s.deleted) counts as found, for writers to continue its chain.
func (v *view) latest(election string) (stored, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.latestLocked(election)
	return s, s.rec != nil
}

func (v *view) latestLocked(election string) stored {
	s := v.recs[election]
	if a, ok := v.ahead[election]; ok && a.seq > s.seq {
		return a.stored()
	}
	return s.stored()
}

// count returns the number of elections in the view, tombstones left out:
// the delivered ones, corrected by the few written here and not delivered
// yet, so that a campaign's limit check costs the same with ten elections
// as with ten thousand.
func (v *view) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := len(v.recs) - v.tombstones
	for name, a := range v.ahead {
		old, ok := v.recs[name]
		switch {
		case !ok && !a.deleted:
			n++ // created here
		case ok && !old.deleted && a.deleted:
			n-- // deleted here
		case ok && old.deleted && !a.deleted:
			n++ // created again here
		}
	}
	return n
}

// fill marks the view filled once the watch has delivered the records
// stream's last sequence as of now (fetched again after failures).
func (v *view) fill(ctx context.Context) {
	for ctx.Err() == nil {
		want, err := v.b.fetchHead(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for {
			err := v.waitSeen(ctx, want)
			if err == nil {
				v.mu.Lock()
				v.filled = true
				v.mu.Unlock()
				return
			}
			if !errors.Is(err, errViewBehind) || ctx.Err() != nil {
				return
			}
			select {
			case <-v.done:
				return
			default: // still loading: wait on
			}
		}
	}
}

// isFilled reports whether the view has loaded the stream as it was when
// Run started.
func (v *view) isFilled() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.filled
}

// errViewBehind says the view did not catch up in time (or Run ended):
// the caller reads from the stream leader instead.
var errViewBehind = errors.New("nats: view behind")

// waitSeen waits until the watch has delivered sequence want. It returns
// errViewBehind when Run ends or after gateway.CatchUpGrace, and ctx's error
// (as gateway.ErrUnavailable) when ctx ends first.
func (v *view) waitSeen(ctx context.Context, want uint64) error {
	var grace <-chan time.Time
	for {
		v.mu.Lock()
		seen, ch := v.seen, v.seenCh
		v.mu.Unlock()
		if seen >= want {
			return nil
		}
		if grace == nil {
			t := time.NewTimer(gateway.CatchUpGrace)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-ch:
		case <-v.done:
			return errViewBehind
		case <-grace:
			return errViewBehind
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", gateway.ErrUnavailable, ctx.Err())
		}
	}
}

// view returns the view of a running Run, caught up with the records
// stream as of a read index fetched after the call; nil (and no error)
// when Run is not running, its view is still loading or its watch lags,
// so that the caller reads from the stream leader instead. A "<seq>"
// newest event of the view is named first where it can be (lookBack), so
// that Head and the cursors of snapshots agree. Errors:
// gateway.ErrUnavailable when the read index cannot be fetched.
func (b *Backend) view(ctx context.Context) (*view, error) { return b.viewAs(ctx, false) }

// viewAs is view, or, for a local read (gateway.WithLocalRead, which only
// the reads of elections pass on), the view as it is, without the read
// index, while its tail follows the records stream (view.following) and
// the connection is up: it then lags the stream by what the tail has not
// delivered yet. A tail whose consumer stops answering is found out by
// its missed heartbeats (two, 4s) and given up; from then until it has
// made another, and with the connection down, a local read is read as
// every other.
func (b *Backend) viewAs(ctx context.Context, local bool) (*view, error) {
	v := b.running()
	if v == nil || !v.isFilled() {
		return nil, nil
	}
	if local && v.following.Load() && b.connected() == nil {
		v.lookBack(ctx)
		return v, nil
	}
	want, err := b.revision(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if v, err = b.caughtUpTo(ctx, v, want); v != nil {
		v.lookBack(ctx)
	}
	return v, err
}

// caughtUpTo waits until v has delivered want; nil (no error) if it lags,
// or if its watch may have been so far behind that it missed records.
//
// Why a view that reached want can still be stale, and how this tells:
// let L be an election's latest record at or below want. The view lacks
// L only if the stream dropped L before the watch read it, which takes
// History later records of that election, all after want. Those, or newer
// ones of the same election, are still held when the server sends the
// message at seen (after L), each either at or below seen (at most
// seen-want of them past want) or pending after it. So if
// (seen-want)+pending < History, no record at or below want was dropped
// unread, and the view holds every election's state as of want.
func (b *Backend) caughtUpTo(ctx context.Context, v *view, want uint64) (*view, error) {
	switch err := v.waitSeen(ctx, want); {
	case errors.Is(err, errViewBehind):
		return nil, nil
	case err != nil:
		return nil, err
	}
	v.mu.Lock()
	seen, pending := v.seen, v.pending
	v.mu.Unlock()
	if (seen-want)+pending >= uint64(b.cfg.History) {
		return nil, nil // read from the stream leader instead
	}
	return v, nil
}

// recordsFrom appends to dst the latest records of at most n elections of the
// view, from the from-th in the order the view first saw them, and
// returns it. Records are never changed in place (a transition works on a
// copy), so they may be read after the lock is released.
func (v *view) recordsFrom(dst []stored, from, n int) []stored {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, name := range v.order[min(from, len(v.order)):min(from+n, len(v.order))] {
		if s := v.latestLocked(name); s.rec != nil {
			dst = append(dst, s)
		}
	}
	return dst
}
