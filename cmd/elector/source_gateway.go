package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/electorhq/elector/client"
)

// stepDownMargin is how long before its TTL runs out, counted from the
// last successful heartbeat, a leader stops acting as leader: the larger
// of TTL/10 and 500ms.
func stepDownMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, 500*time.Millisecond)
}

// gatewaySource campaigns and heartbeats against the gateway. Its Run loop
// owns all of its state; Fail and Resign are requests that the loop
// serves between heartbeats, so that no heartbeat answer from before a
// request is acted on after it.
type gatewaySource struct {
	c            *client.Client
	election, id string
	ttl          time.Duration
	metadata     json.RawMessage
	errorTimeout time.Duration
	log          *slog.Logger
	reqs         chan sourceRequest

	// Owned by Run.
	token      string
	leading    bool // the last observation sent said leading
	term       uint64
	lastOK     time.Time // when the last successful heartbeat (or campaign) was sent
	pauseUntil time.Time // the error timeout: no leadership until then
	resigned   bool
}

// sourceRequest is a Fail (reason set) or a Resign, and where to answer.
type sourceRequest struct {
	resign bool
	reason string
	done   chan error
}

func newGatewaySource(c *client.Client, election, id string, ttl time.Duration, metadata json.RawMessage, errorTimeout time.Duration, log *slog.Logger) *gatewaySource {
	return &gatewaySource{
		c: c, election: election, id: id, ttl: ttl, metadata: metadata, errorTimeout: errorTimeout,
		log:  log.With(slog.String("election", election), slog.String("candidate", id)),
		reqs: make(chan sourceRequest),
	}
}

// interval is the heartbeat period: TTL/3.
func (s *gatewaySource) interval() time.Duration { return s.ttl / 3 }

// retryInterval is the wait after a failed request.
func (s *gatewaySource) retryInterval() time.Duration {
	return min(s.interval(), max(s.ttl/10, 100*time.Millisecond))
}

// stepDownAt is when a leader without a successful heartbeat must stop
// acting as leader.
func (s *gatewaySource) stepDownAt() time.Time {
	return s.lastOK.Add(s.ttl - stepDownMargin(s.ttl))
}

// Run campaigns, heartbeats every TTL/3 and reports the standing until ctx
// ends. It obeys the step-down rule: a leader whose heartbeats have not
// succeeded for TTL minus the margin is told it no longer leads, before
// the gateway can promote anyone else.
func (s *gatewaySource) Run(ctx context.Context, out chan observation) error {
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wake := next
		if s.leading && s.stepDownAt().Before(wake) {
			wake = s.stepDownAt()
		}
		timer.Reset(max(time.Until(wake), 0))
		select {
		case <-ctx.Done():
			return nil
		case r := <-s.reqs:
			r.done <- s.serve(ctx, r, out)
			next = time.Now()
			continue
		case <-timer.C:
		}
		s.checkStepDown(out)
		if !time.Now().Before(next) {
			next = time.Now().Add(s.step(ctx, out))
			s.checkStepDown(out)
		}
	}
}

// checkStepDown applies the step-down rule.
func (s *gatewaySource) checkStepDown(out chan observation) {
	if s.leading && !time.Now().Before(s.stepDownAt()) {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "no successful heartbeat for TTL minus the margin; stepping down",
			slog.Uint64("term", s.term), slog.Duration("ttl", s.ttl), slog.Duration("margin", stepDownMargin(s.ttl)))
		s.leading = false
		offer(out, observation{leading: false, term: s.term, reason: "heartbeat-timeout"})
	}
}

// step campaigns or heartbeats once and returns how long to wait before
// the next step.
func (s *gatewaySource) step(ctx context.Context, out chan observation) time.Duration {
	switch {
	case s.resigned:
		return time.Hour
	case s.token == "" && time.Now().Before(s.pauseUntil):
		return time.Until(s.pauseUntil)
	case s.token == "":
		return s.campaign(ctx, out)
	default:
		return s.heartbeat(ctx, out)
	}
}

// callCtx bounds one request: a heartbeat period, and never past the
// step-down deadline of a leader, so the rule is applied on time.
func (s *gatewaySource) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(s.interval())
	if s.leading && s.stepDownAt().Before(deadline) {
		deadline = s.stepDownAt()
	}
	return context.WithDeadline(ctx, deadline)
}

