package nats

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Election implements gateway.Backend. With Run running it answers from
// the replica's view, caught up with a read index fetched after the call
// (see view); otherwise, or while the view lags, from the stream
// leader. Either way it reflects every write acknowledged before it
// began; a local read (gateway.WithLocalRead) may answer from the view as
// it is instead (viewAs). Errors: gateway.ErrElectionNotFound,
// gateway.ErrUnavailable.
func (b *Backend) Election(ctx context.Context, election string) (gateway.Election, error) {
	s, err := b.readAs(ctx, election, gateway.LocalRead(ctx))
	if err != nil {
		return gateway.Election{}, err
	}
	e, err := b.show(ctx, s)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("nats: election %q: %w", election, err)
	}
	return e, nil
}

// ElectionLeader implements gateway.LeaderReader: Election without the
// candidates, so a read of the leader looks up one liveness, not one per
// candidate. A local read as Election's.
func (b *Backend) ElectionLeader(ctx context.Context, election string) (gateway.Election, error) {
	s, err := b.readAs(ctx, election, gateway.LocalRead(ctx))
	if err != nil {
		return gateway.Election{}, err
	}
	e := s.rec.LeaderSnapshot()
	e.Cursor = s.cursor()
	if err := b.holdersExpiry(ctx, s.rec, e.Leader, e.Holders, "", time.Time{}); err != nil {
		return gateway.Election{}, fmt.Errorf("nats: election %q: %w", election, err)
	}
	return e, nil
}

// holdersExpiry fills the ExpiresAt of leader and of every holder in
// holders (one slot's holder each) from their liveness messages; own, if
// not zero, is candidate id's, just written by the caller.
func (b *Backend) holdersExpiry(ctx context.Context, rec *gateway.Record, leader *gateway.Leader, holders []gateway.Leader, id string, own time.Time) error {
	known := func(hid string) (time.Time, error) {
		if hid == id && !own.IsZero() {
			return own, nil
		}
		e := rec.Find(hid)
		if e == nil {
			return time.Time{}, nil
		}
		return b.expiresAt(ctx, rec.Name, e.TokenHash)
	}
	var err error
	for i := range holders {
		if holders[i].ExpiresAt, err = known(holders[i].ID); err != nil {
			return err
		}
	}
	if leader != nil {
		if len(holders) > 0 {
			leader.ExpiresAt = holders[0].ExpiresAt
		} else if leader.ExpiresAt, err = known(leader.ID); err != nil {
			return err
		}
	}
	return nil
}

// CountCandidates implements gateway.CandidateCounter: from the view
// without a read index when Run runs (it may lag other replicas' writes),
// otherwise from a linearizable read.
func (b *Backend) CountCandidates(ctx context.Context, election string) (int, error) {
	var s stored
	if v := b.running(); v != nil && v.isFilled() {
		var ok bool
		if s, ok = v.latest(election); !ok || s.deleted {
			return 0, fmt.Errorf("nats: election %q: %w", election, gateway.ErrElectionNotFound)
		}
	} else {
		var err error
		if s, err = b.read(ctx, election); err != nil {
			return 0, err
		}
	}
	return len(s.rec.Line) + len(s.rec.Cooling), nil
}

// read returns election's latest record, linearizably: from the view
// caught up with a read index, or from the stream leader.
func (b *Backend) read(ctx context.Context, election string) (stored, error) {
	return b.readAs(ctx, election, false)
}

// readAs is read, or with local the record of the view as it is while it
// follows the stream (viewAs).
func (b *Backend) readAs(ctx context.Context, election string, local bool) (stored, error) {
	v, err := b.viewAs(ctx, local)
	if err != nil {
		return stored{}, fmt.Errorf("nats: election %q: %w", election, err)
	}
	var s stored
	found := false
	if v != nil {
		s, found = v.latest(election)
		s = v.newestCursor(s)
	} else if s, found, err = b.load(ctx, election); err != nil {
		return stored{}, fmt.Errorf("nats: election %q: %w", election, err)
	}
	if !found || s.deleted {
		return stored{}, fmt.Errorf("nats: election %q: %w", election, gateway.ErrElectionNotFound)
	}
	return s, nil
}

// Configure implements gateway.Backend.
func (b *Backend) Configure(ctx context.Context, election string, set gateway.Settings) (gateway.Election, error) {
	s, err := b.apply(ctx, "configure", election, &set, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Configure(now, set), nil
	})
	if err != nil {
		return gateway.Election{}, err
	}
	e, err := b.show(ctx, s)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("nats: configure %q: %w", election, err)
	}
	return e, nil
}

