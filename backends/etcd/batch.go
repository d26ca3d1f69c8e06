package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Writing transactions are sent to etcd in batches (group commit): while
// a replica's writes are under way, the writes that arrive meanwhile wait
// and then go as one transaction, each its own nested transaction
// (etcd 3.3 and later). One raft proposal, one WAL entry, one read view
// and one gRPC call then carry a batch: etcd's CPU per campaign falls to
// about half (bench/etcdfloor_test.go). As a database's group commit
// keeps one log flush under way and has the commits that arrive meanwhile
// join the next: a write that finds no batch under way is sent at once,
// alone, as it would be without batching; one that finds a batch under
// way waits for it and goes in the next, so batches grow with the load
// and add no wait but the one for the batch ahead. A second batch goes
// beside the first (batchFlights) only when a full one waits (see most):
// the load is then more than one flight carries. Two flights whatever the
// queue halve the batches under a moderate load, and with them what each
// batch saves of both processes' CPU (docs/performance.md).
//
// Why a batch commits each of its writes as that write alone would, so
// that no safety argument of a transaction changes:
//
//   - etcd evaluates every comparison of a transaction, nested ones too,
//     against the state before any of its writes, and applies it whole
//     or not at all, under one revision.
//   - A batch holds only writes whose footprints are disjoint: no write of
//     one (a put, or a delete's range, in any branch) touches a key that
//     another compares, reads or writes (see footprint). Each write's
//     comparisons and reads then see what they would see had it run alone
//     right before or after every other, and its writes are the ones it
//     would make: the batch is as if its writes ran one after another, in
//     any order, at one revision. Beyond that, a batch never holds two
//     writes of one election, even of disjoint keys (footprint.elections):
//     each was planned on a view of the whole election, and two candidacy
//     keys created in one revision would tie in the line's order. So a
//     revision holds at most one write of an election, as before.
//   - Every writing transaction is guarded (see repeat): a batch sent again
//     to another member applies each of its writes at most once, each
//     under its own comparisons. The batch as a whole compares nothing; it
//     counts as applied when every write in it applied, and do's rules for
//     a guarded request hold for it: an answer that does not say every
//     write applied settles the batch only when no other attempt may have
//     applied, otherwise every write in it fails as "outcome unknown".
//   - A batch that etcd refuses as a request (too many operations, too
//     large, a lease not found, permission denied) applied nothing: each of
//     its writes is then sent again alone, and gets the answer it would
//     have got alone.
const (
	batchFlights = 2   // batches (or lone writes) under way at once, the second only for a full batch
	batchMost    = 32  // writes in a batch
	batchOps     = 128 // etcd's --max-txn-ops default: a batch's depth budget
	batchBytes   = 512 << 10
)

// batcher forms and sends the batches of one backend's members.
type batcher struct {
	p   *members
	off bool // Config.WriteBatch 1: every write alone
	// election names the election a key belongs to, nil for none
	// (keys.electionOf): two writes that touch one election, whatever
	// their keys, never share a batch.
	election func(key []byte) []byte

	mu      sync.Mutex
	most    int       // writes in a batch: Config.WriteBatch, halved each time etcd refuses a batch for too many operations
	flights int       // batches under way
	queue   []*queued // writes waiting for a batch, in arrival order

	// onSend, when a test sets it, is called with the size of each batch
	// (1: a write alone) before it is sent; it may block to hold it.
	onSend atomic.Pointer[func(n int)]
	// onAnswer, when a test sets it, sees each answer etcd gives a batch
	// (to each attempt) and may replace it, as a lost answer does.
	onAnswer atomic.Pointer[func(resp *clientv3.TxnResponse, err error) (*clientv3.TxnResponse, error)]
}

// queued is one writing transaction waiting to be sent or answered.
type queued struct {
	ctx  context.Context
	req  *pb.TxnRequest
	foot footprint
	need int // etcd's operation budget it takes (see opsNeed)
	size int

	wake  chan struct{} // receives once: alone, or the answer
	alone bool          // its batch was refused: it sends itself alone
	resp  *clientv3.TxnResponse
	err   error
}

