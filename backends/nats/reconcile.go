package nats

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/due"
)

// reconciler is what Run does with its view: it ends timers, expires
// candidacies and applies each election's deadlines, writing through the
// same compare-and-set as every write and putting what it wrote into the
// view (see Run). It holds the view's elections' next deadlines; what it
// knows of their candidacies' liveness is the Backend's (liveness).
type reconciler struct {
	b    *Backend
	view *view

	mu sync.Mutex
	// deadlines is each election's next deadline (Record.NextDeadline of
	// its latest record in the view), so that a write costs the loop
	// O(log n), not a pass over every election.
	deadlines *due.Queue[string]

	wake chan struct{} // the loop re-plans its deadlines
}

// newReconciler returns the reconciler of v, which follows v's changes
// from then on.
func newReconciler(b *Backend, v *view) *reconciler {
	r := &reconciler{b: b, view: v, deadlines: due.New[string](), wake: make(chan struct{}, 1)}
	v.changed = r.changed
	return r
}

// changed follows a change of an election's latest record in the view
// (view.changed, under the view's lock): its candidacies are watched
// (liveness.rewatch) and its deadline taken from its latest record.
func (r *reconciler) changed(prev, cur stored) {
	if cur.seq != prev.seq {
		r.b.live.rewatch(prev.rec, cur.rec)
	}
	at, ok := cur.rec.NextDeadline()
	if !ok {
		at = time.Time{} // none: out of the queue
	}
	r.mu.Lock()
	r.deadlines.Set(cur.rec.Name, at)
	r.mu.Unlock()
	r.poke()
}

func (r *reconciler) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// nextDeadline is the earliest deadline of any election.
func (r *reconciler) nextDeadline() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, at, ok := r.deadlines.Next()
	return at, ok
}

// takeDue removes and returns the deadlines at or before now.
func (r *reconciler) takeDue(now time.Time) []deadline {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []deadline
	for name, at, ok := r.deadlines.PopDue(now); ok; name, at, ok = r.deadlines.PopDue(now) {
		out = append(out, deadline{at: at, name: name})
	}
	return out
}

// deadline is one election's next deadline.
type deadline struct {
	at   time.Time
	name string
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
			r.deadlines.Set(d.name, d.at)
			r.mu.Unlock()
			okAll = false
			continue
		}
		r.view.put(s)
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
		batch = r.view.recordsFrom(batch[:0], from, sweepChunk)
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
					subject := r.b.subj.alive(s.rec.Name, string(n))
					_, alive, err := r.b.checkAlive(ctx, subject)
					if err != nil || alive {
						continue
					}
					if s, err := r.b.expireCandidacy(ctx, s.rec.Name, string(n)); err == nil {
						r.view.put(s)
					}
				}
			}
		}
	}
}

// sweepChunk is how many elections a sweep takes from the view at a time.
const sweepChunk = 1024
