package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// ErrEndFailed is returned by Sidecar.Run when the end command failed on
// every attempt: this host may still be acting as leader.
var ErrEndFailed = errors.New("sidecar: the end command failed on every attempt")

// Sidecar is roboll/elector's reconciliation loop over a source: it runs
// the begin command (and starts the supervised child) when the source says
// this candidate leads, and stops the child and runs the end command when
// it no longer does.
type Sidecar struct {
	src              source
	hooks            *hooks
	child            *child // nil without Config.Command
	election, id     string
	endRetries       int
	endRetryInterval time.Duration
	log              *slog.Logger // with the election and the candidate
	baseLog          *slog.Logger // without: the status server's
	status           *status
	health           *healthCheck // nil without a health check

	// Owned by Run.
	healthy bool // the health check passes (always, without one)
	leading bool
	term    uint64
	leader  string
	idInUse bool // told that a live candidacy holds the id
}

// Run reconciles until ctx ends or the source's input ends, then, if it
// leads, stops the child, runs the end command and resigns. It returns
// nil after a clean shutdown, ErrEndFailed when the end command kept
// failing, or the source's error.
func (s *Sidecar) Run(ctx context.Context) error {
	s.status.setRunning(true)
	defer s.status.setRunning(false)
	srcCtx, stopSrc := context.WithCancel(context.WithoutCancel(ctx))
	obs := make(chan observation, 1)
	srcDone := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srcDone <- s.src.Run(srcCtx, obs)
	}()
	s.healthy = s.health == nil
	verdicts := make(chan healthVerdict, 1)
	if s.health != nil {
		// The check runs beside the source: a slow or hung check never
		// holds up a heartbeat, and only ever ends a leadership.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.health.run(srcCtx, verdicts)
		}()
	}
	defer func() {
		stopSrc()
		wg.Wait()
	}()

	var srcErr error
loop:
	for {
		var childExited <-chan struct{}
		if s.child != nil && s.leading {
			childExited = s.child.exited()
		}
		select {
		case <-ctx.Done():
			break loop
		case srcErr = <-srcDone:
			// Take what the source said last before it ended.
			select {
			case o := <-obs:
				if err := s.reconcileAck(ctx, o); err != nil {
					return err
				}
			default:
			}
			break loop
		case o := <-obs:
			if err := s.reconcileAck(ctx, o); err != nil {
				return err
			}
		case v := <-verdicts:
			if err := s.healthChanged(ctx, v); err != nil {
				return err
			}
		case <-childExited:
			s.status.failed("child")
			s.log.LogAttrs(ctx, slog.LevelError, "the supervised command exited while leading", slog.String("status", s.child.describe()))
			if err := s.fail(ctx, "the supervised command exited: "+s.child.describe()); err != nil {
				return err
			}
		}
	}
	return errors.Join(s.shutdown(ctx), srcErr)
}

// shutdown ends a leadership and resigns the candidacy, so that the next
// candidate leads at once. The source keeps heartbeating meanwhile, so the
// leadership stays valid while the end command runs.
func (s *Sidecar) shutdown(ctx context.Context) error {
	var endErr error
	if s.leading {
		endErr = s.end(ctx, client.ReasonResigned)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.src.Resign(rctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "resign on shutdown failed; the candidacy expires by its TTL", slog.Any("err", err))
	}
	return endErr
}

// reconcileAck reconciles o and tells a source that wants to know.
func (s *Sidecar) reconcileAck(ctx context.Context, o observation) error {
	err := s.reconcile(ctx, o)
	if a, ok := s.src.(acker); ok {
		a.processed()
	}
	return err
}

// reconcile acts on one observation.
func (s *Sidecar) reconcile(ctx context.Context, o observation) error {
	if o.leader != "" {
		leader := o.leader
		if o.leading {
			// With several holders the gateway names the longest-standing
			// holder; to the commands and the status, a sidecar that holds
			// is its own leader (with one holder, they are the same).
			leader = s.id
		}
		s.leader = leader
		s.status.heard(leader)
	}
	if o.reason == client.ReasonIDInUse && !s.idInUse {
		s.log.LogAttrs(ctx, slog.LevelWarn, fmt.Sprintf("id %q is held by a live candidate; pass --id to campaign as another one (the default id is the host name), or wait: a previous run's candidacy expires within its TTL", s.id))
	}
	s.idInUse = o.reason == client.ReasonIDInUse
	switch {
	case o.errored && s.leading:
		return s.fail(ctx, "error reported by the source")
	case o.leading && s.leading && o.term != s.term:
		// A new leadership we did not see begin: the old one ended.
		if err := s.end(ctx, client.ReasonLost); err != nil {
			return err
		}
		return s.begin(ctx, o)
	case o.leading && !s.leading && !s.healthy:
		// A standing from before the source paused (or a console LEADER
		// line): an unhealthy candidate does not lead.
		s.log.LogAttrs(ctx, slog.LevelInfo, "not leading while the health check fails", slog.Uint64("term", o.term))
	case o.leading && !s.leading:
		return s.begin(ctx, o)
	case !o.leading && s.leading:
		if o.leader == "" {
			s.leader = ""
		}
		if err := s.end(ctx, o.reason); err != nil {
			return err
		}
		if o.reason == client.ReasonTransferred {
			return s.handover(ctx)
		}
	}
	return nil
}

