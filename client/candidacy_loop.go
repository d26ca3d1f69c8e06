package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The loop of Run. It owns the candidacy's state; ReportError and Resign
// are requests it serves between heartbeats, so that no heartbeat answer
// from before a request is acted on after it.

// interval is the heartbeat period: TTL/3.
func (c *Candidacy) interval() time.Duration { return c.cfg.TTL / 3 }

// retryBase is the first wait after a failed request.
func (c *Candidacy) retryBase() time.Duration {
	return min(c.interval(), max(c.cfg.TTL/10, 100*time.Millisecond))
}

// stepDownAt is when a leader without a successful heartbeat must stop
// acting as leader: TTL minus the margin after the last successful
// heartbeat was sent. The gateway counts the TTL from when it received
// that heartbeat, which is later, so the leader stops before the gateway
// can promote anyone else.
func (c *Candidacy) stepDownAt() time.Time {
	return c.sentOK.Add(c.cfg.TTL - StepDownMargin(c.cfg.TTL))
}

// loop campaigns and heartbeats until ctx ends, Resign is served, or an
// answer says that campaigning cannot succeed.
func (c *Candidacy) loop(ctx context.Context, pokes <-chan struct{}) error {
	next := c.now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wake := next
		if c.leading && c.stepDownAt().Before(wake) {
			wake = c.stepDownAt()
		}
		timer.Reset(max(wake.Sub(c.now()), 0))
		select {
		case <-ctx.Done():
			return nil
		case r := <-c.reqs:
			r.done <- c.serve(r)
			if c.resigned {
				return nil
			}
			next = c.now()
			continue
		case <-pokes:
			// The event stream says something happened to this
			// candidate: heartbeat now to hear what.
			next = c.now()
		case <-timer.C:
		}
		c.checkStepDown()
		if !c.now().Before(next) {
			d, err := c.step(ctx)
			if err != nil {
				return err
			}
			next = c.now().Add(d)
			c.checkStepDown()
		}
	}
}

// checkStepDown applies the step-down rule.
func (c *Candidacy) checkStepDown() {
	if c.leading && !c.now().Before(c.stepDownAt()) {
		c.log.LogAttrs(context.Background(), slog.LevelWarn, "no successful heartbeat for TTL minus the margin; stepping down",
			slog.Uint64("term", c.term), slog.Duration("ttl", c.cfg.TTL), slog.Duration("margin", StepDownMargin(c.cfg.TTL)))
		c.lose(ReasonHeartbeatTimeout)
	}
}

// step campaigns or heartbeats once and returns how long to wait before
// the next step, or an error that ends Run.
func (c *Candidacy) step(ctx context.Context) (time.Duration, error) {
	switch {
	case c.token == "" && c.now().Before(c.pauseUntil):
		return c.pauseUntil.Sub(c.now()), nil
	case c.token == "":
		return c.campaign(ctx)
	default:
		return c.heartbeat(ctx), nil
	}
}

// callCtx bounds one request: a heartbeat period, and never past the
// step-down deadline of a leader, so the rule is applied on time.
func (c *Candidacy) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.interval()
	if c.leading {
		d = min(d, c.stepDownAt().Sub(c.now()))
	}
	return context.WithTimeout(ctx, d)
}

