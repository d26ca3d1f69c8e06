package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/electorhq/elector/gateway"
)

// errEndpointGone: the endpoint was deleted or disabled; its worker stops.
var errEndpointGone = errors.New("webhooks: endpoint deleted or disabled")

// errCandidateLeft: a candidate endpoint's candidate left the election.
var errCandidateLeft = errors.New("webhooks: candidate left")

// work delivers ep's events while c holds, then releases c. It returns when
// ctx ends, the claim is lost, or the endpoint is deleted, disabled or (a
// candidate's) ended.
func (s *Service) work(ctx context.Context, ep Endpoint, c *claim) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.keep(ctx, cancel) })
	log := s.log.With(slog.String("election", ep.Election), slog.String("endpoint", ep.ID))
	log.LogAttrs(ctx, slog.LevelDebug, "webhooks: endpoint claimed", slog.String("cursor", c.cursor()))

	var err error
	for ctx.Err() == nil {
		err = s.follow(ctx, ep, c)
		if errors.Is(err, errEndpointGone) || errors.Is(err, errCandidateLeft) || errors.Is(err, errClaimLost) {
			break
		}
		if err != nil && ctx.Err() == nil {
			log.LogAttrs(ctx, slog.LevelWarn, "webhooks: worker error; resuming from the cursor", slog.Any("err", err))
		}
		sleep(ctx, time.Second, nil)
	}
	cancel()
	wg.Wait()

	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	switch {
	case errors.Is(err, errCandidateLeft):
		s.remove(rctx, ep)
		log.LogAttrs(rctx, slog.LevelDebug, "webhooks: candidate left; endpoint removed")
	case errors.Is(err, errClaimLost):
		log.LogAttrs(rctx, slog.LevelInfo, "webhooks: claim lost to another replica")
	case s.crash:
	default:
		// Shutdown, deletion or disabling: persist the cursor and give the
		// claim up, so another replica can continue at once.
		if err := c.write(rctx, true); err != nil && !errors.Is(err, errClaimLost) {
			log.LogAttrs(rctx, slog.LevelWarn, "webhooks: releasing the claim failed; it expires on its own", slog.Any("err", err))
		}
	}
}

// follow watches ep's election from the cursor and handles each event.
// It returns nil when the watch ends (to be resumed), or an error.
func (s *Service) follow(ctx context.Context, ep Endpoint, c *claim) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the watch if we return early
	ch, err := s.gw.Watch(ctx, ep.Election, c.cursor())
	if errors.Is(err, gateway.ErrCursorExpired) {
		return s.gap(ctx, ep, c)
	}
	if err != nil {
		return err
	}
	for ev := range ch {
		if err := s.handle(ctx, ep, c, ev); err != nil {
			return err
		}
	}
	return nil
}

// handle delivers one event if ep wants it and moves the cursor past it.
func (s *Service) handle(ctx context.Context, ep Endpoint, c *claim, ev gateway.Event) error {
	if ep.ends(ev) {
		c.setCursor(ev.ID)
		return errCandidateLeft
	}
	if !ep.wants(ev) {
		c.setCursor(ev.ID) // persisted by the next write
		return nil
	}
	if err := s.deliver(ctx, ep, c, ev); err != nil {
		return err
	}
	c.setCursor(ev.ID)
	return c.write(ctx, false)
}

// current re-reads ep, so that a rotated secret, a deletion or a disabling
// takes effect at the next attempt. Errors: errEndpointGone, the KV's.
func (s *Service) current(ctx context.Context, ep Endpoint) (Endpoint, error) {
	cur, _, err := getJSON[Endpoint](ctx, s.kv, endpointKey(ep.Election, ep.ID))
	if errors.Is(err, gateway.ErrKeyNotFound) || (err == nil && cur.Disabled) {
		return cur, errEndpointGone
	}
	return cur, err
}

// openDelivery returns the delivery record of ev, creating it if needed.
func (s *Service) openDelivery(ctx context.Context, ep Endpoint, ev gateway.Event, payload []byte) (string, Delivery, error) {
	id := deliveryID(ev.ID)
	key := deliveryKey(ep.ID, id)
	d, _, err := getJSON[Delivery](ctx, s.kv, key)
	if err == nil {
		return key, d, nil
	}
	if !errors.Is(err, gateway.ErrKeyNotFound) {
		return key, d, err
	}
	now := s.now().UTC()
	d = Delivery{
		ID: id, Endpoint: ep.ID, Election: ep.Election, EventID: ev.ID, EventType: ev.Type, Term: ev.Term,
		Status: StatusPending, Payload: payload, Attempts: []Attempt{}, CreatedAt: now, UpdatedAt: now,
	}
	if _, err := createJSON(ctx, s.kv, key, d); err != nil && !errors.Is(err, gateway.ErrRevisionMismatch) {
		return key, d, err
	}
	s.pruneSoon(ctx, ep.ID)
	return key, d, nil
}

