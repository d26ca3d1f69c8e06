package nats

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// Prompt expiry of leaders.
//
// The server removes a liveness message at its TTL by a timer that, once it
// has fired, does not fire again for at least 250 ms (nats-server's memory
// store spaces its expiry checks so). When it fires at the expiry of a
// message that a heartbeat has since replaced, and the next expiry is
// nearer than that, the next one is handled up to 250 ms late: a leader
// that heartbeated within 250 ms of its campaign and then crashed (the
// first failover after a start, in every run of the failover benchmark),
// or one whose expiry falls just after another candidacy's replaced one,
// was expired up to 250 ms past its TTL. For a follower nothing waits on
// it; for a leader with a follower in line it is the failover time.
//
// So Run watches the liveness of every holder with a follower in line (the
// view tells who holds, the followed liveness stream when its message
// expires) and, when that expiry passes without a marker, asks the server:
// it reads the leader's last liveness message from the stream leader and,
// if that has expired on the server's clock (read from the timestamp of a
// message it publishes on the clock subject), deletes it by its sequence
// and expires the candidacy as a marker would.
//
// Why this neither expires a leader early nor revives one:
//   - The decision compares the server's clock with the expiry the server
//     gave the message (its timestamp plus its TTL), as the server's own
//     timer does; the replica's clock only says when to ask.
//   - The delete names the message's sequence. A heartbeat that replaced
//     the message removed it (one message per subject), and the delete
//     fails; a delete that succeeds leaves the subject empty, so that a
//     heartbeat conditional on that sequence is refused from then on, as
//     after a marker. A heartbeat and the expiry are still ordered by the
//     subject, whoever carries the expiry out.
//   - An empty subject is dead only under an unchanged epoch (epoch.go), and
//     a replica that did not see the delete finds the subject empty at its
//     next sweep; the expiry itself is Record.Expire under compare-and-set,
//     as on a marker.

// expirySlack is how long past a watched leader's expiry Run waits for the
// server's marker before it asks the server itself: the marker usually
// comes within a millisecond or two.
const expirySlack = 5 * time.Millisecond

// expiryRetry is when a check that could not be made (NATS did not answer,
// or the delete was refused while no newer message is known) is made again.
const expiryRetry = 250 * time.Millisecond

// watchedLeader is a leader whose liveness Run watches, found in the beats
// map's key space (Backend.watched) and queued by expiry (Backend.watchQ).
type watchedLeader struct {
	election, nonce string
	at              int64 // when its live message expires, Unix nanoseconds; 0 while not queued
	idx             int   // index in the queue; -1 while not queued
}

// watchQueue is a min-heap of watched leaders by expiry.
type watchQueue []*watchedLeader

func (q watchQueue) Len() int           { return len(q) }
func (q watchQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q watchQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *watchQueue) Push(x any) {
	w := x.(*watchedLeader)
	w.idx = len(*q)
	*q = append(*q, w)
}
func (q *watchQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.idx = -1
	return w
}

// queueLocked queues w to be checked at at (0: not at all). Callers hold
// beatsMu.
func (b *Backend) queueLocked(w *watchedLeader, at int64) {
	first := len(b.watchQ) > 0 && b.watchQ[0] == w
	switch {
	case at == 0 && w.idx >= 0:
		heap.Remove(&b.watchQ, w.idx)
	case at != 0 && w.idx >= 0:
		w.at = at
		heap.Fix(&b.watchQ, w.idx)
	case at != 0:
		w.at = at
		heap.Push(&b.watchQ, w)
	}
	w.at = at
	if first || (len(b.watchQ) > 0 && b.watchQ[0] == w) {
		select {
		case b.watchWake <- struct{}{}:
		default:
		}
	}
}

// rewatchLocked follows a change of what is known of the liveness subject
// of key k: a watched leader is queued at its message's new expiry, and no
// longer watched once its liveness ended (a marker, a purge). Callers hold
// beatsMu.
func (b *Backend) rewatchLocked(k beatKey) {
	w := b.watched[k]
	if w == nil {
		return
	}
	bi, ok := b.beats[k]
	if !ok || bi.dead {
		b.queueLocked(w, 0)
		delete(b.watched, k)
		return
	}
	b.queueLocked(w, bi.expires)
}

// watchLeader watches the liveness of rec's holders (its leader, or each of
// its N holders) while a follower waits in line behind them. Those that no
// longer hold (or no longer have a follower) are dropped when their expiry
// comes, or when their liveness ends.
func (b *Backend) watchLeader(rec *gateway.Record) {
	k := rec.Holding()
	if k == 0 || len(rec.Line) <= k {
		return
	}
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	for _, e := range rec.Line[:k] {
		n := nonce(e.TokenHash)
		key := b.beatKey(b.aliveSubject(rec.Name, n))
		if b.watched[key] != nil {
			continue
		}
		b.watched[key] = &watchedLeader{election: rec.Name, nonce: n, idx: -1}
		b.rewatchLocked(key)
	}
}

// holdsWithFollower reports whether the candidacy of nonce n holds in rec
// while a follower waits behind the holders.
func holdsWithFollower(rec *gateway.Record, n string) bool {
	k := rec.Holding()
	if len(rec.Line) <= k {
		return false
	}
	for _, e := range rec.Line[:k] {
		if nonce(e.TokenHash) == n {
			return true
		}
	}
	return false
}