// try calls f with the gateway in use and, while it fails in transport or
// with a 5xx, with the next ones in turn; the gateway that answered is
// used from then on.
//
// The gateway in use gets all of ctx's time: a healthy one that is slow
// for a moment (its backend stalls) still answers. When ctx's deadline
// passes on one, the next request starts with the gateway after it, and
// the event stream moves there: a gateway that takes requests and never
// answers (a stopped process, a network that drops packets) costs one
// request, not every request for as long as it hangs. A leader keeps its
// leadership through that one: its heartbeats' deadline is its step-down
// deadline at the latest, and the retry after a failed heartbeat comes
// well before it.
//
// A request that timed out may still take effect where it was sent. A
// heartbeat or resignation that does is harmless; a campaign that does
// leaves a candidacy whose token this candidate never got: the next
// campaign is answered candidate-exists, and the candidate waits for that
// candidacy to expire (one TTL), as when a campaign's answer is lost.
func (c *Candidacy) try(ctx context.Context, f func(*Client) error) error {
	start := int(c.gw.Load())
	n := len(c.clients)
	var err error
	for i := range n {
		idx := (start + i) % n
		err = f(c.clients[idx])
		switch {
		case err == nil || !failsOver(err):
			if idx != start {
				c.useGateway(ctx, idx)
			}
			return err
		case ctx.Err() != nil:
			if n > 1 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				c.useGateway(ctx, (idx+1)%n)
			}
			return err
		}
	}
	return err
}

// useGateway makes gateway idx the one in use and tells the event stream.
func (c *Candidacy) useGateway(ctx context.Context, idx int) {
	c.gw.Store(int32(idx))
	c.log.LogAttrs(ctx, slog.LevelInfo, "switched gateway", slog.String("gateway", c.clients[idx].BaseURL()))
	select {
	case c.gwChanged <- struct{}{}:
	default:
	}
}

// failsOver reports whether another gateway may answer where this one
// failed: a transport error or a 5xx answer.
func failsOver(err error) bool {
	var p *Problem
	return !errors.As(err, &p) || p.Status >= 500
}

// permanent reports whether a campaign that failed with err will keep
// failing: the request or the credentials are wrong.
func permanent(err error) bool {
	return errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrForbidden)
}

// retry counts a failed request and returns the back-off before the next.
// It warns on the first failure of a series only.
//
// A leader waits at most half the time left until its step-down deadline
// (and at least leaderRetryFloor): the back-off alone could put its next
// heartbeat past the deadline while the gateways are about to answer
// again (a cluster electing a new stream leader takes seconds), and the
// leadership would end for want of a try. Near the deadline the tries
// come closer, never more often than every leaderRetryFloor.
func (c *Candidacy) retry(ctx context.Context, what string, err error) time.Duration {
	c.failures++
	limit := MaxRetryDelay
	if c.token != "" {
		limit = c.interval()
	}
	if c.leading {
		limit = min(limit, max(c.stepDownAt().Sub(c.now())/2, leaderRetryFloor))
	}
	var p *Problem
	var retryAfter time.Duration
	if errors.As(err, &p) {
		retryAfter = p.RetryAfter
	}
	d := retryDelay(c.retryBase(), limit, c.failures, retryAfter, c.jitter())
	if ctx.Err() == nil {
		level := slog.LevelDebug
		if c.failures == 1 {
			level = slog.LevelWarn
		}
		c.log.LogAttrs(ctx, level, what+" failed; retrying with back-off",
			slog.Int("failures", c.failures), slog.Duration("retry_in", d), slog.Any("err", err))
	}
	return d
}

// leaderRetryFloor is the shortest wait between a leader's tries.
const leaderRetryFloor = 100 * time.Millisecond

// answered ends a series of failures.
func (c *Candidacy) answered(ctx context.Context) {
	if c.failures > 0 {
		c.log.LogAttrs(ctx, slog.LevelInfo, "the gateway answers again", slog.Int("failures", c.failures))
		c.failures = 0
	}
}