// commit sends req, a transaction that writes, alone or in a batch, and
// returns its answer as do(guarded) would. req is not changed, and must
// not be while commit runs.
func (b *batcher) commit(ctx context.Context, req *pb.TxnRequest) (*clientv3.TxnResponse, error) {
	if b.off {
		return b.sendAlone(ctx, req)
	}
	q := &queued{ctx: ctx, req: req, wake: make(chan struct{}, 1)}
	q.foot, q.size = footprintOf(req)
	q.foot.elections(b.election)
	q.need = opsNeed(req)
	b.mu.Lock()
	if b.flights == 0 && len(b.queue) == 0 {
		b.flights++
		b.mu.Unlock()
		b.send([]*queued{q}, true)
		return q.resp, q.err
	}
	b.queue = append(b.queue, q)
	b.more()
	b.mu.Unlock()
	select {
	case <-q.wake:
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(b.queue, q); i >= 0 {
			// Never sent.
			b.queue = slices.Delete(b.queue, i, i+1)
			b.mu.Unlock()
			return nil, ctx.Err()
		}
		b.mu.Unlock()
		select {
		case <-q.wake: // answered as it ended
			if q.alone {
				return nil, ctx.Err() // its batch was refused whole: never applied
			}
			return q.resp, q.err
		default:
			// In a batch under way: it may apply, and this request does
			// not wait to learn. The batch goes on for its other writes
			// until each has given up (sendBatch), so nothing of it
			// outlives the last write that waits for it.
			return nil, unknownInBatch(ctx)
		}
	}
	if q.alone {
		q.resp, q.err = b.sendAlone(ctx, req)
	}
	return q.resp, q.err
}

// unknownInBatch is the answer to a write whose context ended while its
// batch was under way: it may apply.
func unknownInBatch(ctx context.Context) error {
	return fmt.Errorf("etcd: the transaction was sent in a batch whose answer has not come, its outcome is unknown: %w: %w", errOutcomeUnknown, ctx.Err())
}

// sendAlone sends req as its own transaction.
func (b *batcher) sendAlone(ctx context.Context, req *pb.TxnRequest) (*clientv3.TxnResponse, error) {
	return do(ctx, b.p, guarded, func(resp *clientv3.TxnResponse) bool { return resp.Succeeded },
		func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
			return sendTxn(ctx, c, req)
		})
}

// send sends batch, settles each of its writes and wakes them, then
// starts the next batch of the queue, if any. It runs on a goroutine of
// its own (start), or inline on the goroutine of a lone write, whose
// request is not woken. The next batch starts last: its goroutine is
// then the one the runtime runs next (a new goroutine takes that place
// from the writes woken before it), so the writes that arrived during
// this batch go to etcd before this batch's writes finish their
// requests, which is what keeps a batch's wait to the one ahead of it.
func (b *batcher) send(batch []*queued, inline bool) {
	if f := b.onSend.Load(); f != nil {
		(*f)(len(batch))
	}
	if len(batch) == 1 {
		q := batch[0]
		q.resp, q.err = b.sendAlone(q.ctx, q.req)
	} else {
		b.sendBatch(batch)
	}
	wake := batch
	if inline {
		wake = batch[1:]
	}
	for _, q := range wake {
		q.wake <- struct{}{} // buffered: each write is woken once
	}
	b.mu.Lock()
	b.flights--
	b.more()
	b.mu.Unlock()
}