func (s *gatewaySource) campaign(ctx context.Context, out chan observation) time.Duration {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	sent := time.Now()
	st, token, err := s.c.Campaign(cctx, s.election, client.CampaignRequest{ID: s.id, TTL: s.ttl, Metadata: s.metadata})
	switch {
	case err == nil:
		s.token, s.lastOK = token, sent
		s.log.LogAttrs(ctx, slog.LevelInfo, "campaigned", slog.String("state", string(st.State)), slog.Int("position", st.Position))
		s.observe(ctx, st, out)
		return s.interval()
	case errors.Is(err, client.ErrCandidateExists):
		s.log.LogAttrs(ctx, slog.LevelWarn, "a candidacy with this id is still alive (a previous run?); campaigning again when it expires", slog.Any("err", err))
		return s.interval()
	default:
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "campaign failed; retrying", slog.Any("err", err))
		}
		return s.retryInterval()
	}
}

func (s *gatewaySource) heartbeat(ctx context.Context, out chan observation) time.Duration {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	sent := time.Now()
	st, err := s.c.Heartbeat(cctx, s.election, s.id, s.token)
	switch {
	case err == nil:
		s.lastOK = sent
		s.observe(ctx, st, out)
		return s.interval()
	case errors.Is(err, client.ErrCandidateNotFound), errors.Is(err, client.ErrTokenMismatch):
		s.log.LogAttrs(ctx, slog.LevelWarn, "candidacy lost (expired or resigned elsewhere); campaigning again", slog.Any("err", err))
		s.token = ""
		s.lose(out, "expired")
		return 0
	default:
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "heartbeat failed; retrying", slog.Any("err", err))
		}
		return s.retryInterval()
	}
}

// lose tells the reconciler that this candidate no longer leads.
func (s *gatewaySource) lose(out chan observation, reason string) {
	if s.leading {
		s.leading = false
		offer(out, observation{leading: false, term: s.term, reason: reason})
	}
}

// observe acts on a status from the gateway.
func (s *gatewaySource) observe(ctx context.Context, st client.Status, out chan observation) {
	leader := ""
	if st.Leader != nil {
		leader = st.Leader.ID
	}
	paused := time.Now().Before(s.pauseUntil)
	switch {
	case st.State == client.StateLeader && paused:
		// The gateway's error cooldown ended before our error timeout:
		// hand over rather than lead without running the begin command.
		s.log.LogAttrs(ctx, slog.LevelInfo, "promoted during the error timeout; resigning until it ends")
		s.resign(ctx)
	case st.State == client.StateLeader:
		if !s.leading || s.term != st.Term {
			s.leading, s.term = true, st.Term
			offer(out, observation{leading: true, term: st.Term, leader: s.id, reason: "elected"})
		}
	case st.State == client.StateError && !paused && !s.pauseUntil.IsZero():
		// Our error timeout is over but the gateway's cooldown is not:
		// campaign again now, at the back of the line.
		s.log.LogAttrs(ctx, slog.LevelInfo, "error timeout over; campaigning again")
		s.resign(ctx)
		s.pauseUntil = time.Time{}
	default:
		reason := "lost"
		if st.State == client.StateError {
			reason = "error"
		}
		if s.leading {
			s.leading = false
			offer(out, observation{leading: false, term: s.term, leader: leader, reason: reason})
		}
	}
}

// resign ends the current candidacy; a failure is logged, and the
// candidacy then expires by its TTL.
func (s *gatewaySource) resign(ctx context.Context) {
	if s.token == "" {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, max(s.interval(), time.Second))
	defer cancel()
	if err := s.c.Resign(cctx, s.election, s.id, s.token); err != nil && !errors.Is(err, client.ErrCandidateNotFound) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "resign failed; the candidacy will expire by its TTL", slog.Any("err", err))
	}
	s.token = ""
}

// serve answers a Fail or Resign request.
func (s *gatewaySource) serve(ctx context.Context, r sourceRequest, out chan observation) error {
	s.leading = false
	if r.resign {
		s.resign(ctx)
		s.resigned = true
		return nil
	}
	s.pauseUntil = time.Now().Add(s.errorTimeout)
	if s.token == "" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, max(s.interval(), time.Second))
	defer cancel()
	_, err := s.c.ReportError(cctx, s.election, s.id, s.token, r.reason)
	if errors.Is(err, client.ErrCandidateNotFound) {
		s.token = ""
		return nil
	}
	if err != nil {
		// Without the report the gateway still sees a leader: give the
		// leadership up by resigning.
		s.resign(ctx)
	}
	return err
}

// request sends r to Run and waits for its answer.
func (s *gatewaySource) request(ctx context.Context, r sourceRequest) error {
	r.done = make(chan error, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}

// Fail reports the error to the gateway (which hands leadership over) and
// starts the error timeout.
func (s *gatewaySource) Fail(ctx context.Context, reason string) error {
	return s.request(ctx, sourceRequest{reason: reason})
}

// Resign resigns the candidacy, so the next candidate leads at once.
func (s *gatewaySource) Resign(ctx context.Context) error {
	return s.request(ctx, sourceRequest{resign: true})
}
