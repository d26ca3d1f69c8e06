package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Handover delays and error cooldowns end when the NATS server says so,
// not when a replica's clock says so (see "Timers" in the package doc).
// Each running timer has a marker: a message on the timers stream, on a
// subject of its own, whose Nats-TTL is the timer's length rounded up to
// whole seconds. The timer ends when the server's delete marker for it is
// seen.

// errNoTimer is what a timer's end finds when the record no longer runs
// that timer (it ended already, the candidate left, the election moved
// on): nothing to do.
var errNoTimer = errors.New("nats: no such timer")

// handoverToken names the marker of a running handover delay: the term
// of the holdership that expired and the delay's end as recorded, so a
// late marker of an earlier delay never ends a later one, and the delays
// of several slots have markers of their own.
func handoverToken(d gateway.Delay) string {
	return "_h" + strconv.FormatUint(d.Term, 10) + "-" + strconv.FormatInt(d.Until.UnixNano(), 10)
}

// holdToken names the marker of a hold of a holder's promise
// (gateway.Record.FailLeader, or the holders lowered): the ended term and
// the hold's recorded end.
func holdToken(h gateway.Hold) string {
	return "_p" + strconv.FormatUint(h.Term, 10) + "-" + strconv.FormatInt(h.Until.UnixNano(), 10)
}

// cooldownToken names the marker of a cooling candidate's cooldown: its
// candidacy's nonce and the cooldown's end as recorded, so a cooldown
// restarted by a new error report has a new marker and the old one's end
// is ignored.
func cooldownToken(e *gateway.Entry) string {
	return "_c" + nonce(e.TokenHash) + "-" + strconv.FormatInt(e.CooldownUntil.UnixNano(), 10)
}

// timer is a running handover delay, hold or cooldown of a record: its
// marker's token and how long the delay is in full. A hold's marker is
// published after the record that starts it (afterRecord): see
// startTimers.
type timer struct {
	token       string
	full        time.Duration
	until       time.Time
	afterRecord bool
}

// timers lists rec's running timers: one per handover delay and per hold
// (one per slot held back), one per cooldown.
func timers(rec *gateway.Record) []timer {
	var out []timer
	for _, d := range rec.Delays {
		out = append(out, timer{token: handoverToken(d), full: rec.Settings.HandoverDelay, until: d.Until})
	}
	for _, h := range rec.Held {
		out = append(out, timer{token: holdToken(h), full: h.TTL, until: h.Until, afterRecord: true})
	}
	for i := range rec.Cooling {
		e := &rec.Cooling[i]
		out = append(out, timer{token: cooldownToken(e), full: rec.Settings.ErrorCooldown, until: e.CooldownUntil})
	}
	return out
}

// startTimers publishes a marker for every timer that rec runs and before
// did not, with Nats-TTL the time from now to its recorded end, rounded
// up to whole seconds (at least one). apply calls it before it writes rec,
// so a stored record never runs a timer whose marker was not published:
// a crash in between leaves at most a marker that no record names, whose
// end finds errNoTimer. Racing writers of the same transition publish on
// the same subject; the last publish replaces the others and its TTL
// counts, which only makes the wait longer.
//
// A hold of a failed leader's promise is the exception (afterRecord):
// apply calls startTimers again with afterRecord once the record is
// stored, and the marker gets the failed leader's whole TTL. A heartbeat
// of the failed leader may be answered "leader" until the record that
// fails it is stored (its answer reads a view at a sequence before it),
// so the hold must count a TTL from then; a marker published before the
// record could end a TTL after a moment that a stalled writer put long
// before the store. A crash between the record and its marker leaves a
// hold with no marker, which the sweep gives one of the whole TTL
// (sweepTimers): late, never early.
func (b *Backend) startTimers(ctx context.Context, rec *gateway.Record, before []timer, now time.Time, afterRecord bool) error {
	for _, t := range timers(rec) {
		if t.afterRecord != afterRecord {
			continue
		}
		started := true
		for _, o := range before {
			if o.token == t.token {
				started = false
				break
			}
		}
		if !started {
			continue
		}
		ttl := t.until.Sub(now)
		if afterRecord {
			ttl = t.full
		}
		if _, err := b.beat(ctx, b.subj.timer(rec.Name, t.token), ttl, nil); err != nil {
			return fmt.Errorf("nats: timer %s of %q: %w", t.token, rec.Name, translate(err))
		}
	}
	return nil
}

