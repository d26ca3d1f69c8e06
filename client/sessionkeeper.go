package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// ErrSessionEnded is the cause (context.Cause) of the cancellation of the
// contexts Lead returns when their SessionKeeper ends: SessionKeeper.Err
// says why.
var ErrSessionEnded = errors.New("elector: session ended")

// SessionConfig configures a SessionKeeper.
type SessionConfig struct {
	// TTL is how long the session's candidacies live without a
	// heartbeat; the keeper heartbeats every TTL/3. Default
	// DefaultCandidateTTL.
	TTL time.Duration
	// Logger receives the keeper's failed heartbeats and its end.
	// Default: discard.
	Logger *slog.Logger
}

// SessionKeeper is a session that keeps itself alive, as etcd's
// concurrency.Session keeps its lease alive: Client.KeepSession opens it
// and heartbeats it every TTL/3 until its context ends, Close closes it,
// or the gateway says it is gone. Campaign puts a candidacy in it; Lead
// gives a leader of one of its elections a context that ends when the
// step-down rule says to stop acting. Its methods are safe for concurrent
// use.
type SessionKeeper struct {
	c     *Client
	id    string
	token string
	ttl   time.Duration
	log   *slog.Logger

	stop    context.CancelFunc // ends the heartbeats
	stopped chan struct{}      // closed when they ended
	done    chan struct{}      // closed when the keeper ended

	mu      sync.Mutex
	last    Session // the last heartbeat's answer, or the session as opened
	sent    time.Time
	changed chan struct{} // closed at the next answer, then replaced
	leads   map[*sessionLead]struct{}
	err     error // why it ended, once done is closed
}

// sessionLead is one context given by Lead.
type sessionLead struct {
	election string
	term     uint64
	since    time.Time // answers to requests sent before it say nothing of it
	deadline time.Time
	timer    *time.Timer
	cancel   context.CancelCauseFunc
}

// KeepSession opens a session whose candidacies live cfg.TTL without a
// heartbeat and keeps it alive: it heartbeats it every TTL/3 (sooner
// again after a failure) until ctx ends, Close is called, or the gateway
// answers that the session is gone (it expired while no heartbeat got
// through, or was closed elsewhere). When ctx ends the heartbeats stop
// and the session expires after its TTL; Close closes it at once.
//
// Errors: those of OpenSession.
func (c *Client) KeepSession(ctx context.Context, cfg SessionConfig) (*SessionKeeper, error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultCandidateTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sent := time.Now()
	s, token, err := c.OpenSession(ctx, cfg.TTL)
	if err != nil {
		return nil, err
	}
	k := &SessionKeeper{
		c: c, id: s.ID, token: token, ttl: time.Duration(s.TTL), log: cfg.Logger.With(slog.String("session", s.ID)),
		stopped: make(chan struct{}), done: make(chan struct{}),
		last: s, sent: sent, changed: make(chan struct{}), leads: map[*sessionLead]struct{}{},
	}
	var run context.Context
	run, k.stop = context.WithCancel(ctx)
	go k.run(run)
	return k, nil
}

// ID is the session's id; CampaignRequest.Session takes it.
func (k *SessionKeeper) ID() string { return k.id }

// Token is the session's token: CampaignRequest.SessionToken takes it,
// and it is the token of each of the session's candidacies.
func (k *SessionKeeper) Token() string { return k.token }

// TTL is the session's TTL.
func (k *SessionKeeper) TTL() time.Duration { return k.ttl }

// Done is closed when the keeper has ended; Err says why.
func (k *SessionKeeper) Done() <-chan struct{} { return k.done }

// Err is why the keeper ended: the cause of the end of KeepSession's
// context, the gateway's answer (ErrSessionNotFound: the session expired
// while no heartbeat got through, or was closed elsewhere), or
// ErrSessionEnded after Close. Nil while it runs.
func (k *SessionKeeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Last returns the answer of the last heartbeat that got through (the
// session as opened before the first), with when that heartbeat was
// sent, and a channel closed when the next answer comes or the keeper
// ends. A candidacy of the session that the answer shows leading with a
// term may act as leader under Lead(ctx, election, term, sent).
func (k *SessionKeeper) Last() (s Session, sent time.Time, next <-chan struct{}) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last, k.sent, k.changed
}

// Campaign campaigns in election in the session (r.Session and
// r.SessionToken are set to the keeper's; r.TTL is left out, the
// session's candidacies living by its TTL), and returns the candidacy's
// status and when its request was sent: a leader acts under
// Lead(ctx, election, st.Term, sent). Errors: those of Client.Campaign.
func (k *SessionKeeper) Campaign(ctx context.Context, election string, r CampaignRequest) (st Status, sent time.Time, err error) {
	r.Session, r.SessionToken, r.TTL = k.id, k.token, 0
	sent = time.Now()
	st, _, err = k.c.Campaign(ctx, election, r)
	return st, sent, err
}

// Lead returns a context to act as the leader of election under term in,
// given that the answer to a request sent at sent showed the session's
// candidacy leading with term: its campaign (Campaign) or a heartbeat of
// the session (Last). The context is cancelled, with cause
// ErrLeadershipLost, at the step-down deadline unless a heartbeat of the
// session renews the candidacy before it, and as soon as an answer shows
// the candidacy no longer leading with term (a transfer, its resignation,
// another term); with cause ErrSessionEnded when the keeper ends; and by
// parent or the CancelFunc.
//
// The step-down deadline is that of the newest answer that names the
// candidacy (Session.StepDownDeadline), and before any, the last
// renewal's: when the last heartbeat that got through, or the opening,
// was sent, plus the TTL, minus StepDownMargin. A candidacy's expiry is
// its session's, which no campaign moves. An answer that does not name
// the candidacy ends the leadership, but for one to a heartbeat sent
// before sent, which the gateway may have answered before the campaign.
func (k *SessionKeeper) Lead(parent context.Context, election string, term uint64, sent time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	k.mu.Lock()
	if k.err != nil {
		err := k.err
		k.mu.Unlock()
		cancel(fmt.Errorf("%w: %w", ErrSessionEnded, err))
		return ctx, func() {}
	}
	l := &sessionLead{election: election, term: term, since: sent, deadline: k.sent.Add(k.ttl - StepDownMargin(k.ttl)), cancel: cancel}
	k.apply(l, k.last, k.sent)
	k.leads[l] = struct{}{}
	l.timer = time.AfterFunc(time.Until(l.deadline), func() { k.expire(l) })
	k.mu.Unlock()
	context.AfterFunc(ctx, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.leads, l)
		l.timer.Stop()
	})
	return ctx, func() { cancel(context.Canceled) }
}

