package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/electorhq/elector/gateway"
)

// DefaultHistory is how many events a Backend keeps, at least, for watchers
// to resume from (up to twice as many are held between trims).
const DefaultHistory = 10000

// Backend is an in-memory gateway.Backend. Its zero value is not usable; call New.
type Backend struct {
	history int

	mu        sync.Mutex
	elections map[string]*gateway.Record
	seq       uint64          // id of the last event appended
	ring      []gateway.Event // the last events, oldest first; ring[i] has id first+i
	first     uint64          // id of ring[0]
	changed   chan struct{}   // closed and replaced whenever events are appended or deadlines move
	kv        map[string]kvItem
	kvRev     uint64 // revision of the last KV write
	// deleted holds the last term of each deleted election, so that an
	// election created again under its name continues above it.
	deleted map[string]uint64
	// due and scheduled are the elections' next deadlines, for Run.
	due       deadlines
	scheduled map[string]time.Time
}

var _ gateway.Backend = (*Backend)(nil)

// MaxHolders implements gateway.MultiHolder: the Record's slots, under the
// backend's mutex, hold up to gateway.MaxHolders.
func (b *Backend) MaxHolders() int { return gateway.MaxHolders }

// Ping implements gateway.Pinger: a Backend in the process is always
// there to serve.
func (b *Backend) Ping(context.Context) error { return nil }

// CaughtUp implements gateway.CatchUpReporter: reads are served from the
// store itself, which is never behind.
func (b *Backend) CaughtUp(context.Context) error { return nil }

// Option configures a Backend.
type Option func(*Backend)

// WithHistory sets how many events are kept for resuming watchers
// (default DefaultHistory). Values below 1 are ignored.
func WithHistory(n int) Option {
	return func(b *Backend) {
		if n > 0 {
			b.history = n
		}
	}
}

// New returns an empty Backend.
func New(opts ...Option) *Backend {
	b := &Backend{history: DefaultHistory, elections: map[string]*gateway.Record{}, kv: map[string]kvItem{}, first: 1,
		changed: make(chan struct{}), deleted: map[string]uint64{}, scheduled: map[string]time.Time{}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Campaign implements gateway.Backend.
func (b *Backend) Campaign(_ context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		r = b.create(election, defaults)
	}
	ev, err := r.Campaign(time.Now(), c)
	b.update(r, ev)
	if err != nil {
		return gateway.Status{}, fmt.Errorf("memory: campaign: %w", err)
	}
	return b.status(r, c.ID)
}

// Heartbeat implements gateway.Backend.
func (b *Backend) Heartbeat(_ context.Context, election, id, tokenHash string) (gateway.Status, error) {
	return b.candidateOp("heartbeat", election, id, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Heartbeat(now, id, tokenHash)
	})
}

// Resign implements gateway.Backend.
func (b *Backend) Resign(_ context.Context, election, id, tokenHash string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.record(election)
	if err != nil {
		return fmt.Errorf("memory: resign %q: %w", id, err)
	}
	ev, err := r.Resign(time.Now(), id, tokenHash)
	b.update(r, ev)
	if err != nil {
		return fmt.Errorf("memory: resign: %w", err)
	}
	return nil
}

// ReportError implements gateway.Backend.
func (b *Backend) ReportError(_ context.Context, election, id, tokenHash, reason string) (gateway.Status, error) {
	return b.candidateOp("report error", election, id, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.ReportError(now, id, tokenHash, reason)
	})
}

// FailLeader implements gateway.LeaderFailer.
func (b *Backend) FailLeader(_ context.Context, election, id, tokenHash string, term uint64, reason string) (gateway.Status, error) {
	return b.candidateOp("fail leader", election, id, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.FailLeader(now, id, tokenHash, term, reason)
	})
}

