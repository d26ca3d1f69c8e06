package nats

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Run implements gateway.Runner: the reconciler. It follows the three
// streams with tails (tail.go) and
//   - expires a candidacy once its liveness message has expired on the
//     server's clock, deciding it by a write ordered with the candidacy's
//     heartbeats (expiry.go); every SweepInterval it also reads the
//     liveness of candidacies it does not know to be alive, and expires
//     those whose subject is empty;
//   - ends a handover delay or an error cooldown when the server's delete
//     marker for its timer's marker arrives (timers.go; and, every
//     SweepInterval, checks the markers of timers it has not seen alive);
//   - applies Record.Advance at each election's NextDeadline, if a record
//     has one (records this backend reads and writes are EngineTimed, so
//     neither cooldowns nor handover delays give one).
//
// Every such write is a compare-and-set like any other: when several
// replicas run Run, they race, exactly one write wins and the others find
// nothing left to do when they reload. Run returns nil when ctx ends or the
// backend is closed.
func (b *Backend) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.ctx, cancel)()

	r := newReconciler(b)
	b.addRun(r)
	defer b.removeRun(r)
	defer close(r.done)
	defer r.endFeeds()
	var wg sync.WaitGroup
	wg.Go(func() { b.follow(ctx, b.cfg.Stream, b.recordSubject("*"), false, r.resume, r.record) })
	wg.Go(func() { b.follow(ctx, b.aliveStream(), b.aliveSubject("*", "*"), true, nil, r.liveness) })
	wg.Go(func() { b.follow(ctx, b.timerStream(), b.timerSubject("*", "*"), true, nil, r.timerMarker) })
	wg.Go(func() { r.fill(ctx) })
	wg.Go(func() { r.expireDue(ctx) })
	r.loop(ctx)
	wg.Wait()
	return nil
}