func (c *Candidacy) campaign(ctx context.Context) (time.Duration, error) {
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	sent := c.now()
	var st Status
	var token string
	err := c.try(cctx, func(cl *Client) error {
		var err error
		st, token, err = cl.Campaign(cctx, c.cfg.Election, CampaignRequest{ID: c.cfg.ID, TTL: c.cfg.TTL, Metadata: c.cfg.Metadata, Priority: c.cfg.Priority})
		return err
	})
	switch {
	case err == nil:
		c.answered(ctx)
		c.token = token
		c.idInUse = false
		c.succeeded(sent)
		c.log.LogAttrs(ctx, slog.LevelInfo, "campaigned", slog.String("state", string(st.State)), slog.Int("position", st.Position))
		c.observe(ctx, st)
		return c.interval(), nil
	case errors.Is(err, ErrCandidateExists):
		c.answered(ctx)
		// Said once until a campaign succeeds: the next tries (every
		// TTL/3, and whenever the election's events name this id) are
		// refused the same way.
		level := slog.LevelDebug
		if !c.idInUse {
			c.idInUse, level = true, slog.LevelWarn
		}
		c.log.LogAttrs(ctx, level, fmt.Sprintf("id %q is held by a live candidacy (another process campaigning with it, or a previous run's that has not expired); campaigning again until it is free", c.cfg.ID))
		c.publish(Standing{Term: c.Standing().Term, Leader: c.Standing().Leader, Holders: c.Standing().Holders, Reason: ReasonIDInUse})
		return c.interval(), nil
	case permanent(err):
		c.log.LogAttrs(ctx, slog.LevelError, "the gateway refuses the campaign", slog.Any("err", err))
		return 0, err
	default:
		return c.retry(ctx, "campaign", err), nil
	}
}

func (c *Candidacy) heartbeat(ctx context.Context) time.Duration {
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	sent := c.now()
	var st Status
	err := c.try(cctx, func(cl *Client) error {
		var err error
		st, err = cl.Heartbeat(cctx, c.cfg.Election, c.cfg.ID, c.token)
		return err
	})
	if err == nil && c.onAnswer != nil {
		c.onAnswer()
	}
	switch {
	case err == nil:
		c.answered(ctx)
		c.succeeded(sent)
		c.observe(ctx, st)
		return c.interval()
	case errors.Is(err, ErrCandidateNotFound), errors.Is(err, ErrTokenMismatch), errors.Is(err, ErrElectionNotFound):
		c.answered(ctx)
		msg := "candidacy lost (expired or resigned elsewhere); campaigning again"
		if errors.Is(err, ErrCandidacyRevoked) {
			msg = "candidacy ended early by the gateway's backend, not for a late heartbeat; campaigning again"
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, msg, slog.Any("err", err))
		c.token = ""
		c.lose(ReasonExpired)
		c.publish(Standing{Reason: ReasonExpired})
		return 0
	case errors.Is(err, ErrTransferPending):
		// Asked to hand over: the gateway no longer extends this
		// candidacy's life, so stop acting at once, whatever comes next.
		c.answered(ctx)
		if c.leading {
			c.log.LogAttrs(ctx, slog.LevelInfo, "asked to hand over leadership; stopping", slog.Uint64("term", c.term))
			c.lose(ReasonTransferred)
		}
		if c.cfg.ExplicitHandover {
			return c.interval() // the caller stops its work, then calls Handover
		}
		if err := c.handover(ctx); err != nil && !errors.Is(err, ErrNoTransfer) && !errors.Is(err, ErrNotLeader) {
			return c.retry(ctx, "handover", err)
		}
		return 0
	default:
		return c.retry(ctx, "heartbeat", err)
	}
}

// handover ends a leadership the gateway asked this candidate to hand
// over. It first waits for the leadership callbacks to return (so the
// caller's work has stopped before the target starts), but never past the
// step-down deadline: after it the gateway may promote the target by
// itself, and a handover would add nothing. ErrNoTransfer and ErrNotLeader
// mean the transfer was cancelled or completed meanwhile: the next
// heartbeat says where the candidate stands.
func (c *Candidacy) handover(ctx context.Context) error {
	c.lose(ReasonTransferred)
	wctx, cancel := context.WithDeadline(ctx, c.stepDownAt())
	defer cancel()
	if !c.callbacks.drained(wctx) {
		c.log.LogAttrs(ctx, slog.LevelWarn, "the leadership callbacks did not return by the step-down deadline; the transfer completes by the TTL instead")
		return nil
	}
	cctx, cancel2 := c.callCtx(ctx)
	defer cancel2()
	sent := c.now()
	var st Status
	err := c.try(cctx, func(cl *Client) error {
		var err error
		st, err = cl.Handover(cctx, c.cfg.Election, c.cfg.ID, c.token)
		return err
	})
	switch {
	case err == nil:
		c.log.LogAttrs(ctx, slog.LevelInfo, "handed over", slog.String("leader", leaderID(st.Leader)), slog.Uint64("term", st.Term))
		c.succeeded(sent)
		c.observe(ctx, st)
		return nil
	default:
		return err
	}
}

