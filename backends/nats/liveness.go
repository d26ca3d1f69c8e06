package nats

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/electorhq/elector/internal/due"
)

// liveness is what a replica knows of liveness subjects (candidacies'
// liveness messages and timers' markers), from its own publishes and
// reads and from Run's tails of the liveness and timers streams: each
// subject's last message, as last seen (beats), and the candidacies of
// Run's view whose expiry Run times (watched, queue: expiry.go). It
// decides nothing alone: a heartbeat's publish is conditional on the
// sequence known here, a heartbeat answered without a write relies on an
// expiry here no later than the server's (Backend.renewed), and a
// candidacy is expired only on what the server says (expiry.go).
type liveness struct {
	prefix string          // Config.SubjectPrefix, for aliveKey
	seeds  [2]maphash.Seed // of beatKey's two hashes

	mu    sync.Mutex
	beats map[beatKey]beatInfo // liveness subject (hashed, see beatKey) → its last message, as last seen
	// watched are the candidacies whose liveness Run times, and queue
	// them by expiry (expiry.go). wake tells Run the queue's first
	// changed.
	watched map[beatKey]*watchedLeader
	queue   *due.Queue[*watchedLeader]
	wake    chan struct{}
}

// newLiveness knows nothing yet of the liveness subjects under prefix.
func newLiveness(prefix string) *liveness {
	return &liveness{
		prefix: prefix, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		beats: map[beatKey]beatInfo{}, watched: map[beatKey]*watchedLeader{},
		queue: due.New[*watchedLeader](), wake: make(chan struct{}, 1),
	}
}

// beatInfo is what this replica knows of a candidacy's liveness subject:
// its last message's sequence and when that message expires (Unix
// nanoseconds), or, once its message at seq is known deleted (or a
// delete marker at seq seen), that it is dead. Sequences only grow on a subject, so older news never overwrites
// newer.
type beatInfo struct {
	seq     uint64
	expires int64 // for dead: when the entry may be pruned
	dead    bool
}

// beatKey names a liveness subject in the beats map: two independent
// 64-bit hashes of it, which keep the map's memory per candidacy small (no
// subject string kept) and, at 128 bits, never name two subjects of one
// process alike in practice. Should they, the cost would be a conditional
// publish refused for a wrong sequence (the slow path) or a candidacy read
// from the stream leader: the map only ever makes a faster route to the
// same checks, never a decision.
type beatKey [2]uint64

// key is subject's beatKey.
func (l *liveness) key(subject string) beatKey {
	return beatKey{maphash.String(l.seeds[0], subject), maphash.String(l.seeds[1], subject)}
}

// aliveKey is key(subjects.alive(election, nonce)), made without
// building the subject.
func (l *liveness) aliveKey(election string, nonce []byte) beatKey {
	var k beatKey
	for i, seed := range l.seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(l.prefix)
		_, _ = h.WriteString(".alive.")
		_, _ = h.WriteString(election)
		_ = h.WriteByte('.')
		_, _ = h.Write(nonce)
		k[i] = h.Sum64()
	}
	return k
}

// remember notes the live message at seq of subject, expiring at expires,
// from a publish's ack, a read or the followed liveness stream.
func (l *liveness) remember(subject string, seq uint64, expires time.Time) {
	k := l.key(subject)
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.beats[k]; !ok || seq > old.seq || (seq == old.seq && !old.dead) {
		l.beats[k] = beatInfo{seq: seq, expires: expires.UnixNano()}
		l.rewatchLocked(k)
	}
}

// learned notes the live message at seq of subject as the stream leader
// just returned it, over whatever was known: after the liveness stream was
// lost and made again, its sequences start over lower.
func (l *liveness) learned(subject string, seq uint64, expires time.Time) {
	k := l.key(subject)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beats[k] = beatInfo{seq: seq, expires: expires.UnixNano()}
	l.rewatchLocked(k)
}