// sendBatch sends the writes of batch as the nested transactions of one
// transaction and sets each write's answer (or, when etcd refused the
// batch as a request, marks each to be sent alone).
func (b *batcher) sendBatch(batch []*queued) {
	// The batch lasts until every write in it has given up.
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	defer cancel()
	var mu sync.Mutex
	left := len(batch)
	for _, q := range batch {
		stop := context.AfterFunc(q.ctx, func() {
			mu.Lock()
			left--
			if left == 0 {
				cancel()
			}
			mu.Unlock()
		})
		defer stop()
	}
	req := &pb.TxnRequest{Success: make([]*pb.RequestOp, len(batch))}
	for i, q := range batch {
		req.Success[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: q.req}}
	}
	resp, err := do(ctx, b.p, guarded, func(resp *clientv3.TxnResponse) bool {
		for _, r := range resp.Responses {
			if !r.GetResponseTxn().GetSucceeded() {
				return false
			}
		}
		return true
	}, func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
		resp, err := sendTxn(ctx, c, req)
		if f := b.onAnswer.Load(); f != nil {
			resp, err = (*f)(resp, err)
		}
		return resp, err
	})
	if err == nil && len(resp.Responses) != len(batch) {
		err = fmt.Errorf("etcd: a batch of %d transactions answered with %d: %w", len(batch), len(resp.Responses), errOutcomeUnknown)
	}
	switch {
	case err == nil:
		for i, q := range batch {
			n := resp.Responses[i].GetResponseTxn()
			q.resp = &clientv3.TxnResponse{Header: resp.Header, Succeeded: n.GetSucceeded(), Responses: n.GetResponses()}
		}
	case refusedWhole(err) && ctx.Err() == nil:
		if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrGRPCTooManyOps) {
			b.mu.Lock()
			b.most = max(1, min(b.most, len(batch))/2)
			b.mu.Unlock()
		}
		for _, q := range batch {
			q.alone = true
		}
		// The first write is sent again here, on the batch's goroutine.
		q := batch[0]
		q.alone = false
		q.resp, q.err = b.sendAlone(q.ctx, q.req)
	default:
		for _, q := range batch {
			q.err = err
		}
	}
}