// succeeded records a successful heartbeat or campaign sent at sent.
func (c *Candidacy) succeeded(sent time.Time) {
	c.sentOK = sent
	c.lastOK.Store(sent.UnixNano())
}

// observe acts on a status from the gateway. Once Run's context has
// ended it does nothing: that context is the parent of the leadership's,
// which has ended with it, and Run is about to end the leadership as
// resigned; taking the ended context for a step-down, or starting a
// leadership on it, would tell the callbacks of a leadership lost and
// begun again that never was.
func (c *Candidacy) observe(ctx context.Context, st Status) {
	if c.runCtx.Err() != nil {
		return
	}
	leader := ""
	if st.Leader != nil {
		leader = st.Leader.ID
	}
	paused := c.now().Before(c.pauseUntil)
	switch {
	case st.State == StateLeader && paused:
		// The gateway's error cooldown ended before our error timeout:
		// hand over rather than lead.
		c.log.LogAttrs(ctx, slog.LevelInfo, "promoted during the error timeout; resigning until it ends")
		c.resign(ctx)
		return
	case st.State == StateLeader && !c.now().Before(c.stepDownAt()):
		// The answer came too late to act on: the step-down deadline it
		// would set has passed. The next heartbeat decides.
		c.lose(ReasonHeartbeatTimeout)
	case st.State == StateLeader:
		switch {
		case c.leading && c.term != st.Term:
			// Another leadership than the one we act on: end it before
			// starting the one the gateway confirms.
			c.lose(ReasonLost)
		case c.leading && c.lctx.Context.Err() != nil:
			// The step-down rule ended this leadership's context (a
			// pause outlasted the deadline): end it, then start afresh
			// on the gateway's confirmation.
			c.lose(ReasonHeartbeatTimeout)
		}
		if c.leading {
			// Safe to extend: the gateway has just confirmed this term,
			// and counts our TTL from after sent.
			c.lctx.extend(c.stepDownAt())
		} else {
			c.startLeading(ctx, st)
		}
	case st.State == StateError && !paused && !c.pauseUntil.IsZero():
		// Our error timeout is over but the gateway's cooldown is not:
		// campaign again now, at the back of the line.
		c.log.LogAttrs(ctx, slog.LevelInfo, "error timeout over; campaigning again")
		c.resign(ctx)
		c.pauseUntil = time.Time{}
		return
	case st.State == StateError:
		c.lose(ReasonError)
	default:
		c.lose(ReasonLost)
	}
	reason := c.Standing().Reason
	if c.leading {
		reason = ReasonElected
	}
	c.publish(Standing{Leading: c.leading, State: st.State, Term: st.Term, Leader: leader, Holders: holderCount(st), Since: c.since, Reason: reason})
}

// holderCount is how many hold as st says.
func holderCount(st Status) int {
	switch {
	case st.Holders != nil:
		return len(st.Holders)
	case st.Leader != nil:
		return 1
	}
	return 0
}

