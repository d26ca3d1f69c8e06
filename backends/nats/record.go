package nats

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// stored is a record as read from the stream, at the sequence it was
// written at (0 for an election that has no record yet).
type stored struct {
	rec *gateway.Record
	seq uint64
	// deleted marks a tombstone: the election was deleted; rec holds its
	// last term and no candidate. Reads treat it as absent.
	deleted bool
	events  []gateway.Event // with ids; nil in the view, which keeps only nev
	nev     int             // how many events the record carries
	prev    uint64          // sequence of the record before this one, if hasPrev
	// hasPrev is false for records written without Prev (older writers)
	// and for records not read from the stream.
	hasPrev bool
	// capped, when set, is the view's newest event, before s's own cursor
	// (view.newestCursor): cursor returns it instead.
	capped *gateway.Position
}

// viewed is s as the view keeps it: its record, sequence and number of
// events, and nothing that no read of the view needs (its events: watches
// decode their own; the chain: watches check it), so that an election
// costs the view little more than its record.
func (s stored) viewed() viewed {
	return viewed{rec: s.rec, seq: s.seq, nev: int32(s.nev), deleted: s.deleted}
}

// viewed is a record as the view keeps it (stored.viewed).
type viewed struct {
	rec     *gateway.Record
	seq     uint64
	nev     int32
	deleted bool
}

// stored returns v as a stored record.
func (v viewed) stored() stored {
	return stored{rec: v.rec, seq: v.seq, nev: int(v.nev), deleted: v.deleted}
}

// position is the position just after s's events, "<seq>-<events>".
func (s stored) position() gateway.Position {
	return gateway.Position{Rev: s.seq, Index: s.nev}
}

// cursor returns the id of the last event reflected in s, or the view's
// newest event if that is earlier (capped).
func (s stored) cursor() string {
	if s.capped != nil {
		return s.capped.String()
	}
	return eventID(s.seq, s.nev)
}

// snapshot returns the election as the API shows it, with its cursor.
func (s stored) snapshot() gateway.Election {
	e := s.rec.Snapshot()
	e.Cursor = s.cursor()
	return e
}

// eventID is the id of the i-th event (1-based) of the record message at
// stream sequence seq; eventID(seq, n) with n the message's event count is
// also the cursor just after that message.
func eventID(seq uint64, i int) string {
	return gateway.Position{Rev: seq, Index: i}.String()
}

// parseCursor reads an event id or a cursor in either form of
// gateway.Position: "<seq>-<i>" (after the i-th event of the record at
// seq), or "<seq>" (after every event of it; i is then math.MaxInt).
func parseCursor(id string) (seq uint64, i int, err error) {
	p, ok := gateway.ParsePosition(id)
	if !ok {
		return 0, 0, fmt.Errorf("event id %q is neither <seq> nor <seq>-<index>", id)
	}
	return p.Rev, p.Index, nil
}

// decode reads a record message.
func decode(election string, seq uint64, data []byte) (stored, error) {
	m, rec, deleted, err := decodeMessage(data)
	if err != nil {
		return stored{}, fmt.Errorf("nats: record %q at %d: %w", election, seq, err)
	}
	if err := rec.Check(); err != nil {
		return stored{}, fmt.Errorf("nats: record %q at %d: %w", election, seq, err)
	}
	rec.EngineTimed = true // see "Timers" in the package doc
	s := stored{rec: rec, seq: seq, deleted: deleted, events: make([]gateway.Event, len(m.Events)), nev: len(m.Events)}
	if m.Prev != nil {
		s.prev, s.hasPrev = *m.Prev, true
	}
	for i, p := range m.Events {
		s.events[i] = gateway.Event{
			ID: eventID(seq, i+1), Type: p.Type, Time: p.Timestamp, Election: p.Data.Election,
			Term: p.Data.Term, Candidate: p.Data.Candidate, Previous: p.Data.Previous,
			Reason: p.Data.Reason, Detail: p.Data.Detail,
		}
	}
	return s, nil
}

