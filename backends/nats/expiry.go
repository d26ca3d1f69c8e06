package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Expiry of candidacies.
//
// The liveness stream writes no delete markers (see "Liveness" in the
// package doc), so nothing tells a replica that a candidacy's last
// message expired: Run times every candidacy of the records it holds, by
// the expiry of its last liveness message (its timestamp plus its TTL, as
// the followed stream or a publish's acknowledgement tells), and when
// that passes asks the server and decides:
//   - the subject's last message is still there, and has expired on the
//     server's clock (read from the timestamp of a message it publishes on
//     the clock subject; the server's own removal runs up to 250 ms late):
//     Run deletes it by its sequence, and expires the candidacy once the
//     delete succeeded;
//   - the subject is empty in a liveness stream whose epoch was the same
//     before the read and after it (epoch.go): the message left by its
//     TTL, or by another replica's delete, and the candidacy is expired;
//   - a newer message: the candidacy heartbeated, and is timed again by it.
//
// Why no candidacy is expired while a heartbeat answered for it may still
// be relied on, whichever replica decides:
//   - Every answer promises at most its message's expiry, which is no
//     earlier on the server's clock (the message's TTL, lifeTTL, counts
//     from when the server stored it; the promise from before the
//     publish). The decision compares the server's clock with that expiry,
//     as the server's own removal does; the replica's clock only says when
//     to ask.
//   - A message leaves the liveness stream only by a later message on its
//     subject (MaxMsgsPerSubject 1), by its TTL, by a purge of a candidacy
//     that already left its record (Resign), or by a delete of this
//     backend: the stream has no delete markers, which the server writes
//     after it let go of its store's lock and which remove every message
//     on the subject, a heartbeat stored in between included.
//   - The delete names the message's sequence, and a heartbeat is a
//     publish conditional on the same sequence (the last one it knows on
//     the subject). Both are checked and carried out in the stream's one
//     order of writes (its isolation lock standalone, the stream leader's
//     proposals in a cluster): a heartbeat stored first replaced the
//     message and the delete fails; a delete stored first leaves the
//     subject empty, and every heartbeat conditional on that sequence is
//     refused from then on. So each acknowledged heartbeat either made the
//     delete fail or came before a message that had not expired when it
//     was replaced.
//   - An empty subject shows the same: every message the subject had left
//     it by its TTL or by such a delete, under an unchanged epoch (a
//     liveness stream lost and made again is granted before anything is
//     decided on it), and every heartbeat it could have renewed is
//     refused from then on.
//   - The expiry itself is Record.Expire under compare-and-set, like every
//     write: replicas racing to it write it once.

// expirySlack is how long past a candidacy's expiry Run waits before it
// asks the server: the server's own clock and removal lag a little.
const expirySlack = 5 * time.Millisecond

// expiryRetry is when a check that could not be made (NATS did not answer,
// or the delete was refused while no newer message is known) is made again.
const expiryRetry = 250 * time.Millisecond

// watchedLeader is a candidacy whose liveness Run times, found in the
// beats map's key space (liveness.watched) and queued by expiry
// (liveness.queue).
type watchedLeader struct {
	election, nonce string
	key             beatKey // of its liveness subject
}