// apply sets l's deadline by the answer s of a heartbeat sent at sent,
// the newest yet (the keeper heartbeats one at a time), or ends l if s no
// longer shows it leading with its term. Under k.mu.
func (k *SessionKeeper) apply(l *sessionLead, s Session, sent time.Time) {
	if _, named := s.Candidate(l.election); !named && sent.Before(l.since) {
		return // perhaps answered before the campaign
	}
	deadline, ok := s.StepDownDeadline(l.election, l.term, sent)
	if !ok {
		l.cancel(fmt.Errorf("%w: the session's candidacy in %s no longer leads with term %d", ErrLeadershipLost, l.election, l.term))
		return
	}
	l.deadline = deadline
	if l.timer != nil {
		l.timer.Reset(time.Until(deadline))
	}
}

// expire ends l at its step-down deadline, unless a heartbeat moved it
// meanwhile.
func (k *SessionKeeper) expire(l *sessionLead) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if wait := time.Until(l.deadline); wait > 0 {
		l.timer.Reset(wait)
		return
	}
	l.cancel(fmt.Errorf("%w: no heartbeat of the session got through before the step-down deadline of term %d in %s", ErrLeadershipLost, l.term, l.election))
}

// run heartbeats the session every TTL/3 from the last heartbeat sent,
// and again after a pause of TTL/10 (at most a second) while they fail,
// until ctx ends or the gateway says the session is gone.
func (k *SessionKeeper) run(ctx context.Context) {
	defer close(k.stopped)
	interval, retry := k.ttl/3, min(k.ttl/10, time.Second)
	next := interval
	for {
		if ctx.Err() != nil {
			k.end(context.Cause(ctx))
			return
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			k.end(context.Cause(ctx))
			return
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, interval)
		s, err := k.c.HeartbeatSession(rctx, k.id, k.token)
		cancel()
		switch {
		case err == nil:
			k.answered(s, sent)
			next = time.Until(sent.Add(interval))
		case ctx.Err() != nil:
			// ended meanwhile: the next turn ends the keeper
		case errors.Is(err, ErrSessionNotFound), errors.Is(err, ErrSessionTokenMismatch), errors.Is(err, ErrSessionTokenMissing):
			k.log.LogAttrs(ctx, slog.LevelWarn, "session ended", slog.Any("err", err))
			k.end(err)
			return
		default:
			k.log.LogAttrs(ctx, slog.LevelWarn, "session heartbeat failed", slog.Any("err", err))
			next = retry
		}
	}
}

// answered records the answer s of a heartbeat sent at sent and applies
// it to every Lead.
func (k *SessionKeeper) answered(s Session, sent time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return
	}
	k.last, k.sent = s, sent
	close(k.changed)
	k.changed = make(chan struct{})
	for l := range k.leads {
		k.apply(l, s, sent)
	}
}

// end ends the keeper with err, once, and every Lead with it.
func (k *SessionKeeper) end(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return
	}
	k.err = err
	cause := err
	if !errors.Is(err, ErrSessionEnded) {
		cause = fmt.Errorf("%w: %w", ErrSessionEnded, err)
	}
	for l := range k.leads {
		l.cancel(cause)
	}
	close(k.changed)
	close(k.done)
}

// Close stops the heartbeats and closes the session: each of its
// candidacies resigns, a leader handing over at once (Client.CloseSession),
// and every Lead ends first. The keeper ends with ErrSessionEnded. A
// session already gone (ErrSessionNotFound) is not an error.
//
// Errors: those of Client.CloseSession.
func (k *SessionKeeper) Close(ctx context.Context) error {
	k.end(ErrSessionEnded)
	k.stop()
	<-k.stopped
	err := k.c.CloseSession(ctx, k.id, k.token)
	if errors.Is(err, ErrSessionNotFound) {
		return nil
	}
	return err
}