// load reads the latest record of election from the stream leader. found
// is false when the election has no record yet.
func (b *Backend) load(ctx context.Context, election string) (s stored, found bool, err error) {
	if err := b.connected(); err != nil {
		return stored{}, false, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	var m *jetstream.RawStreamMsg
	err = b.resent(ctx, func(ctx context.Context) (err error) {
		m, err = b.records.GetLastMsgForSubject(ctx, b.subj.record(election))
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return stored{}, false, b.confirmQuorum(ctx)
	}
	if err != nil {
		return stored{}, false, translate(err)
	}
	// As fetchHead: an answer from a leader cut off from its quorum may be
	// stale (quorum.go).
	if err := b.confirmQuorum(ctx); err != nil {
		return stored{}, false, err
	}
	// Nothing is decided on a record that a power loss could take back.
	if err := b.durable(ctx, m.Sequence); err != nil {
		return stored{}, false, err
	}
	s, err = decode(election, m.Sequence, m.Data)
	return s, err == nil, err
}

// transition computes a new record from rec at now. It returns the events
// it caused and the error to report to the caller; see apply.
type transition func(ctx context.Context, rec *gateway.Record, now time.Time) ([]gateway.Event, error)

// applyMode says when apply writes the record a transition computed.
type applyMode int

const (
	// writeOnEvents writes only when the transition caused events (time
	// passing, an expiry): a heartbeat or a reconciler tick that finds
	// nothing to do writes nothing.
	writeOnEvents applyMode = iota
	// writeOnSuccess also writes when the transition succeeded without
	// events (new settings, a cooldown restarted).
	writeOnSuccess
)

// write runs the transitions of calls, one election's, in order, under
// one compare-and-set: it takes the latest record and its sequence,
// applies each transition to the record the one before it left, and
// publishes the result, with every event they caused, with
// Nats-Expected-Last-Subject-Sequence set to that sequence. If another
// writer got there first the publish fails with "wrong last sequence",
// and write reloads from the stream leader and runs them all again after
// a short jittered back-off. This is what keeps gateway.Record's
// single-leader argument true across replicas: every record stored was
// computed from the one stored just before it, by transitions of the
// Record, each taking the record as the one before left it, as if each
// were stored on its own (see apply for why storing them together is the
// same). The retries follow gateway.Conflicts; after its last attempt
// write gives up with gateway.ErrContended, having written nothing.
//
// The first attempt starts from the view's record (a copy), when Run is
// running: a stale one only costs a refused publish and a reload. Only a
// publish the stream accepted proves a base current, so outcomes that
// write nothing (every transition refused, or had nothing to do) are never
// taken from a cached base: write then reloads and runs them again.
//
// A call's create gives the settings of an election that has no record
// yet; with nil, a missing election is gateway.ErrElectionNotFound for
// that call. Each call is left the record as stored (or as loaded, if
// nothing was written) and its transition's error.
func (b *Backend) write(ctx context.Context, election string, calls []*applyCall) {
	v := b.running()
	var cached *stored
	creates := slices.ContainsFunc(calls, func(c *applyCall) bool { return c.create != nil })
	if v != nil {
		if s, ok := v.latest(election); ok {
			s.rec = clone(s.rec)
			cached = &s
		} else if creates {
			cached = &stored{} // no record: the view has none, and one of calls creates it
		}
	}
	fail := func(err error) {
		for _, c := range calls {
			why := err
			if cerr := c.ctx.Err(); cerr != nil {
				// Its caller gave up: the write failed for it because
				// of that, as it would have written alone.
				why = fmt.Errorf("%w: %w", gateway.ErrUnavailable, cerr)
			}
			c.s, c.err = stored{}, fmt.Errorf("nats: %s %q: %w", c.op, election, why)
		}
	}
	conflicts := 0
	for {
		var cur stored
		fromCache := cached != nil
		if fromCache {
			cur, cached = *cached, nil
		} else {
			var err error
			if cur, _, err = b.load(ctx, election); err != nil {
				fail(err)
				return
			}
		}
		var before []timer
		if cur.rec != nil && !cur.deleted {
			before = timers(cur.rec)
		}
		now := b.now()
		var ev []gateway.Event
		writes, again := false, false
		for _, c := range calls {
			c.s, c.err = stored{}, c.panicked
			if c.panicked != nil {
				continue
			}
			if err := c.ctx.Err(); err != nil {
				c.err = fmt.Errorf("nats: %s %q: %w: %w", c.op, election, gateway.ErrUnavailable, err)
				continue
			}
			base := cur
			if cur.rec == nil || cur.deleted {
				// No record, or a deleted election: absent, unless this
				// call creates it, continuing from the tombstone's term
				// and sequence.
				if c.create == nil {
					c.err = fmt.Errorf("nats: %s %q: %w", c.op, election, gateway.ErrElectionNotFound)
					continue
				}
				rec := gateway.NewRecord(election, *c.create)
				if cur.rec != nil {
					rec.Term = cur.rec.Term
				}
				cur.rec, cur.deleted = rec, false
			}
			cur.rec.EngineTimed = true // see "Timers" in the package doc
			// A transition that returns an error without events changed
			// nothing a later one could see (gateway.Record's refusals
			// change the record only through Advance, whose steps are
			// events), so the next call goes on from the same record.
			more, err := c.run(cur.rec, now)
			if c.panicked != nil {
				// It may have left the record half changed: start again
				// from the stream leader's, without it.
				again = true
				break
			}
			if len(more) == 0 && (err != nil || c.mode == writeOnEvents) {
				if base.rec != cur.rec {
					cur = base // a creation that came to nothing
				}
			} else {
				writes = true
			}
			ev = append(ev, more...)
			if err != nil {
				c.err = fmt.Errorf("nats: %s: %w", c.op, err)
			}
		}
		if again {
			continue
		}
		if !writes {
			if fromCache {
				continue // not proven current: decide on the stream leader's record
			}
			for _, c := range calls {
				if cur.rec != nil && !cur.deleted {
					c.s = cur
				}
			}
			return
		}
		if err := b.startTimers(ctx, cur.rec, before, now, false); err != nil {
			fail(err)
			return
		}
		next, err := b.publishRecord(ctx, cur, ev)
		if err == nil {
			if v != nil {
				v.put(next)
			}
			if err := b.startTimers(ctx, next.rec, before, now, true); err != nil && ctx.Err() == nil {
				// The record is stored: its hold has no marker yet, and the
				// sweep gives it one (sweepTimers), later, never earlier.
				b.log.LogAttrs(ctx, slog.LevelWarn, "nats: start timer after record", slog.String("election", election), slog.Any("err", err))
			}
			for _, c := range calls {
				c.s = next
			}
			return
		}
		if errors.Is(err, gateway.ErrLimit) && len(calls) > 1 {
			// Too large together: each on its own, so that only a call
			// whose own record is too large fails.
			for _, c := range calls {
				b.write(ctx, election, []*applyCall{c})
			}
			return
		}
		if !isConflict(err) {
			fail(translate(err))
			return
		}
		if fromCache {
			continue // the view was behind: reload at once
		}
		// Another replica wrote first: reload and try again, within
		// gateway.Conflicts.
		conflicts++
		if err := gateway.Conflicts.Try(ctx, conflicts); err != nil {
			fail(err)
			return
		}
	}
}

// publishRecord writes rec with its events over cur.seq.
func (b *Backend) publishRecord(ctx context.Context, cur stored, ev []gateway.Event) (stored, error) {
	data, err := encode(cur.rec, ev, cur.seq, cur.deleted)
	if err != nil {
		return stored{}, err
	}
	m := &nats.Msg{Subject: b.subj.record(cur.rec.Name), Data: data,
		Header: nats.Header{jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatUint(cur.seq, 10)}}}
	seq, err := b.publish(ctx, m, b.cfg.Stream)
	if err != nil && unanswered(err) {
		if s, ok := b.landed(ctx, m); ok {
			seq, err = s, nil
		}
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) {
			return stored{}, fmt.Errorf("record of %d bytes: %w", len(data), gateway.ErrLimit)
		}
		return stored{}, err
	}
	// Stored; acknowledged once it is on disk (commit.go).
	if err := b.durable(ctx, seq); err != nil {
		return stored{}, err
	}
	out := stored{rec: cur.rec, seq: seq, events: ev, nev: len(ev)}
	for i := range out.events {
		out.events[i].ID = eventID(seq, i+1)
	}
	return out, nil
}