// endTimer ends the handover delay, hold or cooldown of election whose
// marker is token, once the server's delete marker for it was seen, under
// the same compare-and-set as every write. Errors: errNoTimer when the record
// no longer runs that timer, gateway.ErrElectionNotFound,
// gateway.ErrUnavailable.
//
// Why this cannot make two leaders (or more holders than the setting):
// EndHandover, EndHold and EndCooldown promote only through
// Record.promote, into a free slot, in one link of the record chain. Why not too early: the marker was published before
// the record that started the timer was written (a hold's: after, with a
// whole TTL; see startTimers), with a TTL no shorter than the delay, and
// the server writes the delete marker only when the marker's TTL has
// passed on the server's clock.
func (b *Backend) endTimer(ctx context.Context, election, token string) (stored, error) {
	return b.apply(ctx, "end timer", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		for _, d := range r.Delays {
			if handoverToken(d) == token {
				return r.EndHandover(now, d.Term), nil
			}
		}
		for _, h := range r.Held {
			if holdToken(h) == token {
				return r.EndHold(now, h.Term), nil
			}
		}
		for i := range r.Cooling {
			if cooldownToken(&r.Cooling[i]) == token {
				return r.EndCooldown(now, r.Cooling[i].ID), nil
			}
		}
		return nil, errNoTimer
	})
}

// timerEnded is the reconciler's answer to a timer's delete marker.
func (r *reconciler) timerEnded(ctx context.Context, election, token string) {
	s, err := r.b.endTimer(ctx, election, token)
	switch {
	case err == nil:
		r.view.put(s)
	case errors.Is(err, errNoTimer), errors.Is(err, gateway.ErrElectionNotFound), ctx.Err() != nil:
	default:
		r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: end timer", slog.String("election", election), slog.String("timer", token), slog.Any("err", err))
	}
}

// sweepTimers checks the markers of s's running timers that this replica
// does not know to be alive, reading each from the stream leader: a
// delete marker (the end was missed, say while no replica ran) ends the
// timer; a subject with no message at all (the liveness stream was lost
// with a restart of the NATS servers, or a record was written by a
// version without markers) gets a new marker of the full delay, or of
// what the record says is left if that is longer, so the timer runs again
// whole rather than ending early. Its end is then at most one full delay
// (plus a sweep interval) later than it would have been.
func (r *reconciler) sweepTimers(ctx context.Context, s stored, now time.Time, grace time.Duration) {
	if s.deleted {
		return
	}
	for _, t := range timers(s.rec) {
		subject := r.b.subj.timer(s.rec.Name, t.token)
		if exp, ok := r.b.live.expiry(subject); ok && now.Before(exp.Add(grace)) {
			continue
		}
		seq, _, alive, err := r.b.lastBeat(ctx, subject)
		switch {
		case err != nil || alive:
		case seq > 0: // the delete marker
			r.timerEnded(ctx, s.rec.Name, t.token)
		default:
			none := uint64(0)
			left := max(t.full, t.until.Sub(r.b.now()))
			if _, err := r.b.beat(ctx, subject, left, &none); err != nil && !isConflict(err) && ctx.Err() == nil {
				r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: restart timer", slog.String("election", s.rec.Name), slog.String("timer", t.token), slog.Any("err", err))
			}
		}
	}
}

// ensureTimers makes the timers stream again if it is gone (a restart of
// the NATS servers loses it, like the liveness stream): its timers then
// run again whole (sweepTimers).
func (b *Backend) ensureTimers(ctx context.Context) error {
	if err := b.connected(); err != nil {
		return err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	_, err := b.timers.Info(ctx)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return translate(err)
	}
	b.log.LogAttrs(ctx, slog.LevelWarn, "nats: timers stream gone; creating it again", slog.String("stream", b.subj.timerStream()))
	_, err = b.js.CreateOrUpdateStream(ctx, b.timerStreamConfig())
	return translate(err)
}

// timerMarker handles a message of the timers stream: a marker notes its
// expiry (so the sweep leaves it alone), the server's delete marker ends
// the timer.
func (r *reconciler) timerMarker(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	election, token, ok := r.b.subj.timerParts(m.Subject())
	if !ok {
		return
	}
	if m.Headers().Get(jetstream.MarkerReasonHeader) == "" {
		r.b.live.remember(m.Subject(), md.Sequence.Stream, md.Timestamp.Add(msgTTL(m.Headers().Get(jetstream.MsgTTLHeader))))
		return
	}
	r.b.live.buried(m.Subject(), md.Sequence.Stream)
	r.timerEnded(ctx, election, token)
}
