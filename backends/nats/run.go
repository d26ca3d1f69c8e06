package nats

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
// Each Run has a view of its own (view.go), which its tail of the records
// stream feeds and reads answer from, and a reconciler (reconcile.go),
// which does the above over that view.
//
// Every such write is a compare-and-set like any other: when several
// replicas run Run, they race, exactly one write wins and the others find
// nothing left to do when they reload. Run returns nil when ctx ends or the
// backend is closed.
func (b *Backend) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.ctx, cancel)()

	v := newView(b)
	r := newReconciler(b, v)
	b.addRun(v)
	defer b.removeRun(v)
	defer close(v.done)
	defer v.endFeeds()
	var wg sync.WaitGroup
	wg.Go(func() { b.follow(ctx, b.cfg.Stream, b.subj.record("*"), false, v.resume, &v.following, v.record) })
	wg.Go(func() { b.follow(ctx, b.subj.aliveStream(), b.subj.alive("*", "*"), true, nil, nil, r.aliveMessage) })
	wg.Go(func() { b.follow(ctx, b.subj.timerStream(), b.subj.timer("*", "*"), true, nil, nil, r.timerMarker) })
	wg.Go(func() { v.fill(ctx) })
	wg.Go(func() { r.expireDue(ctx) })
	r.loop(ctx)
	wg.Wait()
	v.bg.Wait()
	return nil
}

// follow feeds every message of subject (the last per subject first, then
// new ones; or, when from says a sequence, every one from there) to
// handle until ctx ends. The tail makes its consumer again after a fault;
// follow starts a new tail only when one could not be opened or the
// connection closed. live, if not nil, is kept true while a consumer of
// the tail is made and not given up (tail.live).
func (b *Backend) follow(ctx context.Context, stream, subject string, headersOnly bool, from func(context.Context) uint64, live *atomic.Bool, handle func(context.Context, jetstream.Msg, *jetstream.MsgMetadata)) {
	for ctx.Err() == nil {
		err := b.followOnce(ctx, stream, subject, headersOnly, from, live, handle)
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

func (b *Backend) followOnce(ctx context.Context, stream, subject string, headersOnly bool, from func(context.Context) uint64, live *atomic.Bool, handle func(context.Context, jetstream.Msg, *jetstream.MsgMetadata)) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:   headersOnly,
	}
	if from != nil {
		if seq := from(ctx); seq > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
		}
	}
	t, err := b.openTail(ctx, stream, cfg)
	if err != nil {
		return err
	}
	defer t.Close()
	if live != nil {
		t.live = live
		live.Store(true)
		defer live.Store(false)
	}
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

// aliveMessage notes when a candidacy's liveness message expires; expireDue
// (expiry.go) acts on it then. A delete marker here is another version's
// layout (Ping refuses it): it is no proof that the candidacy's last
// heartbeat lapsed, so it decides nothing.
func (r *reconciler) aliveMessage(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata) {
	if _, _, ok := r.b.subj.aliveParts(m.Subject()); !ok || m.Subject() == r.b.subj.epoch() || m.Subject() == r.b.subj.clock() {
		return
	}
	if reason := m.Headers().Get(jetstream.MarkerReasonHeader); reason != "" {
		r.b.log.LogAttrs(ctx, slog.LevelError, "nats: a delete marker on the liveness stream, which this version makes without them; nothing is expired on it",
			slog.String("subject", m.Subject()), slog.String("reason", reason))
		return
	}
	r.b.live.remember(m.Subject(), md.Sequence.Stream, md.Timestamp.Add(msgTTL(m.Headers().Get(jetstream.MsgTTLHeader))))
}

// addRun and removeRun track the views of running Run calls.
func (b *Backend) addRun(v *view) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	if b.runs == nil {
		b.runs = map[*view]struct{}{}
	}
	b.runs[v] = struct{}{}
}

func (b *Backend) removeRun(v *view) {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	delete(b.runs, v)
}

// running returns the view of a running Run (the one furthest
// ahead, if several run), or nil.
func (b *Backend) running() *view {
	b.runsMu.Lock()
	defer b.runsMu.Unlock()
	var best *view
	var bestSeen uint64
	for v := range b.runs {
		v.mu.Lock()
		seen := v.seen
		v.mu.Unlock()
		if best == nil || seen > bestSeen {
			best, bestSeen = v, seen
		}
	}
	return best
}