// unanswered reports whether a publish that failed with err may have been
// stored: no answer came (a timeout, a connection lost after the request
// went out) or one came that could not be read, rather than JetStream's
// refusal or no stream at all to send it to.
func unanswered(err error) bool {
	var refused *jetstream.APIError
	return !errors.As(err, &refused) && !errors.Is(err, jetstream.ErrNoStreamResponse)
}

// landed reports the sequence at which JetStream stored m, a record
// message whose publish got no answer, if it did: the subject's last
// message is m byte for byte (m names the sequence it was written over
// and the times of its events, so no other write is the same), read from
// the stream leader with its quorum confirmed, as load reads a record.
// Then the write goes on as if the acknowledgement had come; otherwise it
// fails as before, unsure, and a record that landed later is read by the
// next write like any other. Without this, a write whose acknowledgement
// was lost answered 503 though it was stored: a campaign's candidate,
// retrying, was told that it exists.
func (b *Backend) landed(ctx context.Context, m *nats.Msg) (uint64, bool) {
	if b.connected() != nil {
		return 0, false
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	var last *jetstream.RawStreamMsg
	err := b.resent(ctx, func(ctx context.Context) (err error) {
		last, err = b.records.GetLastMsgForSubject(ctx, m.Subject)
		return err
	})
	if err != nil || !bytes.Equal(last.Data, m.Data) {
		return 0, false
	}
	if b.confirmQuorum(ctx) != nil {
		return 0, false
	}
	return last.Sequence, true
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