// deliver sends ev to ep until it succeeds, fails for good, or the worker
// must stop; every attempt is recorded. A candidate's own leader.begin has
// a deadline (see beginTimeout).
func (s *Service) deliver(ctx context.Context, ep Endpoint, c *claim, ev gateway.Event) error {
	payload, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	key, d, err := s.openDelivery(ctx, ep, ev, payload)
	if err != nil || d.Status != StatusPending {
		return err
	}
	if len(d.Payload) > 0 {
		// Every attempt sends the bytes the delivery recorded first, on
		// whichever replica makes it: the backends derive the same bytes for
		// an event id, and the record keeps it so across versions too.
		payload = d.Payload
	}
	begin := ep.Kind == KindCandidate && ev.Type == gateway.EventLeaderBegin
	// The deadline counts from the event, so that a replica taking over a
	// delivery does not quietly extend it; but a receiver that was never
	// tried (the replica that should have sent it died, or the backend was
	// out) gets one whole window from now: a gateway's trouble must not put
	// a healthy leader in error.
	deadline := ev.Time.Add(s.beginTimeout(ep))
	if len(d.Attempts) == 0 {
		deadline = later(deadline, s.now().Add(s.beginTimeout(ep)))
	}
	log := s.log.With(slog.String("election", ep.Election), slog.String("endpoint", ep.ID),
		slog.String("event", ev.ID), slog.String("type", string(ev.Type)), slog.Uint64("term", ev.Term))

	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !c.holds(0) {
			return errClaimLost // nothing, not even failBegin, without the claim
		}
		cur, err := s.current(ctx, ep)
		if err != nil {
			return err
		}
		timeout := s.cfg.RequestTimeout
		if begin {
			left := deadline.Sub(s.now())
			if left <= 0 {
				return s.failBegin(ctx, ep, key, ev, fmt.Sprintf("leader.begin was not acknowledged with a 2xx within %s", s.beginTimeout(ep)))
			}
			timeout = min(timeout, left)
		}
		// The attempt starts only if the claim outlasts it, so that no
		// other replica can take the endpoint and send while it runs.
		if err := c.holdFor(ctx, timeout); err != nil {
			return err
		}
		a, o := s.send(ctx, cur, ev.ID, payload, timeout)
		if ctx.Err() != nil {
			return ctx.Err() // a shutdown cut the attempt: not the receiver's fault
		}
		s.cfg.Metrics.Attempt(attemptOutcome(a, o), a.Latency)
		var wait time.Duration
		settled := false // by this attempt, rather than meanwhile by a redelivery
		d, err = modify(ctx, s.kv, key, func(d *Delivery) error {
			d.record(a, s.now())
			d.NextAttemptAt = time.Time{}
			settled = false
			if d.Status != StatusPending {
				return nil // settled meanwhile (a manual redelivery succeeded)
			}
			auto := 0
			for _, x := range d.Attempts {
				if !x.Manual {
					auto++
				}
			}
			var more bool
			wait, more = nextWait(s.cfg.RetrySchedule, auto, o.retryAfter, s.cfg.MaxRetryAfter, s.cfg.Jitter)
			switch {
			case o.ok:
				d.Status = StatusSucceeded
			case o.gone:
				d.Status, d.Error = StatusFailed, a.Error
			case !more:
				d.Status, d.Error = StatusFailed, fmt.Sprintf("gave up after %d attempts", auto)
			default:
				if begin {
					wait = min(wait, deadline.Sub(s.now()))
				}
				d.NextAttemptAt = s.now().Add(wait).UTC()
			}
			settled = d.Status != StatusPending
			return nil
		})
		if err != nil {
			return err
		}
		if settled {
			s.cfg.Metrics.Delivered(d.Status)
		}
		if !o.ok {
			log.LogAttrs(ctx, slog.LevelInfo, "webhooks: attempt failed", slog.Int("attempt", len(d.Attempts)),
				slog.Int("status", a.StatusCode), slog.String("error", a.Error), slog.Duration("retry_in", wait))
		}
		if o.gone {
			s.disable(ctx, ep, "the endpoint answered 410 Gone")
			return errEndpointGone
		}
		switch d.Status {
		case StatusSucceeded:
			return nil
		case StatusFailed:
			if begin {
				return s.failBegin(ctx, ep, key, ev, "leader.begin was not acknowledged: "+d.Error)
			}
			log.LogAttrs(ctx, slog.LevelWarn, "webhooks: delivery failed", slog.String("error", d.Error))
			return nil
		}
		var stale func() bool
		if ep.Kind == KindCandidate && !begin {
			stale = func() bool { return s.superseded(ctx, ep, ev) }
		}
		if sleep(ctx, wait, stale) {
			return s.failPending(ctx, key, "superseded: the candidate leads a later term")
		}
	}
}

