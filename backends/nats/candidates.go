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
// compare-and-set, starting from the view's record (see apply); a
// candidate in the record therefore always had a liveness message, and
// the sweep can expire it when that is gone. It answers from the record
// it wrote, and scans no other election. A live
// candidate with the same id is gateway.ErrCandidateExists; a dead one
// whose expiry is not processed yet is expired first.
func (b *Backend) Campaign(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	subject := b.subj.alive(election, nonce(c.TokenHash))
	exp, err := b.beat(ctx, subject, lifeTTL(c.TTL), nil)
	if err != nil {
		return gateway.Status{}, fmt.Errorf("nats: campaign %q: %w", election, translate(err))
	}
	s, err := b.apply(ctx, "campaign", election, &defaults, writeOnSuccess, func(ctx context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		var ev []gateway.Event
		if old := r.Find(c.ID); old != nil {
			_, alive, err := b.checkAlive(ctx, b.subj.alive(election, nonce(old.TokenHash)))
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
	return b.status(ctx, "campaign", s, c.ID, exp)
}

// Heartbeat implements gateway.Backend. It republishes the candidacy's
// liveness message, conditional on the subject's last message being the
// live one it knows of: if the message expired and left meanwhile (or a
// replica deleted it, deciding the candidacy's expiry: expiry.go), the
// heartbeat fails and the candidate is gone.
//
// With Run running, a heartbeat is one publish (quick): the candidate and
// the live message's sequence come from the view, and the answer from the
// view caught up with a read index fetched while the publish is in flight.
// On a conflict, or when the view does not know the candidacy, it takes
// the slow path: read the record and the liveness message from the stream
// leaders, publish, answer from the record read. See "Heartbeats" in the
// package doc for why neither can tell a deposed leader that it leads.
func (b *Backend) Heartbeat(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	if v := b.running(); v != nil && v.isFilled() {
		st, done, err := b.quickHeartbeat(ctx, v, election, id, tokenHash)
		if done {
			return st, err
		}
	}
	for i := 0; ; i++ {
		// Backs off from the third attempt: on a clustered stream a
		// conditional publish fails while another write to the same
		// subject is still in flight, so retrying at once again only
		// collides again.
		if err := gateway.Conflicts.Try(ctx, i); err != nil {
			return gateway.Status{}, fmt.Errorf("nats: heartbeat %q in %q: %w", id, election, err)
		}
		s, e, subject, seq, err := b.owned(ctx, "heartbeat", election, id, tokenHash)
		if err != nil {
			return gateway.Status{}, err
		}
		if err := s.rec.HandoverDue(id); err != nil {
			// Asked to hand over: the heartbeat is refused and extends
			// nothing (see gateway.Record.Transfer).
			return gateway.Status{}, fmt.Errorf("nats: heartbeat %q: %w", election, err)
		}
		exp, err := b.beat(ctx, subject, lifeTTL(e.TTL), &seq)
		if isConflict(err) {
			continue // a concurrent heartbeat, or the message left: look again
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
		return b.status(ctx, "heartbeat", s, id, exp)
	}
}

// quickHeartbeat is Heartbeat's one-publish path. done is false when the
// caller is to take the slow path instead: the view does not know the
// candidacy or its live message, the publish conflicted, or the view did
// not catch up in time.
func (b *Backend) quickHeartbeat(ctx context.Context, v *view, election, id, tokenHash string) (st gateway.Status, done bool, err error) {
	cur, ok := v.latest(election)
	if !ok {
		return gateway.Status{}, false, nil
	}
	e := cur.rec.Find(id)
	if e == nil || !gateway.TokenMatches(e.TokenHash, tokenHash) {
		return gateway.Status{}, false, nil // perhaps the view is behind: ask the stream leader
	}
	if cur.rec.HandoverDue(id) != nil {
		return gateway.Status{}, false, nil // refused on the stream leader's record, without a publish
	}
	subject := b.subj.alive(election, nonce(e.TokenHash))
	seq, ok := b.live.liveSeq(subject)
	if !ok {
		return gateway.Status{}, false, nil
	}
	// The read index is fetched while the beat is in flight; the group
	// commit's is read at once.
	var rev uint64
	var ierr error
	var ticket gateway.ReadTicket
	if b.commit != nil {
		rev = b.commit.Durable()
	} else {
		ticket = b.readIndex.Start(ctx)
	}
	var exp time.Time
	if at, ok := b.renewed(subject, e.TTL); ok {
		exp = at // no write: the live message already outlives this heartbeat's TTL
	} else {
		exp, err = b.beat(ctx, subject, lifeTTL(e.TTL), &seq)
	}
	if b.commit == nil {
		rev, ierr = ticket.Wait(ctx)
	}
	switch {
	case isConflict(err):
		return gateway.Status{}, false, nil // the message left, or a beat through another replica
	case err != nil:
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q: %w", election, translate(err))
	case ierr != nil:
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q: %w", election, translate(ierr))
	}
	if caught, err := b.caughtUpTo(ctx, v, rev); err != nil {
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q: %w", election, err)
	} else if caught == nil {
		return gateway.Status{}, false, nil
	}
	// The view now holds the election as of a sequence fetched after the
	// heartbeat arrived: every write acknowledged before it is reflected.
	s, _ := v.latest(election)
	now := s.rec.Find(id)
	switch {
	case now == nil:
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q in %q: %w", id, election, gateway.ErrCandidateNotFound)
	case !gateway.TokenMatches(now.TokenHash, tokenHash):
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q in %q: %w", id, election, gateway.ErrTokenMismatch)
	}
	if err := s.rec.HandoverDue(id); err != nil {
		// A transfer recorded while the beat was in flight: the beat
		// extended the candidate's life, so the transfer completes that
		// much later, but the leader is told now and its step-down
		// deadline does not move (the answer is no success).
		return gateway.Status{}, true, fmt.Errorf("nats: heartbeat %q: %w", election, err)
	}
	if at, ok := s.rec.NextDeadline(); ok && !at.After(b.now()) {
		if s, err = b.apply(ctx, "heartbeat", election, nil, writeOnEvents, advance); err != nil {
			return gateway.Status{}, true, err
		}
	}
	st, err = b.status(ctx, "heartbeat", s, id, exp)
	return st, true, err
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
	return b.status(ctx, "report error", s, id, time.Time{})
}

// advance is the transition of passing time: cooldowns and handover delays
// that ended, and the promotions they allow.
func advance(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
	return r.Advance(now), nil
}

// status derives a candidate's status from a stored record, without
// building the whole election: own is when the candidate's liveness
// message expires if the caller just wrote it (zero: look it up), and the
// leader's comes from its liveness message.
func (b *Backend) status(ctx context.Context, op string, s stored, id string, own time.Time) (gateway.Status, error) {
	st, ok := s.rec.Status(id)
	if !ok {
		return gateway.Status{}, fmt.Errorf("nats: %s %q in %q: %w", op, id, s.rec.Name, gateway.ErrCandidateNotFound)
	}
	exp := own
	if exp.IsZero() {
		var err error
		if exp, err = b.expiresAt(ctx, s.rec.Name, s.rec.Find(id).TokenHash); err != nil {
			return gateway.Status{}, fmt.Errorf("nats: %s %q: %w", op, s.rec.Name, err)
		}
	}
	st.Candidate.ExpiresAt = exp
	if err := b.holdersExpiry(ctx, s.rec, st.Leader, st.Holders, id, exp); err != nil {
		return gateway.Status{}, fmt.Errorf("nats: %s %q: %w", op, s.rec.Name, err)
	}
	return st, nil
}

// owned loads election and checks that candidate id is in it, holds
// tokenHash and is still alive. A candidate whose liveness has ended is
// expired on the spot. Errors: gateway.ErrCandidateNotFound,
// gateway.ErrTokenMismatch, gateway.ErrUnavailable.
func (b *Backend) owned(ctx context.Context, op, election, id, tokenHash string) (s stored, e *gateway.Entry, subject string, seq uint64, err error) {
	s, found, err := b.load(ctx, election)
	if err != nil {
		return stored{}, nil, "", 0, fmt.Errorf("nats: %s %q: %w", op, election, err)
	}
	if found {
		e = s.rec.Find(id)
	}
	if e == nil {
		return stored{}, nil, "", 0, fmt.Errorf("nats: %s %q in %q: %w", op, id, election, gateway.ErrCandidateNotFound)
	}
	if !gateway.TokenMatches(e.TokenHash, tokenHash) {
		return stored{}, nil, "", 0, fmt.Errorf("nats: %s %q in %q: %w", op, id, election, gateway.ErrTokenMismatch)
	}
	subject = b.subj.alive(election, nonce(e.TokenHash))
	seq, alive, err := b.checkAlive(ctx, subject)
	if err != nil {
		return stored{}, nil, "", 0, fmt.Errorf("nats: %s %q: %w", op, election, err)
	}
	if !alive {
		if _, err := b.expireCandidacy(ctx, election, nonce(e.TokenHash)); err != nil {
			return stored{}, nil, "", 0, err
		}
		return stored{}, nil, "", 0, fmt.Errorf("nats: %s %q in %q: expired: %w", op, id, election, gateway.ErrCandidateNotFound)
	}
	return s, e, subject, seq, nil
}
