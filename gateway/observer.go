package gateway

import (
	"context"
	"time"
)

// Observer is told of every call made to an observed Backend (Observe):
// the operation, how long it took, and its error. Package metrics
// implements it; the Gateway's readiness follows its own writes with one.
// Implementations must be fast and safe for concurrent use.
//
// The operations are named after the methods: "campaign", "heartbeat",
// "resign", "report_error", "election" (also ElectionLeader), "elections"
// ("election_local" and "elections_local" for local reads, WithLocalRead),
// "configure", "watch" (starting a watch), "head", "count_elections",
// "fail_leader", "delete_election", "check_token", "transfer" (also
// TransferFrom), "handover", "cancel_transfer", "ping", "caught_up",
// "kv_get", "kv_create", "kv_update", "kv_delete", "kv_list", and of the
// hints "count_candidates" and "max_cursor". Run (the backend's loop for
// as long as it runs) and MaxHolders (a constant) are not observed.
type Observer interface {
	BackendCall(op string, d time.Duration, err error)
}

// NopObserver observes nothing.
type NopObserver struct{}

// BackendCall implements Observer.
func (NopObserver) BackendCall(string, time.Duration, error) {}

// Observe returns b with every call reported to o. It is the same Backend
// in every other way: it has the optional hints b has (LeaderReader,
// CandidateCounter, CursorBound) and no other, so a Gateway over it takes
// the same paths as over b; Unwrap returns b.
func Observe(b Backend, o Observer) Backend {
	ob := &observed{b: b, o: o}
	lr, isLR := b.(LeaderReader)
	cc, isCC := b.(CandidateCounter)
	cb, isCB := b.(CursorBound)
	r := observedLeaderReader{ob, lr}
	c := observedCandidateCounter{ob, cc}
	m := observedCursorBound{ob, cb}
	switch {
	case isLR && isCC && isCB:
		return struct {
			*observed
			LeaderReader
			CandidateCounter
			CursorBound
		}{ob, r, c, m}
	case isLR && isCC:
		return struct {
			*observed
			LeaderReader
			CandidateCounter
		}{ob, r, c}
	case isLR && isCB:
		return struct {
			*observed
			LeaderReader
			CursorBound
		}{ob, r, m}
	case isCC && isCB:
		return struct {
			*observed
			CandidateCounter
			CursorBound
		}{ob, c, m}
	case isLR:
		return struct {
			*observed
			LeaderReader
		}{ob, r}
	case isCC:
		return struct {
			*observed
			CandidateCounter
		}{ob, c}
	case isCB:
		return struct {
			*observed
			CursorBound
		}{ob, m}
	}
	return ob
}

// observed is a Backend whose calls are reported to an Observer; Observe
// adds the hints of the backend it wraps.
type observed struct {
	b Backend
	o Observer
}

var _ Backend = (*observed)(nil)

// Unwrap returns the Backend that o observes.
func (o *observed) Unwrap() Backend { return o.b }

// done reports the call op that started at start.
func (o *observed) done(op string, start time.Time, err error) {
	o.o.BackendCall(op, time.Since(start), err)
}

// Campaign implements Campaigner.
func (o *observed) Campaign(ctx context.Context, election string, c Candidacy, defaults Settings) (Status, error) {
	start := time.Now()
	st, err := o.b.Campaign(ctx, election, c, defaults)
	o.done("campaign", start, err)
	return st, err
}

// Heartbeat implements Campaigner.
func (o *observed) Heartbeat(ctx context.Context, election, id, tokenHash string) (Status, error) {
	start := time.Now()
	st, err := o.b.Heartbeat(ctx, election, id, tokenHash)
	o.done("heartbeat", start, err)
	return st, err
}

// Resign implements Campaigner.
func (o *observed) Resign(ctx context.Context, election, id, tokenHash string) error {
	start := time.Now()
	err := o.b.Resign(ctx, election, id, tokenHash)
	o.done("resign", start, err)
	return err
}