// refusedWhole reports whether err, a batch's, is etcd refusing the batch
// as a request, which applied none of its writes.
func refusedWhole(err error) bool {
	return !retriable(err) && !errors.Is(err, errOutcomeUnknown) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// more starts batches of the queue: the next when none is under way, and
// one beside the one under way while a full one waits (so also when a
// batch ends with a full queue behind it). take never returns an empty
// batch of a queue that holds a write, so the loop ends. b.mu is held.
func (b *batcher) more() {
	for len(b.queue) > 0 && (b.flights == 0 || (b.flights < batchFlights && len(b.queue) >= b.most)) {
		b.start(b.take())
	}
}

// start sends batch on a goroutine of its own, as one more flight. b.mu
// is held.
func (b *batcher) start(batch []*queued) {
	b.flights++
	go b.send(batch, false)
}

// take removes from the queue, and returns, the next batch: the waiting
// writes, in arrival order, that fit beside the ones taken before them
// (disjoint footprints; etcd's operation and size limits). Writes that do
// not fit stay, in order, for a later batch. b.mu is held.
func (b *batcher) take() []*queued {
	// Writes whose context ended while they waited are dropped by their
	// own goroutines; one taken now still gets the batch's answer.
	if len(b.queue) == 0 {
		return nil
	}
	var batch []*queued
	need, size := 0, 0
	rest := b.queue[:0]
	for _, q := range b.queue {
		fits := len(batch) < b.most &&
			(len(batch) == 0 || max(need, q.need)+len(batch)+1 <= batchOps) &&
			(len(batch) == 0 || size+q.size <= batchBytes) &&
			!slices.ContainsFunc(batch, func(p *queued) bool { return p.foot.conflicts(&q.foot) })
		if !fits {
			rest = append(rest, q)
			continue
		}
		batch = append(batch, q)
		need, size = max(need, q.need), size+q.size
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return batch
}

// span is a key (end empty) or a range of keys [key, end) as etcd takes
// them; an end of "\x00" is every key from key on. Its bytes are the
// request's own, which nothing changes while the request is under way.
type span struct{ key, end []byte }

// before reports whether x sorts before the end of s, without building
// the end: a single key's span [key, key+"\x00") holds nothing between
// key and its end, so x lies before that end exactly when x <= key.
func (s span) before(x []byte) bool {
	switch {
	case len(s.end) == 0:
		return bytes.Compare(x, s.key) <= 0
	case len(s.end) == 1 && s.end[0] == 0:
		return true // open-ended
	}
	return bytes.Compare(x, s.end) < 0
}

func (s span) overlaps(o span) bool {
	return s.before(o.key) && o.before(s.key)
}

// footprint is what a transaction reads (its comparisons and gets) and
// writes (its puts and deletes), over every branch, and the elections
// whose keys it touches (see elections).
type footprint struct {
	reads, writes []span
	names         [][]byte
}

// conflicts reports whether one of f and g writes what the other reads or
// writes, or both touch one election.
func (f *footprint) conflicts(g *footprint) bool {
	hits := func(ws, ss []span) bool {
		for _, w := range ws {
			for _, s := range ss {
				if w.overlaps(s) {
					return true
				}
			}
		}
		return false
	}
	for _, n := range f.names {
		if slices.ContainsFunc(g.names, func(m []byte) bool { return bytes.Equal(n, m) }) {
			return true
		}
	}
	return hits(f.writes, g.writes) || hits(f.writes, g.reads) || hits(g.writes, f.reads)
}

// elections names in f every election (found by election) whose keys f
// reads or writes, so that two writes of one election conflict even
// where their keys do not: each of an election's writes is planned on a
// view of all its keys (who holds, the order of the line), and the line's
// order is by create revision, which two candidacy keys written in one
// batch would share.
func (f *footprint) elections(election func(key []byte) []byte) {
	if election == nil {
		return
	}
	for _, ss := range [][]span{f.reads, f.writes} {
		for _, s := range ss {
			if e := election(s.key); e != nil && !slices.ContainsFunc(f.names, func(n []byte) bool { return bytes.Equal(n, e) }) {
				f.names = append(f.names, e)
			}
		}
	}
}

// footprintOf returns the footprint of a transaction and about how many
// bytes it takes in a request.
func footprintOf(req *pb.TxnRequest) (footprint, int) {
	var f footprint
	reads, writes, size := measure(req)
	spans := make([]span, 0, reads+writes) // one allocation for both
	f.reads, f.writes = spans[:0:reads], spans[reads:reads]
	f.walk(req)
	for _, ss := range [][]span{f.reads, f.writes} {
		for _, s := range ss {
			size += len(s.key) + len(s.end) + 16
		}
	}
	return f, size
}

// walk adds to f the spans of req, nested transactions' too.
func (f *footprint) walk(req *pb.TxnRequest) {
	for _, c := range req.Compare {
		f.reads = append(f.reads, span{c.Key, c.RangeEnd})
	}
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestTxn:
				f.walk(r.RequestTxn)
			case *pb.RequestOp_RequestRange:
				f.reads = append(f.reads, span{r.RequestRange.Key, r.RequestRange.RangeEnd})
			case *pb.RequestOp_RequestPut:
				f.writes = append(f.writes, span{key: r.RequestPut.Key})
			case *pb.RequestOp_RequestDeleteRange:
				f.writes = append(f.writes, span{r.RequestDeleteRange.Key, r.RequestDeleteRange.RangeEnd})
			}
		}
	}
}

// measure counts the spans walk adds for req, and the bytes of the
// values it puts.
func measure(req *pb.TxnRequest) (reads, writes, values int) {
	reads = len(req.Compare)
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			switch r := op.Request.(type) {
			case *pb.RequestOp_RequestTxn:
				nr, nw, nv := measure(r.RequestTxn)
				reads, writes, values = reads+nr, writes+nw, values+nv
			case *pb.RequestOp_RequestRange:
				reads++
			case *pb.RequestOp_RequestPut:
				writes, values = writes+1, values+len(r.RequestPut.Value)
			default:
				writes++
			}
		}
	}
	return reads, writes, values
}

// opsNeed is the operation budget a transaction takes in etcd's check of
// --max-txn-ops: its largest list (comparisons, then, else) plus what its
// nested transactions take.
func opsNeed(req *pb.TxnRequest) int {
	n, nested := max(len(req.Compare), len(req.Success), len(req.Failure)), 0
	for _, ops := range [][]*pb.RequestOp{req.Success, req.Failure} {
		for _, op := range ops {
			if t := op.GetRequestTxn(); t != nil {
				nested = max(nested, opsNeed(t))
			}
		}
	}
	return n + nested
}