// buried notes that subject's message at seq is gone (deleted at its
// expiry, or a timer's delete marker): no heartbeat may take the fast
// path on it, and a late ack of an older beat cannot revive it.
func (l *liveness) buried(subject string, seq uint64) {
	k := l.key(subject)
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.beats[k]; !ok || seq >= old.seq {
		l.beats[k] = beatInfo{seq: seq, expires: time.Now().UnixNano(), dead: true}
		l.rewatchLocked(k)
	}
}

// forget drops what is known of subject, after a purge (which leaves no
// message to follow) or when it has no message at all.
func (l *liveness) forget(subject string) {
	k := l.key(subject)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.beats, k)
	l.rewatchLocked(k)
}

// prune forgets liveness messages that expired before t, including
// those of candidacies another replica purged.
func (l *liveness) prune(t time.Time) {
	before := t.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, bi := range l.beats {
		if bi.expires < before {
			delete(l.beats, k)
		}
	}
}

// expiry returns when subject's live message expires, if one is known.
func (l *liveness) expiry(subject string) (time.Time, bool) {
	return l.expiryOf(l.key(subject))
}

// expiryOf is expiry of the subject whose key is k.
func (l *liveness) expiryOf(k beatKey) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bi, ok := l.beats[k]
	if !ok || bi.dead {
		return time.Time{}, false
	}
	return time.Unix(0, bi.expires), true
}

// renewed returns when subject's live message expires if that is at least
// ttl from now on this process's clock, and the server is a standalone
// embedded one in this process (localHead is set), which times the
// message on the same clock: then a heartbeat of ttl needs no write
// (quickHeartbeat), because the message the server already holds expires
// no sooner than what the heartbeat promises.
//
// Why a heartbeat answered without a write still extends the candidacy as
// far as every replica and a restarted server will see it, so no replica
// can promote a successor while a leader holds such an answer:
//   - The message is on the server. Its expiry here is the one this
//     process gave it (the time before its publish plus its TTL, which the
//     server counts from when it stored the message, later) or read from
//     the server (its timestamp plus its TTL); either is no later than the
//     server's own. Until then the server does not remove it, Run's
//     expiry deletes nothing (it deletes only a message expired on the
//     server's clock), and no conditional heartbeat or grant replaces it
//     with an earlier expiry: every liveness message of a candidacy has the
//     same TTL, lifeTTL, so a later one expires later. (Versions before
//     lifeTTL wrote the plain TTL: replicas sharing an embedded server
//     through its client listener upgrade together, as records already
//     require.) A resignation
//     removes the candidate from the record before it purges the message,
//     and the answer reads the record at a read index fetched after the
//     heartbeat arrived, as for a written heartbeat.
//   - Liveness is not leadership, as for every heartbeat: the answer's
//     state and term come from the record chain, which the skipped write
//     would not have touched.
//   - A crash of this process loses nothing the answer relied on: the
//     message is the server's, not this replica's memory. The in-memory
//     liveness stream lost with a restart of the server gives every
//     recorded candidacy a grant of lifeTTL after the loss (epoch.go),
//     which expires later than any message before the loss, and an empty
//     subject expires no one while the epoch is not there (the grant
//     comes first). A known message whose sequence a lost stream reuses
//     lower is kept over the newer one (remember), so the expiry here can
//     only be earlier than the server's.
//   - On a server elsewhere (an external NATS, an embedded cluster's other
//     members) the message's timestamp is another clock's, so every
//     heartbeat writes, as before.
//
// The client's step-down rule counts its TTL from when it sent the
// heartbeat, which is before now: the message outlives that too.
func (b *Backend) renewed(subject string, ttl time.Duration) (time.Time, bool) {
	if b.localHead == nil {
		return time.Time{}, false // not a standalone server in this process
	}
	at, ok := b.live.expiry(subject)
	if !ok || at.Before(time.Now().Add(ttl)) {
		return time.Time{}, false
	}
	return at, true
}

// liveSeq returns the sequence of subject's live message, if one is known.
func (l *liveness) liveSeq(subject string) (uint64, bool) {
	k := l.key(subject)
	l.mu.Lock()
	defer l.mu.Unlock()
	bi, ok := l.beats[k]
	return bi.seq, ok && !bi.dead
}