// ReportError implements Campaigner.
func (o *observed) ReportError(ctx context.Context, election, id, tokenHash, reason string) (Status, error) {
	start := time.Now()
	st, err := o.b.ReportError(ctx, election, id, tokenHash, reason)
	o.done("report_error", start, err)
	return st, err
}

// Election implements Reader.
func (o *observed) Election(ctx context.Context, election string) (Election, error) {
	start := time.Now()
	e, err := o.b.Election(ctx, election)
	o.done(readOp(ctx, "election", "election_local"), start, err)
	return e, err
}

// readOp names the operation of a read of elections: op, or local (op
// with "_local") for a local read (WithLocalRead), whose latencies are not
// a linearizable read's. Both names are constants: a read makes no string.
func readOp(ctx context.Context, op, local string) string {
	if LocalRead(ctx) {
		return local
	}
	return op
}

// Elections implements Reader.
func (o *observed) Elections(ctx context.Context) ([]Election, string, error) {
	start := time.Now()
	es, cursor, err := o.b.Elections(ctx)
	o.done(readOp(ctx, "elections", "elections_local"), start, err)
	return es, cursor, err
}

// Watch implements Reader; it reports how long starting the watch took.
func (o *observed) Watch(ctx context.Context, election, after string) (<-chan Event, error) {
	start := time.Now()
	ch, err := o.b.Watch(ctx, election, after)
	o.done("watch", start, err)
	return ch, err
}

// Configure implements Configurer.
func (o *observed) Configure(ctx context.Context, election string, s Settings) (Election, error) {
	start := time.Now()
	e, err := o.b.Configure(ctx, election, s)
	o.done("configure", start, err)
	return e, err
}

// Run implements Runner. It is not observed: it lasts as long as the
// backend runs.
func (o *observed) Run(ctx context.Context) error { return o.b.Run(ctx) }

// Head implements Header.
func (o *observed) Head(ctx context.Context) (string, error) {
	start := time.Now()
	h, err := o.b.Head(ctx)
	o.done("head", start, err)
	return h, err
}

// CountElections implements ElectionCounter.
func (o *observed) CountElections(ctx context.Context) (int, error) {
	start := time.Now()
	n, err := o.b.CountElections(ctx)
	o.done("count_elections", start, err)
	return n, err
}

// FailLeader implements LeaderFailer.
func (o *observed) FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (Status, error) {
	start := time.Now()
	st, err := o.b.FailLeader(ctx, election, id, tokenHash, term, reason)
	o.done("fail_leader", start, err)
	return st, err
}

// DeleteElection implements ElectionDeleter.
func (o *observed) DeleteElection(ctx context.Context, election string) error {
	start := time.Now()
	err := o.b.DeleteElection(ctx, election)
	o.done("delete_election", start, err)
	return err
}

// CheckToken implements TokenChecker.
func (o *observed) CheckToken(ctx context.Context, election, id, tokenHash string) error {
	start := time.Now()
	err := o.b.CheckToken(ctx, election, id, tokenHash)
	o.done("check_token", start, err)
	return err
}

// Transfer implements Transferer.
func (o *observed) Transfer(ctx context.Context, election, to, tokenHash string) (Election, error) {
	start := time.Now()
	e, err := o.b.Transfer(ctx, election, to, tokenHash)
	o.done("transfer", start, err)
	return e, err
}

// TransferFrom implements Transferer.
func (o *observed) TransferFrom(ctx context.Context, election, from, to, tokenHash string) (Election, error) {
	start := time.Now()
	e, err := o.b.TransferFrom(ctx, election, from, to, tokenHash)
	o.done("transfer", start, err)
	return e, err
}

// Handover implements Transferer.
func (o *observed) Handover(ctx context.Context, election, id, tokenHash string) (Status, error) {
	start := time.Now()
	st, err := o.b.Handover(ctx, election, id, tokenHash)
	o.done("handover", start, err)
	return st, err
}

// CancelTransfer implements Transferer.
func (o *observed) CancelTransfer(ctx context.Context, election, tokenHash string) (Election, error) {
	start := time.Now()
	e, err := o.b.CancelTransfer(ctx, election, tokenHash)
	o.done("cancel_transfer", start, err)
	return e, err
}