// startLeading begins a leadership of st's term. The gateway has just said
// this candidate leads (with several holders: holds), in answer to a
// request sent less than TTL minus the margin ago; the leadership context
// ends at that deadline unless a later heartbeat extends it, so it never
// outlives what the gateway granted.
func (c *Candidacy) startLeading(ctx context.Context, st Status) {
	term := st.Term
	c.leading, c.term, c.since = true, term, c.now()
	c.lctx = newLeaderCtx(c.runCtx, c.now, c.stepDownAt())
	c.log.LogAttrs(ctx, slog.LevelInfo, "leading", slog.Uint64("term", term))
	if f := c.cfg.OnStartedLeading; f != nil {
		lctx := c.lctx
		c.callbacks.push(func() { f(lctx, term) })
	}
	c.publish(Standing{Leading: true, State: StateLeader, Term: term, Leader: leaderID(st.Leader), Holders: holderCount(st), Since: c.since, Reason: ReasonElected})
}

// lose ends the leadership, if any: its context is cancelled before
// anything else happens, then OnStoppedLeading is queued and the standing
// published.
func (c *Candidacy) lose(reason string) {
	if !c.leading {
		return
	}
	c.leading = false
	c.lctx.cancel(fmt.Errorf("%w: %s", ErrLeadershipLost, reason))
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "no longer leading", slog.Uint64("term", c.term), slog.String("reason", reason))
	if f := c.cfg.OnStoppedLeading; f != nil {
		term := c.term
		c.callbacks.push(func() { f(term, reason) })
	}
	st := c.Standing()
	st.Leading, st.Since, st.Reason = false, time.Time{}, reason
	if st.Leader == c.cfg.ID {
		st.Leader = ""
	}
	c.publish(st)
}

// publish makes st the current standing and offers it on States,
// replacing one the reader has not taken yet.
func (c *Candidacy) publish(st Standing) {
	c.mu.Lock()
	same := c.current == st
	c.current = st
	c.mu.Unlock()
	if same {
		return
	}
	for {
		select {
		case c.states <- st:
			return
		default:
		}
		select {
		case <-c.states:
		default:
		}
	}
}

// resign ends the current candidacy; a failure is logged, and the
// candidacy then expires by its TTL.
func (c *Candidacy) resign(ctx context.Context) error {
	if c.token == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, max(c.interval(), time.Second))
	defer cancel()
	err := c.try(cctx, func(cl *Client) error {
		return cl.Resign(cctx, c.cfg.Election, c.cfg.ID, c.token)
	})
	if errors.Is(err, ErrCandidateNotFound) {
		err = nil
	}
	if err != nil {
		c.log.LogAttrs(ctx, slog.LevelWarn, "resign failed; the candidacy will expire by its TTL", slog.Any("err", err))
	}
	c.token = ""
	c.publish(Standing{Term: c.Standing().Term, Reason: ReasonResigned})
	return err
}

// serve answers a ReportError, Resign or Handover request.
func (c *Candidacy) serve(r candidateRequest) error {
	if r.handover {
		if c.token == "" {
			return ErrNoTransfer
		}
		return c.handover(r.ctx)
	}
	if r.resign {
		c.lose(ReasonResigned)
		c.resigned = true
		return c.resign(r.ctx)
	}
	c.lose(ReasonError)
	c.pauseUntil = c.now().Add(c.cfg.ErrorTimeout)
	if c.token == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(r.ctx, max(c.interval(), time.Second))
	defer cancel()
	var st Status
	err := c.try(cctx, func(cl *Client) error {
		var err error
		st, err = cl.ReportError(cctx, c.cfg.Election, c.cfg.ID, c.token, r.reason)
		return err
	})
	switch {
	case errors.Is(err, ErrCandidateNotFound):
		c.token = ""
		return nil
	case err != nil:
		// Without the report the gateway still sees a leader: give the
		// leadership up by resigning.
		_ = c.resign(r.ctx)
		return err
	}
	c.publish(Standing{State: st.State, Term: st.Term, Leader: leaderID(st.Leader), Holders: holderCount(st), Reason: ReasonError})
	return nil
}

// leaderID is l's id, or "" for no leader.
func leaderID(l *Leader) string {
	if l == nil {
		return ""
	}
	return l.ID
}