// follow feeds every message of subject (the last per subject first, then
// new ones; or, when from says a sequence, every one from there) to
// handle until ctx ends. The tail makes its consumer again after a fault;
// follow starts a new tail only when one could not be opened or the
// connection closed.
func (b *Backend) follow(ctx context.Context, stream, subject string, headersOnly bool, from func() uint64, handle func(context.Context, jetstream.Msg, *jetstream.MsgMetadata)) {
	for ctx.Err() == nil {
		err := b.followOnce(ctx, stream, subject, headersOnly, from, handle)
		if ctx.Err() != nil {
			return
		}
		b.log.LogAttrs(ctx, slog.LevelWarn, "nats: reconciler follow restarts", slog.String("stream", stream), slog.Any("err", err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (b *Backend) followOnce(ctx context.Context, stream, subject string, headersOnly bool, from func() uint64, handle func(context.Context, jetstream.Msg, *jetstream.MsgMetadata)) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:   headersOnly,
	}
	if from != nil {
		if seq := from(); seq > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
		}
	}
	t, err := b.openTail(ctx, stream, cfg)
	if err != nil {
		return err
	}
	defer t.Close()
	for {
		m, md, err := t.Next()
		if err != nil {
			if errors.Is(err, errTailClosed) && ctx.Err() != nil {
				return nil
			}
			return err
		}
		handle(ctx, m, md)
	}
}

// liveness notes when a candidacy's liveness message expires; expireDue
// (expiry.go) acts on it then. A delete marker here is another version's
// layout (Ping refuses it): it is no proof that the candidacy's last
// heartbeat lapsed, so it decides nothing.
func (r *reconciler) liveness(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	if _, _, ok := r.b.aliveParts(m.Subject()); !ok || m.Subject() == r.b.epochs.subject() || m.Subject() == r.b.clockSubject() {
		return
	}
	if reason := m.Headers().Get(jetstream.MarkerReasonHeader); reason != "" {
		r.b.log.LogAttrs(ctx, slog.LevelError, "nats: a delete marker on the liveness stream, which this version makes without them; nothing is expired on it",
			slog.String("subject", m.Subject()), slog.String("reason", reason))
		return
	}
	r.b.live.remember(m.Subject(), md.Sequence.Stream, md.Timestamp.Add(msgTTL(m.Headers().Get(jetstream.MsgTTLHeader))))
}

// loop fires at each election's next deadline and sweeps periodically.
func (r *reconciler) loop(ctx context.Context) {
	sweep := time.NewTimer(time.Second) // first sweep once the caches have filled
	defer sweep.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		if at, ok := r.nextDeadline(); ok {
			wait = max(time.Until(at), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
			if !r.advanceDue(ctx) {
				// NATS refused: do not spin on a deadline that stays due.
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		case <-sweep.C:
			r.sweep(ctx)
			sweep.Reset(r.b.cfg.SweepInterval)
		}
	}
}

// advanceDue applies Advance to every election with a deadline due; it
// reports false if a write failed for another reason than losing a race.
// An election whose write failed keeps its deadline, so the loop tries
// again.
func (r *reconciler) advanceDue(ctx context.Context) bool {
	okAll := true
	for _, d := range r.takeDue(r.b.now()) {
		s, err := r.b.apply(ctx, "advance", d.name, nil, writeOnEvents, advance)
		if err != nil {
			if ctx.Err() == nil {
				r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: advance", slog.String("election", d.name), slog.Any("err", err))
			}
			r.mu.Lock()
			r.plan(d.name, d.at)
			r.mu.Unlock()
			okAll = false
			continue
		}
		r.put(s)
	}
	return okAll
}

// sweep expires candidacies whose liveness message is gone although this
// replica did not see it expire (no replica ran then, the view learned of
// the candidacy after its message, or a campaign's record write outlived
// its first liveness message), and makes a lost timers stream again. Only
// candidacies not known to be alive are read from the stream leader.
func (r *reconciler) sweep(ctx context.Context) {
	const grace = 2 * time.Second // the server's expiry timer may run late
	now := time.Now()
	r.b.live.prune(now.Add(-grace))
	if err := r.b.ensureTimers(ctx); err != nil {
		if ctx.Err() == nil {
			r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: timers stream", slog.Any("err", err))
		}
	}
	// A liveness stream lost (a restart of the NATS servers) is made again
	// and granted here, within a sweep interval, even if no request asks.
	if id, err := r.b.epochs.current(ctx); err != nil {
		return
	} else if id == "" {
		if err := r.b.epochs.grant(ctx); err != nil {
			if ctx.Err() == nil {
				r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: grant", slog.Any("err", err))
			}
			return
		}
	}
	// Elections are visited a chunk at a time into one reused slice, and
	// nothing is allocated for a candidacy known alive: a sweep visits
	// every candidacy of every election, and an idle replica with 100,000
	// elections would otherwise make megabytes of garbage per sweep, which
	// its resident memory grows by until the next collection.
	var nb [24]byte
	batch := make([]stored, 0, sweepChunk)
	for from := 0; ; from += sweepChunk {
		batch = r.recordsFrom(batch[:0], from, sweepChunk)
		if len(batch) == 0 {
			return
		}
		for _, s := range batch {
			r.sweepTimers(ctx, s, now, grace)
			for _, line := range [...][]gateway.Entry{s.rec.Line, s.rec.Cooling} {
				for i := range line {
					n := appendNonce(nb[:0], line[i].TokenHash)
					if exp, ok := r.b.live.expiryOf(r.b.live.aliveKey(s.rec.Name, n)); ok && now.Before(exp.Add(grace)) {
						continue
					}
					subject := r.b.aliveSubject(s.rec.Name, string(n))
					_, alive, err := r.b.checkAlive(ctx, subject)
					if err != nil || alive {
						continue
					}
					if s, err := r.b.expireCandidacy(ctx, s.rec.Name, string(n)); err == nil {
						r.put(s)
					}
				}
			}
		}
	}
}

// sweepChunk is how many elections a sweep takes from the view at a time.
const sweepChunk = 1024

// recordsFrom appends to dst the latest records of at most n elections of the
// view, from the from-th in the order the view first saw them, and
// returns it. Records are never changed in place (a transition works on a
// copy), so they may be read after the lock is released.
func (r *reconciler) recordsFrom(dst []stored, from, n int) []stored {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order[min(from, len(r.order)):min(from+n, len(r.order))] {
		if s := r.latestLocked(name); s.rec != nil {
			dst = append(dst, s)
		}
	}
	return dst
}
