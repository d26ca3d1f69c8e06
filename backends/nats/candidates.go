package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Campaign implements gateway.Backend. It publishes the candidacy's first
// liveness message, then adds the candidate to the record under
// compare-and-set; a candidate in the record therefore always had a
// liveness message, and the sweep can expire it when that is gone. A live
// candidate with the same id is gateway.ErrCandidateExists; a dead one
// whose expiry is not processed yet is expired first.
func (b *Backend) Campaign(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	subject := b.aliveSubject(election, nonce(c.TokenHash))
	if _, err := b.beat(ctx, subject, c.TTL, nil); err != nil {
		return gateway.Status{}, fmt.Errorf("nats: campaign %q: %w", election, translate(err))
	}
	s, err := b.apply(ctx, "campaign", election, &defaults, writeOnSuccess, func(ctx context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		var ev []gateway.Event
		if old := r.Find(c.ID); old != nil {
			_, _, alive, err := b.lastBeat(ctx, b.aliveSubject(election, nonce(old.TokenHash)))
			if err != nil {
				return nil, err
			}
			if !alive {
				ev = r.Expire(now, c.ID)
			}
		}
		more, err := r.Campaign(now, c)
		ev = append(ev, more...)
		if err == nil {
			// Liveness lives in the liveness stream, not in the record.
			r.Find(c.ID).ExpiresAt = time.Time{}
		}
		return ev, err
	})
	if err != nil {
		if errors.Is(err, gateway.ErrCandidateExists) || errors.Is(err, gateway.ErrLimit) {
			// Our nonce is not in the record: drop its liveness message.
			b.purgeBeats(ctx, subject)
		}
		return gateway.Status{}, err
	}
	return b.status(ctx, "campaign", s, c.ID)
}

// Heartbeat implements gateway.Backend. It republishes the candidacy's
// liveness message, conditional on the subject's last message being the
// live one it read: if the server has written the expiry marker in
// between, the heartbeat fails and the candidate is gone.
func (b *Backend) Heartbeat(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	const attempts = 8
	for i := range attempts {
		if i > 0 {
			// Back off: on a clustered stream a conditional publish fails
			// while another write to the same subject is still in flight,
			// so retrying at once only collides again.
			if err := sleepJitter(ctx, i); err != nil {
				return gateway.Status{}, fmt.Errorf("nats: heartbeat %q: %w", election, err)
			}
		}
		s, e, subject, seq, err := b.owned(ctx, "heartbeat", election, id, tokenHash)
		if err != nil {
			return gateway.Status{}, err
		}
		_, err = b.beat(ctx, subject, e.TTL, &seq)
		if isConflict(err) {
			continue // a concurrent heartbeat, or the expiry marker: look again
		}
		if err != nil {
			return gateway.Status{}, fmt.Errorf("nats: heartbeat %q: %w", election, translate(err))
		}
		if at, ok := s.rec.NextDeadline(); ok && !at.After(b.now()) {
			// A cooldown or handover ended: bring the record up to date so
			// the status is current, as the reconciler would shortly.
			if s, err = b.apply(ctx, "heartbeat", election, nil, writeOnEvents, advance); err != nil {
				return gateway.Status{}, err
			}
		}
		return b.status(ctx, "heartbeat", s, id)
	}
	return gateway.Status{}, fmt.Errorf("nats: heartbeat %q in %q: %d conflicting writes: %w", id, election, attempts, gateway.ErrUnavailable)
}

// Resign implements gateway.Backend. It removes the candidate from the
// record under compare-and-set, then purges its liveness message.
func (b *Backend) Resign(ctx context.Context, election, id, tokenHash string) error {
	_, _, subject, _, err := b.owned(ctx, "resign", election, id, tokenHash)
	if err != nil {
		return err
	}
	_, err = b.apply(ctx, "resign", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Resign(now, id, tokenHash)
	})
	if err != nil {
		return err
	}
	b.purgeBeats(ctx, subject)
	return nil
}

// ReportError implements gateway.Backend. The candidate keeps its liveness
// message: it must go on heartbeating through its cooldown.
func (b *Backend) ReportError(ctx context.Context, election, id, tokenHash, reason string) (gateway.Status, error) {
	if _, _, _, _, err := b.owned(ctx, "report error", election, id, tokenHash); err != nil {
		return gateway.Status{}, err
	}
	s, err := b.apply(ctx, "report error", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.ReportError(now, id, tokenHash, reason)
	})
	if err != nil {
		return gateway.Status{}, err
	}
	return b.status(ctx, "report error", s, id)
}

// advance is the transition of passing time: cooldowns and handover delays
// that ended, and the promotions they allow.
func advance(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
	return r.Advance(now), nil
}

// status derives a candidate's status from a stored record.
func (b *Backend) status(ctx context.Context, op string, s stored, id string) (gateway.Status, error) {
	e, err := b.view(ctx, s)
	if err != nil {
		return gateway.Status{}, fmt.Errorf("nats: %s %q: %w", op, s.rec.Name, err)
	}
	st, ok := gateway.StatusOf(e, id)
	if !ok {
		return gateway.Status{}, fmt.Errorf("nats: %s %q in %q: %w", op, id, s.rec.Name, gateway.ErrCandidateNotFound)
	}
	return st, nil
}
