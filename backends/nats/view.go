package nats

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// reconciler is Run's state, and the replica's view of every election:
// the latest record of each, as the watch of the records stream delivered
// them (recs, every record up to sequence seen), and the records this
// replica wrote that the watch has not delivered yet (ahead).
//
// Reads served from the view are linearizable: before answering, a read
// fetches the stream's last sequence through the read index (fetched after
// the read arrived, coalesced across concurrent reads) and waits until the
// watch has delivered it, so it reflects every write acknowledged before
// it began. The watch delivers in stream order, so recs at any moment is
// the stream's state at sequence seen.
type reconciler struct {
	b *Backend

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
	// filled is set once the watch has delivered the stream's last
	// sequence as of Run's start: until then the view is still loading,
	// and reads go to the stream leader without waiting for it.
	filled bool

	// due is each election's next deadline (Record.NextDeadline of its
	// latest record), and deadlines a min-heap of them, so that a write
	// costs the loop O(log n), not a pass over every election. Entries of
	// deadlines that no longer match due are stale and skipped.
	due       map[string]time.Time
	deadlines deadlineHeap

	wake chan struct{} // the loop re-plans its deadlines
	done chan struct{} // closed when Run returns
}

func newReconciler(b *Backend) *reconciler {
	return &reconciler{
		b: b, recs: map[string]viewed{}, ahead: map[string]viewed{}, seenCh: make(chan struct{}), due: map[string]time.Time{},
		newest: gateway.Position{Index: math.MaxInt}, // "0": before every event
		wake:   make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// record takes a record message from the watch into the view.
func (r *reconciler) record(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	if !r.onDisk(ctx, md.Sequence.Stream) {
		return // ctx ended: the next watch starts again at this record
	}
	s, err := decode(r.b.electionOf(m.Subject()), md.Sequence.Stream, m.Data())
	if err != nil {
		r.b.log.Error("nats: reconciler: bad record", "err", err)
	}
	r.mu.Lock()
	if err == nil {
		prev := r.latestLocked(s.rec.Name)
		if old, ok := r.recs[s.rec.Name]; !ok || s.seq > old.seq {
			if !ok {
				r.order = append(r.order, s.rec.Name)
			}
			if ok && old.deleted {
				r.tombstones--
			}
			if s.deleted {
				r.tombstones++
			}
			r.recs[s.rec.Name] = s.viewed()
		}
		if a, ok := r.ahead[s.rec.Name]; ok && a.seq <= s.seq {
			delete(r.ahead, s.rec.Name)
		}
		if cur := r.latestLocked(s.rec.Name); cur.seq != prev.seq {
			r.b.live.rewatch(prev.rec, cur.rec)
		}
		r.replan(s.rec.Name)
		for f := range r.feeds {
			f.push(s)
		}
	}
	if md.Sequence.Stream > r.seen {
		r.noteNewest(md.Sequence.Stream, s, err == nil)
		r.seen, r.pending = md.Sequence.Stream, md.NumPending
		close(r.seenCh)
		r.seenCh = make(chan struct{})
	}
	r.mu.Unlock()
	r.poke()
}

// onDisk waits until the record at seq is on disk (commit.go) before the
// view takes it in, trying again while flushes fail; false once ctx ends.
func (r *reconciler) onDisk(ctx context.Context, seq uint64) bool {
	for warned := false; ; warned = true {
		err := r.b.durable(ctx, seq)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !warned {
			r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: reconciler: record not on disk", slog.Uint64("seq", seq), slog.Any("err", err))
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
// records older than it. 0 (nothing delivered yet): the last per election.
func (r *reconciler) resume() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == 0 {
		return 0
	}
	return r.seen + 1
}

// put takes a record this replica wrote (or loaded) into the view, ahead
// of the watch, unless the view already has it or a later one.
func (r *reconciler) put(s stored) {
	r.mu.Lock()
	if prev := r.latestLocked(s.rec.Name); s.seq > prev.seq {
		r.ahead[s.rec.Name] = s.viewed()
		r.b.live.rewatch(prev.rec, s.rec)
		r.replan(s.rec.Name)
	}
	r.mu.Unlock()
	r.poke()
}

func (r *reconciler) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// replan takes election's deadline from its latest record. Callers hold
// r.mu.
func (r *reconciler) replan(election string) {
	at, ok := r.latestLocked(election).rec.NextDeadline()
	if !ok {
		delete(r.due, election)
		return
	}
	r.plan(election, at)
}

// plan sets election's deadline. Callers hold r.mu.
func (r *reconciler) plan(election string, at time.Time) {
	if cur, ok := r.due[election]; ok && cur.Equal(at) {
		return
	}
	r.due[election] = at
	heap.Push(&r.deadlines, deadline{at: at, name: election})
	if len(r.deadlines) > 2*len(r.due)+64 {
		// Mostly stale entries of deadlines that moved: rebuild.
		r.deadlines = r.deadlines[:0]
		for name, at := range r.due {
			r.deadlines = append(r.deadlines, deadline{at: at, name: name})
		}
		heap.Init(&r.deadlines)
	}
}

// nextDeadline is the earliest deadline of any election.
func (r *reconciler) nextDeadline() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.deadlines.Len() > 0 {
		d := r.deadlines[0]
		if at, ok := r.due[d.name]; ok && at.Equal(d.at) {
			return d.at, true
		}
		heap.Pop(&r.deadlines) // stale
	}
	return time.Time{}, false
}

// takeDue removes and returns the deadlines at or before now.
func (r *reconciler) takeDue(now time.Time) []deadline {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []deadline
	for r.deadlines.Len() > 0 && !r.deadlines[0].at.After(now) {
		d := heap.Pop(&r.deadlines).(deadline)
		if at, ok := r.due[d.name]; ok && at.Equal(d.at) {
			delete(r.due, d.name)
			out = append(out, d)
		}
	}
	return out
}

// deadline is one election's next deadline.
type deadline struct {
	at   time.Time
	name string
}

// deadlineHeap is a container/heap of deadlines, earliest first.
type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// latest returns the latest record of election that the view has.
// latest returns the latest record of election in the view; a tombstone
// (s.deleted) counts as found, for writers to continue its chain.
func (r *reconciler) latest(election string) (stored, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.latestLocked(election)
	return s, s.rec != nil
}

func (r *reconciler) latestLocked(election string) stored {
	s := r.recs[election]
	if a, ok := r.ahead[election]; ok && a.seq > s.seq {
		return a.stored()
	}
	return s.stored()
}

// count returns the number of elections in the view, tombstones left out:
// the delivered ones, corrected by the few written here and not delivered
// yet, so that a campaign's limit check costs the same with ten elections
// as with ten thousand.
func (r *reconciler) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.recs) - r.tombstones
	for name, a := range r.ahead {
		old, ok := r.recs[name]
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
func (r *reconciler) fill(ctx context.Context) {
	for ctx.Err() == nil {
		want, err := r.b.fetchHead(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for {
			err := r.waitSeen(ctx, want)
			if err == nil {
				r.mu.Lock()
				r.filled = true
				r.mu.Unlock()
				return
			}
			if !errors.Is(err, errViewBehind) || ctx.Err() != nil {
				return
			}
			select {
			case <-r.done:
				return
			default: // still loading: wait on
			}
		}
	}
}

// isFilled reports whether the view has loaded the stream as it was when
// Run started.
func (r *reconciler) isFilled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.filled
}

// errViewBehind says the view did not catch up in time (or Run ended):
// the caller reads from the stream leader instead.
var errViewBehind = errors.New("nats: view behind")

// waitSeen waits until the watch has delivered sequence want. It returns
// errViewBehind when Run ends or after gateway.CatchUpGrace, and ctx's error
// (as gateway.ErrUnavailable) when ctx ends first.
func (r *reconciler) waitSeen(ctx context.Context, want uint64) error {
	var grace <-chan time.Time
	for {
		r.mu.Lock()
		seen, ch := r.seen, r.seenCh
		r.mu.Unlock()
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
		case <-r.done:
			return errViewBehind
		case <-grace:
			return errViewBehind
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", gateway.ErrUnavailable, ctx.Err())
		}
	}
}

// view returns the reconciler of a running Run, caught up with the records
// stream as of a read index fetched after the call; nil (and no error)
// when Run is not running, its view is still loading or its watch lags,
// so that the caller reads from the stream leader instead. A "<seq>"
// newest event of the view is named first where it can be (lookBack), so
// that Head and the cursors of snapshots agree. Errors:
// gateway.ErrUnavailable when the read index cannot be fetched.
func (b *Backend) view(ctx context.Context) (*reconciler, error) {
	r := b.running()
	if r == nil || !r.isFilled() {
		return nil, nil
	}
	want, err := b.revision(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if r, err = b.caughtUpTo(ctx, r, want); r != nil {
		b.lookBack(ctx, r)
	}
	return r, err
}

// revision is a read index fetched after the call: the group commit's
// durable sequence, read in place (every write acknowledged so far is at
// or below it), or a fetch shared with the reads that arrived meanwhile
// (gateway.ReadIndex).
func (b *Backend) revision(ctx context.Context) (uint64, error) {
	if b.commit != nil {
		return b.commit.Durable(), nil
	}
	return b.readIndex.Revision(ctx)
}

// caughtUpTo waits until r has delivered want; nil (no error) if it lags,
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
func (b *Backend) caughtUpTo(ctx context.Context, r *reconciler, want uint64) (*reconciler, error) {
	switch err := r.waitSeen(ctx, want); {
	case errors.Is(err, errViewBehind):
		return nil, nil
	case err != nil:
		return nil, err
	}
	r.mu.Lock()
	seen, pending := r.seen, r.pending
	r.mu.Unlock()
	if (seen-want)+pending >= uint64(b.cfg.History) {
		return nil, nil // read from the stream leader instead
	}
	return r, nil
}

// running returns the reconciler of a running Run (the one furthest
// ahead, if several run), or nil.
func (b *Backend) running() *reconciler {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	var best *reconciler
	var bestSeen uint64
	for r := range b.runs {
		r.mu.Lock()
		seen := r.seen
		r.mu.Unlock()
		if best == nil || seen > bestSeen {
			best, bestSeen = r, seen
		}
	}
	return best
}

// fetchHead is the read index's fetch: the records stream's last sequence,
// from the stream leader.
//
// It asks for the stream's last message (a message get for subject ">",
// which the server answers from the stream's last sequence without a
// search) rather than for the stream info: the answer is the same
// sequence from the same place (a message get, like stream info, is
// served by the stream leader only, after every write it acknowledged),
// but costs both sides a small fraction of the stream info's JSON. Only
// the sequence is decoded. The message at the last sequence is always
// held (the stream denies deletes and purges, and the per-election limit
// drops only older records); if it is not, as in an empty stream, the
// stream info answers instead. An embedded server outside a cluster is
// asked in process instead, for the same sequence (localHead).
func (b *Backend) fetchHead(ctx context.Context) (uint64, error) {
	if err := b.connected(); err != nil {
		return 0, err
	}
	if b.localHead != nil {
		return b.localHead()
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	m, err := b.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+b.cfg.Stream, headRequest)
	if err != nil {
		return 0, translate(err)
	}
	// The answer carries the whole last record; only its sequence is
	// wanted, which comes right after the subject.
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		if seq, ok := jsonUint(m.Data, `"seq":`); ok {
			if err := b.confirmQuorum(ctx); err != nil {
				return 0, err
			}
			return seq, nil
		}
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return 0, fmt.Errorf("nats: read index: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		seq, err := b.lastSeq(ctx)
		if err == nil {
			err = b.confirmQuorum(ctx)
		}
		return seq, err
	case resp.Error != nil:
		return 0, translate(resp.Error)
	case resp.Message == nil:
		return 0, fmt.Errorf("nats: read index: an answer without a message")
	}
	// The answer may come from a leader cut off from its quorum: use it
	// only if the lease held when it arrived, or is renewed after it.
	if err := b.confirmQuorum(ctx); err != nil {
		return 0, err
	}
	return resp.Message.Seq, nil
}

// headRequest asks a message get for the stream's last message (in a form
// every JetStream version reads).
var headRequest = []byte(`{"last_by_subj":">"}`)

// CountElections implements gateway.ElectionCounter: the elections in the
// view, or, while Run is not running or its view is still loading, the
// records stream's subject count (one request). Either may lag other
// replicas by a write in flight; the limit it serves is best-effort.
// Errors: gateway.ErrUnavailable.
func (b *Backend) CountElections(ctx context.Context) (int, error) {
	if r := b.running(); r != nil && r.isFilled() {
		return r.count(), nil
	}
	if err := b.connected(); err != nil {
		return 0, fmt.Errorf("nats: count elections: %w", err)
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	info, err := b.records.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("nats: count elections: %w", translate(err))
	}
	return int(info.State.NumSubjects), nil
}

// clone returns a copy of rec that a transition may change without
// changing rec, which the view shares between requests.
func clone(rec *gateway.Record) *gateway.Record {
	c := *rec
	c.Line = slices.Clone(rec.Line)
	c.Cooling = slices.Clone(rec.Cooling)
	c.Delays = slices.Clone(rec.Delays)
	c.Held = slices.Clone(rec.Held)
	if rec.Pending != nil {
		p := *rec.Pending
		c.Pending = &p
	}
	if rec.Previous != nil {
		p := *rec.Previous
		c.Previous = &p
	}
	return &c
}