func (s *Service) beginTimeout(ep Endpoint) time.Duration {
	if ep.BeginTimeout > 0 {
		return ep.BeginTimeout
	}
	return s.cfg.BeginTimeout
}

// failBegin runs the reconciliation of an unacknowledged begin: the
// candidate, if it still leads that term, is put in error (so leader.error
// and leader.end go out and the next candidate leads), then the delivery
// is marked failed. If the backend cannot be reached the delivery stays
// pending and the worker tries again from the cursor.
func (s *Service) failBegin(ctx context.Context, ep Endpoint, key string, ev gateway.Event, reason string) error {
	acted, err := s.gw.FailBegin(ctx, ep.Election, ep.Candidate, ep.TokenHash, ev.Term, reason)
	if err != nil && !errors.Is(err, gateway.ErrTokenMismatch) {
		return err
	}
	msg := reason
	if acted {
		msg += "; the leader was put in error"
	} else {
		msg += "; the candidate no longer led that term"
	}
	return s.failPending(ctx, key, msg)
}

// failPending marks the delivery at key failed with reason, unless it
// settled meanwhile (a manual redelivery succeeded), and counts it.
func (s *Service) failPending(ctx context.Context, key, reason string) error {
	changed := false
	_, err := modify(ctx, s.kv, key, func(d *Delivery) error {
		if d.Status != StatusPending {
			return errUnchanged
		}
		d.Status, d.Error, d.NextAttemptAt, d.UpdatedAt = StatusFailed, reason, time.Time{}, s.now().UTC()
		changed = true
		return nil
	})
	if err == nil && changed {
		s.cfg.Metrics.Delivered(StatusFailed)
	}
	return err
}

// superseded reports whether a candidate endpoint's event is stale: the
// candidate leads a later term than the event's. Its delivery then stops,
// so that the new leader.begin is not held back behind it.
func (s *Service) superseded(ctx context.Context, ep Endpoint, ev gateway.Event) bool {
	e, err := s.gw.Election(ctx, ep.Election)
	return err == nil && e.Leader != nil && e.Leader.ID == ep.Candidate && e.Leader.Term > ev.Term
}

// disable marks ep disabled with reason.
func (s *Service) disable(ctx context.Context, ep Endpoint, reason string) {
	_, err := modify(ctx, s.kv, endpointKey(ep.Election, ep.ID), func(e *Endpoint) error {
		e.Disabled, e.DisabledReason = true, reason
		return nil
	})
	if err != nil && !errors.Is(err, gateway.ErrKeyNotFound) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: disabling the endpoint failed", slog.String("endpoint", ep.ID), slog.Any("err", err))
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: endpoint disabled", slog.String("election", ep.Election),
		slog.String("endpoint", ep.ID), slog.String("reason", reason))
}

// gap records that the events after the cursor are no longer held by the
// backend, and moves the cursor to the election's present.
func (s *Service) gap(ctx context.Context, ep Endpoint, c *claim) error {
	from := c.cursor()
	e, err := s.gw.Election(ctx, ep.Election)
	to := e.Cursor
	if errors.Is(err, gateway.ErrElectionNotFound) {
		_, to, err = s.gw.Elections(ctx)
	}
	if err != nil {
		return err
	}
	now := s.now().UTC()
	id := "g" + strconv.FormatInt(now.UnixNano(), 10)
	d := Delivery{
		ID: id, Endpoint: ep.ID, Election: ep.Election, Status: StatusGap, Attempts: []Attempt{}, CreatedAt: now, UpdatedAt: now,
		Error: fmt.Sprintf("the events after %q up to %q were no longer held by the backend when delivery resumed; they were not delivered", from, to),
	}
	if _, err := createJSON(ctx, s.kv, deliveryKey(ep.ID, id), d); err != nil {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: events lost to compaction", slog.String("election", ep.Election),
		slog.String("endpoint", ep.ID), slog.String("from", from), slog.String("to", to))
	c.setCursor(to)
	return c.write(ctx, false)
}

// sleep waits d or until ctx ends. If stale is not nil it is checked every
// few seconds, and sleep returns true as soon as it reports true.
func sleep(ctx context.Context, d time.Duration, stale func() bool) bool {
	const check = 5 * time.Second
	for d > 0 {
		step := d
		if stale != nil {
			step = min(d, check)
		}
		t := time.NewTimer(step)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		d -= step
		if stale != nil && d > 0 && stale() {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