func (b *Backend) candidateOp(op, election, id string, f func(*gateway.Record, time.Time) ([]gateway.Event, error)) (gateway.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.record(election)
	if err != nil {
		return gateway.Status{}, fmt.Errorf("memory: %s %q: %w", op, id, err)
	}
	ev, err := f(r, time.Now())
	b.update(r, ev) // a cooldown may now be the earliest deadline
	if err != nil {
		return gateway.Status{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	return b.status(r, id)
}

// record returns an election's record, advanced to now. An unknown election
// is reported as ErrCandidateNotFound by the candidate operations' callers.
func (b *Backend) record(election string) (*gateway.Record, error) {
	r, ok := b.elections[election]
	if !ok {
		return nil, gateway.ErrCandidateNotFound
	}
	b.update(r, r.Advance(time.Now()))
	return r, nil
}

func (b *Backend) status(r *gateway.Record, id string) (gateway.Status, error) {
	st, ok := r.Status(id)
	if !ok {
		return gateway.Status{}, fmt.Errorf("memory: %q: %w", id, gateway.ErrCandidateNotFound)
	}
	return st, nil
}

func (b *Backend) snapshot(r *gateway.Record) gateway.Election {
	e := r.Snapshot()
	e.Cursor = gateway.After(b.seq).String()
	return e
}

// Election implements gateway.Backend.
func (b *Backend) Election(_ context.Context, election string) (gateway.Election, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		return gateway.Election{}, fmt.Errorf("memory: %q: %w", election, gateway.ErrElectionNotFound)
	}
	b.update(r, r.Advance(time.Now()))
	return b.snapshot(r), nil
}

// Elections implements gateway.Backend.
func (b *Backend) Elections(_ context.Context) ([]gateway.Election, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	out := make([]gateway.Election, 0, len(b.elections))
	for _, r := range b.elections {
		b.update(r, r.Advance(now))
	}
	for _, r := range b.elections {
		out = append(out, b.snapshot(r))
	}
	slices.SortFunc(out, func(x, y gateway.Election) int { return cmp.Compare(x.Name, y.Name) })
	return out, gateway.After(b.seq).String(), nil
}

// Configure implements gateway.Backend.
func (b *Backend) Configure(_ context.Context, election string, s gateway.Settings) (gateway.Election, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		r = b.create(election, s)
	}
	b.update(r, r.Configure(time.Now(), s))
	return b.snapshot(r), nil
}

// Head implements gateway.Header: the id of the last event appended.
func (b *Backend) Head(context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return gateway.After(b.seq).String(), nil
}

// CountElections implements gateway.ElectionCounter.
func (b *Backend) CountElections(context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.elections), nil
}

// create adds a new election, continuing the terms of a deleted one of the
// same name. Callers hold b.mu.
func (b *Backend) create(election string, s gateway.Settings) *gateway.Record {
	r := gateway.NewRecord(election, s)
	r.Term = b.deleted[election]
	delete(b.deleted, election)
	b.elections[election] = r
	return r
}

// DeleteElection implements gateway.ElectionDeleter; the election's last
// term is kept for a successor of the same name. An election whose failed
// or demoted holder's promise still holds (gateway.Record.FailLeader,
// Configure) is not empty: deleting it would let a newcomer lead at once.
func (b *Backend) DeleteElection(_ context.Context, election string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		return fmt.Errorf("memory: delete %q: %w", election, gateway.ErrElectionNotFound)
	}
	b.update(r, r.Advance(time.Now()))
	if len(r.Line) > 0 || len(r.Cooling) > 0 {
		return fmt.Errorf("memory: delete %q: %d candidates: %w", election, len(r.Line)+len(r.Cooling), gateway.ErrElectionNotEmpty)
	}
	if len(r.Held) > 0 {
		h := r.Held[0]
		return fmt.Errorf("memory: delete %q: the promise of ended term %d holds until %s: %w", election, h.Term, h.Until.Format(time.RFC3339Nano), gateway.ErrElectionNotEmpty)
	}
	b.deleted[election] = r.Term
	delete(b.elections, election)
	delete(b.scheduled, election) // its heap entry, if any, is skipped
	return nil
}

// CheckToken implements gateway.TokenChecker.
func (b *Backend) CheckToken(_ context.Context, election, id, tokenHash string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.record(election)
	if err != nil {
		return fmt.Errorf("memory: check token of %q: %w", id, err)
	}
	e := r.Find(id)
	switch {
	case e == nil:
		return fmt.Errorf("memory: check token of %q in %q: %w", id, election, gateway.ErrCandidateNotFound)
	case !gateway.TokenMatches(e.TokenHash, tokenHash):
		return fmt.Errorf("memory: check token of %q in %q: %w", id, election, gateway.ErrTokenMismatch)
	}
	return nil
}