// MaxHolders implements MultiHolder. It is not observed: it states a
// limit, it asks the backend nothing.
func (o *observed) MaxHolders() int { return o.b.MaxHolders() }

// Ping implements Pinger.
func (o *observed) Ping(ctx context.Context) error {
	start := time.Now()
	err := o.b.Ping(ctx)
	o.done("ping", start, err)
	return err
}

// CaughtUp implements CatchUpReporter.
func (o *observed) CaughtUp(ctx context.Context) error {
	start := time.Now()
	err := o.b.CaughtUp(ctx)
	o.done("caught_up", start, err)
	return err
}

// Get implements KV.
func (o *observed) Get(ctx context.Context, key string) (Item, error) {
	start := time.Now()
	it, err := o.b.Get(ctx, key)
	o.done("kv_get", start, err)
	return it, err
}

// Create implements KV.
func (o *observed) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	start := time.Now()
	rev, err := o.b.Create(ctx, key, value)
	o.done("kv_create", start, err)
	return rev, err
}

// Update implements KV.
func (o *observed) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	start := time.Now()
	rev, err := o.b.Update(ctx, key, value, rev)
	o.done("kv_update", start, err)
	return rev, err
}

// Delete implements KV.
func (o *observed) Delete(ctx context.Context, key string, rev uint64) error {
	start := time.Now()
	err := o.b.Delete(ctx, key, rev)
	o.done("kv_delete", start, err)
	return err
}

// List implements KV.
func (o *observed) List(ctx context.Context, prefix string) ([]Item, error) {
	start := time.Now()
	items, err := o.b.List(ctx, prefix)
	o.done("kv_list", start, err)
	return items, err
}

// observedLeaderReader is the LeaderReader of an observed backend.
type observedLeaderReader struct {
	o  *observed
	lr LeaderReader
}

// ElectionLeader implements LeaderReader, observed as "election": it
// answers what Election does, with less in it.
func (r observedLeaderReader) ElectionLeader(ctx context.Context, election string) (Election, error) {
	start := time.Now()
	e, err := r.lr.ElectionLeader(ctx, election)
	r.o.done(readOp(ctx, "election", "election_local"), start, err)
	return e, err
}

// observedCandidateCounter is the CandidateCounter of an observed backend.
type observedCandidateCounter struct {
	o  *observed
	cc CandidateCounter
}

// CountCandidates implements CandidateCounter.
func (c observedCandidateCounter) CountCandidates(ctx context.Context, election string) (int, error) {
	start := time.Now()
	n, err := c.cc.CountCandidates(ctx, election)
	c.o.done("count_candidates", start, err)
	return n, err
}

// observedCursorBound is the CursorBound of an observed backend.
type observedCursorBound struct {
	o  *observed
	cb CursorBound
}

// MaxCursor implements CursorBound.
func (m observedCursorBound) MaxCursor(ctx context.Context) (string, error) {
	start := time.Now()
	c, err := m.cb.MaxCursor(ctx)
	m.o.done("max_cursor", start, err)
	return c, err
}

// observedSessions is a backend's own Sessioner whose calls are reported
// to an Observer, as observed reports the backend's other calls.
type observedSessions struct {
	s Sessioner
	o Observer
}

func (o observedSessions) OpenSession(ctx context.Context, id string, ttl time.Duration, tokenHash string) (Session, error) {
	start := time.Now()
	s, err := o.s.OpenSession(ctx, id, ttl, tokenHash)
	o.o.BackendCall("open_session", time.Since(start), err)
	return s, err
}

func (o observedSessions) KeepSession(ctx context.Context, id, tokenHash string) (Session, error) {
	start := time.Now()
	s, err := o.s.KeepSession(ctx, id, tokenHash)
	o.o.BackendCall("keep_session", time.Since(start), err)
	return s, err
}

func (o observedSessions) CloseSession(ctx context.Context, id, tokenHash string) error {
	start := time.Now()
	err := o.s.CloseSession(ctx, id, tokenHash)
	o.o.BackendCall("close_session", time.Since(start), err)
	return err
}