// handover tells the gateway, once the end command has run, that the
// leadership it asked this candidate to give up may go to the transfer's
// target. Only now may the target start: the child is stopped and the end
// command has succeeded. A failed handover is logged: the target then
// leads when this candidate's TTL runs out, which its heartbeats no longer
// extend.
func (s *Sidecar) handover(ctx context.Context) error {
	h, ok := s.src.(handoverer)
	if !ok {
		return nil
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.Handover(hctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "handover failed; the transfer completes when the TTL runs out", slog.Any("err", err))
		return nil
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "handed leadership over", slog.Uint64("term", s.term))
	return nil
}

// healthChanged acts on a change of the application's health. Unhealthy,
// a leader ends its leadership as after a failed begin command (end
// command, the check's failure reported to the gateway as the reason, the
// error command), and then, leader or follower, it leaves the line: a
// candidate that cannot serve must not be next in line, where the gateway
// would promote it. Healthy again, it campaigns again at the back of the
// line.
//
// The end command runs before the report, so the next leader never
// overlaps this one, as after a failed begin command. The check only ever
// ends a leadership: it never extends one, and the candidacy's step-down
// rule holds whatever the check says.
func (s *Sidecar) healthChanged(ctx context.Context, v healthVerdict) error {
	if v.healthy == s.healthy {
		return nil
	}
	s.healthy = v.healthy
	s.status.setHealthy(v.healthy)
	p, canPause := s.src.(pauser)
	if v.healthy {
		s.log.LogAttrs(ctx, slog.LevelInfo, "health check passes: campaigning")
		if canPause {
			p.Resume()
		}
		return nil
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "health check failing: leaving the line until it passes", slog.String("reason", v.reason))
	if s.leading {
		s.status.failed("health")
		if err := s.fail(ctx, v.reason); err != nil {
			return err
		}
	}
	if canPause {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := p.Pause(pctx); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "resigning failed; the candidacy expires by its TTL", slog.Any("err", err))
		}
	}
	return nil
}

// env is the commands' environment for reason.
func (s *Sidecar) env(reason string) hookEnv {
	return hookEnv{election: s.election, candidate: s.id, term: s.term, leader: s.leader, reason: reason}
}

// begin runs the begin command and starts the child; if either fails,
// the leadership is given up through fail.
func (s *Sidecar) begin(ctx context.Context, o observation) error {
	s.leading, s.term, s.leader = true, o.term, s.id
	s.status.began(o.term)
	log := s.log.With(slog.Uint64("term", o.term))
	log.LogAttrs(ctx, slog.LevelInfo, "leading: running the begin command")
	err := s.hooks.run("begin", s.hooks.begin, s.env(o.reason))
	if err == nil && s.child != nil {
		err = s.child.start(s.env(o.reason))
		if err == nil {
			log.LogAttrs(ctx, slog.LevelInfo, "started the supervised command", slog.Int("pid", s.child.pid()))
		}
	}
	if err != nil {
		s.status.failed("begin")
		log.LogAttrs(ctx, slog.LevelError, "begin failed", slog.Any("err", err))
		return s.fail(ctx, err.Error())
	}
	return nil
}

// end stops the child and runs the end command, retrying it; it returns
// ErrEndFailed when the attempts run out.
func (s *Sidecar) end(ctx context.Context, reason string) error {
	log := s.log.With(slog.Uint64("term", s.term), slog.String("reason", reason))
	s.leading = false
	s.status.ended("end", s.leaderAfter(reason))
	if s.child != nil {
		s.child.stop()
	}
	log.LogAttrs(ctx, slog.LevelInfo, "not leading: running the end command")
	err := s.hooks.runEnd(ctx, s.env(reason), s.endRetries, s.endRetryInterval, func(attempt int, err error) {
		s.status.failed("end")
		log.LogAttrs(ctx, slog.LevelError, "end command failed", slog.Int("attempt", attempt),
			slog.String("of", strconv.Itoa(s.endRetries+1)), slog.Any("err", err))
	})
	if err != nil {
		log.LogAttrs(ctx, slog.LevelError, "the end command failed on every attempt; this host may still act as leader: exiting")
		return fmt.Errorf("%w: %w", ErrEndFailed, err)
	}
	return nil
}

// fail is the error path of the reconciliation loop: it ends what the
// begin command may have started (end command first, so that the next
// leader never overlaps with a half-started one), then reports the error
// to the source — the gateway hands leadership over and the candidate
// sits out the error timeout — and runs the error command.
func (s *Sidecar) fail(ctx context.Context, reason string) error {
	endErr := s.end(ctx, client.ReasonError)
	s.status.ended("error", "")
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.src.Fail(fctx, reason); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "reporting the error failed", slog.Any("err", err))
	}
	if endErr != nil {
		return endErr
	}
	if err := s.hooks.run("error", s.hooks.onError, s.env(client.ReasonError)); err != nil {
		s.status.failed("error")
		s.log.LogAttrs(ctx, slog.LevelWarn, "error command failed", slog.Any("err", err))
	}
	return nil
}

// leaderAfter is the leader as heard when a leadership ends for reason:
// another candidate when the gateway named one, else nobody.
func (s *Sidecar) leaderAfter(reason string) string {
	if s.leader == s.id || reason == client.ReasonResigned {
		return ""
	}
	return s.leader
}