// queueLocked queues w to be checked at at (zero: not at all). Callers
// hold l.mu.
func (l *liveness) queueLocked(w *watchedLeader, at time.Time) {
	head, _, ok := l.queue.Next()
	first := ok && head == w
	l.queue.Set(w, at)
	if head, _, ok := l.queue.Next(); first || (ok && head == w) {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// rewatchLocked follows a change of what is known of the liveness subject
// of key k: a watched candidacy is queued at its message's new expiry, and
// taken out of the queue while no live message of it is known (until one
// is, or the sweep finds it). Callers hold l.mu.
func (l *liveness) rewatchLocked(k beatKey) {
	w := l.watched[k]
	if w == nil {
		return
	}
	bi, ok := l.beats[k]
	if !ok || bi.dead {
		l.queueLocked(w, time.Time{})
		return
	}
	l.queueLocked(w, time.Unix(0, bi.expires))
}

// rewatch follows a change of an election's latest record in the view,
// from prev (nil: none) to cur: each of cur's candidacies is watched, and
// those of prev that cur no longer has are not.
func (l *liveness) rewatch(prev, cur *gateway.Record) {
	var nb [24]byte
	in := func(rec *gateway.Record) map[beatKey]string {
		if rec == nil {
			return nil
		}
		m := make(map[beatKey]string, len(rec.Line)+len(rec.Cooling))
		for _, line := range [...][]gateway.Entry{rec.Line, rec.Cooling} {
			for i := range line {
				n := appendNonce(nb[:0], line[i].TokenHash)
				m[l.aliveKey(rec.Name, n)] = string(n)
			}
		}
		return m
	}
	was, now := in(prev), in(cur)
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range was {
		if _, ok := now[k]; !ok {
			if w := l.watched[k]; w != nil {
				l.queueLocked(w, time.Time{})
				delete(l.watched, k)
			}
		}
	}
	for k, n := range now {
		if l.watched[k] == nil {
			l.watched[k] = &watchedLeader{election: cur.Name, nonce: n, key: k}
			l.rewatchLocked(k)
		}
	}
}

// inRecord reports whether the candidacy of nonce n is in rec, in line or
// cooling down.
func inRecord(rec *gateway.Record, n string) bool {
	var nb [24]byte
	for _, line := range [...][]gateway.Entry{rec.Line, rec.Cooling} {
		for i := range line {
			if string(appendNonce(nb[:0], line[i].TokenHash)) == n {
				return true
			}
		}
	}
	return false
}

// unwatch stops watching w.
func (l *liveness) unwatch(w *watchedLeader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watched[w.key] == w {
		l.queueLocked(w, time.Time{})
		delete(l.watched, w.key)
	}
}

// hold takes w out of the queue while it is being checked.
func (l *liveness) hold(w *watchedLeader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queueLocked(w, time.Time{})
}

// requeue checks w again at at, unless something was learned of it
// meanwhile that queued it already, or it is no longer watched.
func (l *liveness) requeue(w *watchedLeader, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, queued := l.queue.At(w); !queued && l.watched[w.key] == w {
		l.queueLocked(w, at)
	}
}

// dueLeaders takes the watched candidacies whose expiry is at or before t
// out of the queue, and says how long until the next one is due.
func (l *liveness) dueLeaders(t time.Time) ([]*watchedLeader, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var due []*watchedLeader
	for w, _, ok := l.queue.PopDue(t); ok; w, _, ok = l.queue.PopDue(t) {
		due = append(due, w)
	}
	_, next, ok := l.queue.Next()
	if !ok {
		return due, time.Hour
	}
	return due, next.Sub(t)
}

// expireDue checks each watched candidacy when its expiry has passed by
// expirySlack, until ctx ends.
func (r *reconciler) expireDue(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := r.b.live.dueLeaders(time.Now().Add(-expirySlack))
		if len(due) > 0 {
			r.checkDue(ctx, due)
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-r.b.live.wake:
		case <-timer.C:
		}
	}
}

// checkDue expires the candidacies of due whose liveness ended (see
// "Expiry of candidacies" above), and queues the others again.
func (r *reconciler) checkDue(ctx context.Context, due []*watchedLeader) {
	retry := func(ws ...*watchedLeader) {
		for _, w := range ws {
			r.b.live.requeue(w, time.Now().Add(expiryRetry))
		}
	}
	// The epoch read before any subject, for the empty ones.
	before, err := r.b.epochs.current(ctx)
	if err != nil || before == "" {
		retry(due...) // no epoch: the sweep grants
		return
	}
	type expired struct {
		w   *watchedLeader
		seq uint64
		at  time.Time
	}
	var gone []expired
	var empty, dead []*watchedLeader
	for _, w := range due {
		s, ok := r.view.latest(w.election)
		if !ok || !inRecord(s.rec, w.nonce) {
			r.b.live.unwatch(w) // no longer a candidacy
			continue
		}
		seq, exp, alive, err := r.b.lastBeat(ctx, r.b.subj.alive(w.election, w.nonce)) // queues w at exp, if alive
		switch {
		case err != nil:
			retry(w)
		case alive && time.Until(exp) <= 0:
			r.b.live.hold(w) // queued again only by what follows
			gone = append(gone, expired{w, seq, exp})
		case alive:
			// lastBeat queued it at its expiry.
		case seq > 0:
			// A delete marker: another version's layout, which decides
			// nothing (Run logs it as it comes).
			r.b.live.requeue(w, time.Now().Add(time.Minute))
		default:
			empty = append(empty, w)
		}
	}
	if len(gone) > 0 {
		now, err := r.b.serverNow(ctx)
		for _, g := range gone {
			subject := r.b.subj.alive(g.w.election, g.w.nonce)
			switch {
			case err != nil:
				retry(g.w)
			case now.Before(g.at):
				// This replica's clock runs ahead of the server's.
				r.b.live.requeue(g.w, time.Now().Add(g.at.Sub(now)))
			case r.b.deleteBeat(ctx, g.seq) == nil:
				r.b.live.buried(subject, g.seq)
				dead = append(dead, g.w)
			default:
				// Replaced by a heartbeat, or removed by the server (or
				// another replica) meanwhile: look again.
				seq, _, alive, err := r.b.lastBeat(ctx, subject)
				switch {
				case err != nil || (!alive && seq > 0):
					retry(g.w)
				case alive:
					r.b.live.requeue(g.w, time.Now().Add(expiryRetry)) // in case it is not queued by that
				default:
					empty = append(empty, g.w)
				}
			}
		}
	}
	if len(empty) > 0 {
		if after, err := r.b.epochs.current(ctx); err != nil || after != before {
			retry(empty...)
		} else {
			dead = append(dead, empty...)
		}
	}
	for _, w := range dead {
		r.b.live.unwatch(w)
		s, err := r.b.expireCandidacy(ctx, w.election, w.nonce)
		if err != nil {
			if ctx.Err() == nil {
				r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: expire", slog.String("election", w.election), slog.Any("err", err))
			}
			continue // the sweep finds the empty subject
		}
		r.view.put(s)
	}
}

// serverNow reads the clock of the liveness stream's leader: the timestamp
// it gives a message published now on the clock subject (which keeps only
// the last one). Both requests are sent again when unanswered (publish,
// resent): a clock message stored twice is two readings, and the one read
// is no earlier than the request, which is all checkDue needs of it.
func (b *Backend) serverNow(ctx context.Context) (time.Time, error) {
	if err := b.connected(); err != nil {
		return time.Time{}, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	seq, err := b.publish(ctx, nats.NewMsg(b.subj.clock()), b.subj.aliveStream())
	if err != nil {
		return time.Time{}, translate(err)
	}
	var m *jetstream.RawStreamMsg
	err = b.resent(ctx, func(ctx context.Context) (err error) {
		m, err = b.alive.GetMsg(ctx, seq)
		return err
	})
	if err != nil {
		return time.Time{}, translate(err)
	}
	return m.Time, nil
}

// deleteBeat deletes the liveness message at seq; it fails with
// jetstream.ErrMsgNotFound if the message is gone (replaced by a
// heartbeat, or expired by the server). A deletion that goes unanswered
// is sent again (resent): should the first have been applied, the second
// finds the message gone, and checkDue then finds the subject empty, as
// it would had the answer come.
func (b *Backend) deleteBeat(ctx context.Context, seq uint64) error {
	if err := b.connected(); err != nil {
		return err
	}
	err := b.resent(ctx, func(ctx context.Context) error { return b.deleteMsg(ctx, b.subj.aliveStream(), seq) })
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jsSequenceNotFound || apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound) {
		return fmt.Errorf("nats: liveness message %d: %w", seq, jetstream.ErrMsgNotFound)
	}
	return translate(err)
}

// jsSequenceNotFound is JetStream's answer to the deletion of a message
// that is not there ("sequence not found"), where a get answers 10037.
const jsSequenceNotFound jetstream.ErrorCode = 10043

// deleteMsg deletes the message at seq of stream, without erasing it, as
// jetstream's Stream.DeleteMsg does, but returns JetStream's refusal as
// the *jetstream.APIError it is: DeleteMsg keeps only its text, so that
// neither "no leader" (resent's leaderless) nor "not found" could be told
// from other failures.
func (b *Backend) deleteMsg(ctx context.Context, stream string, seq uint64) error {
	m := nats.NewMsg(jetstream.DefaultAPIPrefix + "STREAM.MSG.DELETE." + stream)
	m.Data = fmt.Appendf(nil, `{"seq":%d,"no_erase":true}`, seq)
	resp, err := b.call(ctx, m)
	if err != nil {
		return err
	}
	var r struct {
		Success bool                `json:"success"`
		Error   *jetstream.APIError `json:"error"`
	}
	switch err := json.Unmarshal(resp.Data, &r); {
	case err != nil:
		return fmt.Errorf("nats: deletion of message %d: %w", seq, err)
	case r.Error != nil:
		return r.Error
	case !r.Success:
		return fmt.Errorf("nats: deletion of message %d: %w", seq, jetstream.ErrMsgDeleteUnsuccessful)
	}
	return nil
}

// expireCandidacy removes the candidacy with nonce n from election, if it
// is still there, as expired; another replica may have done it already.
func (b *Backend) expireCandidacy(ctx context.Context, election, n string) (stored, error) {
	return b.apply(ctx, "expire", election, nil, writeOnEvents, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		for _, e := range slices.Concat(r.Line, r.Cooling) {
			if nonce(e.TokenHash) == n {
				return r.Expire(now, e.ID), nil
			}
		}
		return r.Advance(now), nil
	})
}