// Elections implements gateway.Backend. With Run running it answers from
// the view's delivered records, caught up with a read index as Election
// does: the stream's state at one sequence, whose cursor is the newest
// event up to it (as Head).
// Otherwise it reads the latest record of every election with one ordered
// consumer (deliver last per subject, deleted afterwards) until nothing
// is pending. A local read as Election's.
func (b *Backend) Elections(ctx context.Context) ([]gateway.Election, string, error) {
	v, err := b.viewAs(ctx, gateway.LocalRead(ctx))
	if err != nil {
		return nil, "", fmt.Errorf("nats: elections: %w", err)
	}
	var recs []stored
	var cursor string
	if v != nil {
		v.mu.Lock()
		recs = make([]stored, 0, len(v.recs))
		for _, s := range v.recs {
			recs = append(recs, s.stored())
		}
		// Not "<seen>", past Head whenever the latest record has events:
		// newest is the same point of the event stream (no event lies
		// between them) and one Head reaches.
		cursor = v.newest.String()
		v.mu.Unlock()
	} else {
		all, last, err := b.scan(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("nats: elections: %w", err)
		}
		for _, s := range all {
			recs = append(recs, s)
		}
		cursor = last.cursor()
	}
	out := make([]gateway.Election, 0, len(recs))
	for _, s := range recs {
		if s.deleted {
			continue
		}
		e, err := b.show(ctx, s)
		if err != nil {
			return nil, "", fmt.Errorf("nats: elections: %w", err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(x, y gateway.Election) int { return strings.Compare(x.Name, y.Name) })
	return out, cursor, nil
}

// scan returns the latest record of every election, and the record at the
// highest sequence among them, whose cursor covers all of them.
func (b *Backend) scan(ctx context.Context) (map[string]stored, stored, error) {
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	info, err := b.records.Info(ctx)
	if err != nil {
		return nil, stored{}, translate(err)
	}
	recs := map[string]stored{}
	if info.State.Msgs == 0 {
		return recs, stored{seq: info.State.LastSeq}, nil
	}
	c, err := b.js.OrderedConsumer(ctx, b.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{b.subj.record("*")},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: consumerIdle,
	})
	if err != nil {
		return nil, stored{}, translate(err)
	}
	defer b.release(b.cfg.Stream, c)
	it, err := c.Messages(pullOpts()...)
	if err != nil {
		return nil, stored{}, translate(err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	var last stored
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, stored{}, translate(err)
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, stored{}, err
		}
		s, err := decode(b.subj.electionOf(m.Subject()), md.Sequence.Stream, m.Data())
		if err != nil {
			return nil, stored{}, err
		}
		recs[s.rec.Name] = s
		if s.seq > last.seq {
			last = s
		}
		if md.NumPending == 0 {
			if err := b.durable(ctx, last.seq); err != nil {
				return nil, stored{}, err
			}
			return recs, last, nil
		}
	}
}

// show is a stored record as the API shows it, with each candidate's
// ExpiresAt taken from its liveness message (as known, or read on a miss).
func (b *Backend) show(ctx context.Context, s stored) (gateway.Election, error) {
	e := s.snapshot()
	for _, x := range slices.Concat(s.rec.Line, s.rec.Cooling) {
		exp, err := b.expiresAt(ctx, s.rec.Name, x.TokenHash)
		if err != nil {
			return gateway.Election{}, err
		}
		for i := range e.Candidates {
			if e.Candidates[i].ID == x.ID {
				e.Candidates[i].ExpiresAt = exp
			}
		}
		if e.Leader != nil && e.Leader.ID == x.ID {
			e.Leader.ExpiresAt = exp
		}
		for i := range e.Holders {
			if e.Holders[i].ID == x.ID {
				e.Holders[i].ExpiresAt = exp
			}
		}
	}
	return e, nil
}

// expiresAt is when the candidacy with tokenHash in election expires: from
// the liveness this replica knows (its own beats, the followed liveness
// stream), or read from the stream leader on a miss (zero if it is gone).
func (b *Backend) expiresAt(ctx context.Context, election, tokenHash string) (time.Time, error) {
	var nb [24]byte
	n := appendNonce(nb[:0], tokenHash)
	if exp, ok := b.live.expiryOf(b.live.aliveKey(election, n)); ok {
		return exp, nil // the subject is not even built
	}
	_, exp, _, err := b.lastBeat(ctx, b.subj.alive(election, string(n)))
	return exp, err
}

// CountElections implements gateway.ElectionCounter: the elections in the
// view, or, while Run is not running or its view is still loading, the
// records stream's subject count (one request). Either may lag other
// replicas by a write in flight; the limit it serves is best-effort.
// Errors: gateway.ErrUnavailable.
func (b *Backend) CountElections(ctx context.Context) (int, error) {
	if v := b.running(); v != nil && v.isFilled() {
		return v.count(), nil
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