// unwatch stops watching w.
func (b *Backend) unwatch(w *watchedLeader) {
	k := b.beatKey(b.aliveSubject(w.election, w.nonce))
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	if b.watched[k] == w {
		b.queueLocked(w, 0)
		delete(b.watched, k)
	}
}

// hold takes w out of the queue while it is being checked.
func (b *Backend) hold(w *watchedLeader) {
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	b.queueLocked(w, 0)
}

// requeue checks w again at at, unless something was learned of it
// meanwhile that queued it already.
func (b *Backend) requeue(w *watchedLeader, at time.Time) {
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	if w.idx < 0 && b.watched[b.beatKey(b.aliveSubject(w.election, w.nonce))] == w {
		b.queueLocked(w, at.UnixNano())
	}
}

// dueLeaders takes the watched leaders whose expiry is at or before t out
// of the queue, and says how long until the next one is due.
func (b *Backend) dueLeaders(t time.Time) ([]*watchedLeader, time.Duration) {
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	var due []*watchedLeader
	for len(b.watchQ) > 0 && b.watchQ[0].at <= t.UnixNano() {
		w := heap.Pop(&b.watchQ).(*watchedLeader)
		w.at = 0
		due = append(due, w)
	}
	if len(b.watchQ) == 0 {
		return due, time.Hour
	}
	return due, time.Duration(b.watchQ[0].at - t.UnixNano())
}

// expireLeaders checks each watched leader when its expiry has passed by
// expirySlack, until ctx ends.
func (r *reconciler) expireLeaders(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := r.b.dueLeaders(time.Now().Add(-expirySlack))
		if len(due) > 0 {
			r.checkLeaders(ctx, due)
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-r.b.watchWake:
		case <-timer.C:
		}
	}
}

// checkLeaders expires the leaders of due whose liveness message has
// expired on the server's clock, and queues the others again.
func (r *reconciler) checkLeaders(ctx context.Context, due []*watchedLeader) {
	type expired struct {
		w       *watchedLeader
		subject string
		seq     uint64
		at      time.Time
	}
	var gone []expired
	for _, w := range due {
		s, ok := r.latest(w.election)
		if !ok || !holdsWithFollower(s.rec, w.nonce) {
			r.b.unwatch(w) // no longer a holder with a follower
			continue
		}
		subject := r.b.aliveSubject(w.election, w.nonce)
		seq, exp, alive, err := r.b.lastBeat(ctx, subject) // queues w at exp, if alive
		switch {
		case err != nil:
			r.b.requeue(w, time.Now().Add(expiryRetry))
		case alive && time.Until(exp) <= 0:
			r.b.hold(w) // queued again only by what follows
			gone = append(gone, expired{w, subject, seq, exp})
		}
		// Not alive: a marker (expired as it is delivered) or an empty
		// subject (the sweep decides, under the epoch); alive and not
		// expired yet: lastBeat queued it at its expiry.
	}
	if len(gone) == 0 {
		return
	}
	now, err := r.b.serverNow(ctx)
	if err != nil {
		for _, g := range gone {
			r.b.requeue(g.w, time.Now().Add(expiryRetry))
		}
		return
	}
	for _, g := range gone {
		if now.Before(g.at) {
			// This replica's clock runs ahead of the server's.
			r.b.requeue(g.w, time.Now().Add(g.at.Sub(now)))
			continue
		}
		if err := r.b.deleteBeat(ctx, g.seq); err != nil {
			// Replaced by a heartbeat, or expired by the server meanwhile:
			// the followed stream tells which. Should it tell nothing,
			// look again.
			r.b.requeue(g.w, time.Now().Add(expiryRetry))
			continue
		}
		r.b.buried(g.subject, g.seq)
		s, err := r.b.expireCandidacy(ctx, g.w.election, g.w.nonce)
		if err != nil {
			if ctx.Err() == nil {
				r.b.log.LogAttrs(ctx, slog.LevelWarn, "nats: expire", slog.String("election", g.w.election), slog.Any("err", err))
			}
			continue // the sweep finds the empty subject
		}
		r.put(s)
	}
}

// clockSubject is the liveness subject of the messages that read the
// server's clock (serverNow); "_" names no election.
func (b *Backend) clockSubject() string { return b.aliveSubject("_", "clock") }

// serverNow reads the clock of the liveness stream's leader: the timestamp
// it gives a message published now on the clock subject (which keeps only
// the last one).
func (b *Backend) serverNow(ctx context.Context) (time.Time, error) {
	if err := b.connected(); err != nil {
		return time.Time{}, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	ack, err := b.js.Publish(ctx, b.clockSubject(), nil)
	if err != nil {
		return time.Time{}, translate(err)
	}
	m, err := b.alive.GetMsg(ctx, ack.Sequence)
	if err != nil {
		return time.Time{}, translate(err)
	}
	return m.Time, nil
}

// deleteBeat deletes the liveness message at seq; it fails if the message
// is gone (replaced by a heartbeat, or expired by the server).
func (b *Backend) deleteBeat(ctx context.Context, seq uint64) error {
	if err := b.connected(); err != nil {
		return err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	err := b.alive.DeleteMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return err
	}
	return translate(err)
}
