package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// liveTTL is the per-message TTL a candidate's liveness message carries:
// its TTL rounded up to whole seconds, because the server counts message
// TTLs in seconds and a candidate must never be expired early.
func liveTTL(ttl time.Duration) time.Duration {
	s := (ttl + time.Second - 1) / time.Second
	return max(s, 1) * time.Second
}

// lifeTTL is the TTL of a candidacy's liveness message: its TTL rounded up
// to whole seconds (liveTTL), plus renewalSlack. That much is the most a
// candidate that stops heartbeating outlives its TTL.
func lifeTTL(ttl time.Duration) time.Duration {
	return liveTTL(ttl) + renewalSlack(ttl)
}

// renewalSlack is 1% of ttl in whole seconds (none below 100 s, 36 s at
// the longest TTL, an hour): what a candidacy's liveness message lives
// past its TTL, so that a heartbeat that would move the expiry by no more
// than that writes nothing (quickHeartbeat): a candidate heartbeating far
// more often than its TTL needs costs a read, not a write, for most of
// its heartbeats. Whole seconds because the server counts message TTLs in
// seconds; none for short TTLs, whose failover time it would lengthen by
// much of the TTL.
func renewalSlack(ttl time.Duration) time.Duration {
	return ttl / 100 / time.Second * time.Second
}

// beat publishes a liveness message for one candidacy (or timer marker) of
// ttl, rounded up to whole seconds. With expect set it
// is conditional on the subject's last sequence being *expect, so that a
// heartbeat cannot revive a candidacy whose message already left. It returns when the message expires.
func (b *Backend) beat(ctx context.Context, subject string, ttl time.Duration, expect *uint64) (time.Time, error) {
	if err := b.connected(); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	seq, err := b.publishBeat(ctx, subject, liveTTL(ttl), expect)
	if err != nil {
		return time.Time{}, err
	}
	exp := start.Add(liveTTL(ttl))
	b.remember(subject, seq, exp)
	return exp, nil
}

// publishBeat publishes a liveness message of ttl on subject, conditional
// on the subject's last sequence being *expect when expect is set, and
// returns its sequence. Errors as publish.
func (b *Backend) publishBeat(ctx context.Context, subject string, ttl time.Duration, expect *uint64) (uint64, error) {
	hdr := nats.Header{jetstream.MsgTTLHeader: {ttl.String()}}
	if expect != nil {
		hdr[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(*expect, 10)}
	}
	_, stream := b.livenessOf(subject)
	return b.publish(ctx, &nats.Msg{Subject: subject, Header: hdr}, stream)
}

// publish sends m to JetStream and returns the sequence stream stored it
// at. It is jetstream's Publish without its per-call costs (options, a
// context with a timer of its own, a decoded acknowledgement): heartbeats
// and campaigns are little else. It sends no Nats-Expected-Stream header,
// which the server would keep with every message; instead the
// acknowledgement must name stream. It waits at most OpTimeout (or until
// ctx's earlier deadline), with the connection's pooled timers. Errors
// are those of jetstream's Publish: a *jetstream.APIError for a refusal
// (a wrong last sequence is a conflict, isConflict), and
// jetstream.ErrNoStreamResponse when no stream answers after the same
// retries.
func (b *Backend) publish(ctx context.Context, m *nats.Msg, stream string) (uint64, error) {
	request := func() (*nats.Msg, error) {
		timeout := b.cfg.OpTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(dl))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		return b.nc.RequestMsg(m, timeout)
	}
	resp, err := request()
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		// A stream changing leader answers no one for a moment.
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(jetstream.DefaultPubRetryWait):
		}
		resp, err = request()
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return 0, jetstream.ErrNoStreamResponse
	case err != nil:
		return 0, err
	}
	return ackSeq(resp.Data, stream)
}

// ackSeq reads the sequence of a publish's acknowledgement by stream, or
// the API error it carries.
func ackSeq(data []byte, stream string) (uint64, error) {
	if !bytes.Contains(data, []byte(`"error"`)) {
		if seq, ok := jsonUint(data, `"seq":`); ok && bytes.Contains(data, []byte(`"stream":"`+stream+`"`)) {
			return seq, nil
		}
	}
	var ack struct {
		Error *jetstream.APIError `json:"error"`
		jetstream.PubAck
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream != stream {
		return 0, fmt.Errorf("nats: a message for stream %s went to stream %q: %w", stream, ack.Stream, jetstream.ErrInvalidJSAck)
	}
	return ack.Sequence, nil
}

// jsonUint reads the unsigned integer after the first occurrence of
// member (such as `"seq":`) in a JSON object that has no other text like
// it before (acknowledgements and message gets of this backend, whose
// subjects and stream names hold no quote).
func jsonUint(data []byte, member string) (uint64, bool) {
	i := bytes.Index(data, []byte(member))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(member):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	return v, err == nil
}

// lastBeat reads the last message of a liveness or timer subject from its
// stream's leader. alive is false when there is none or when it is the
// server's delete marker; seq is the subject's last sequence either way (0
// if empty). The liveness stream has no delete markers (a marker there
// means another version's layout: Ping refuses it, and the callers that
// decide a candidacy's death on what this returns treat it as no answer).
func (b *Backend) lastBeat(ctx context.Context, subject string) (seq uint64, expires time.Time, alive bool, err error) {
	if err := b.connected(); err != nil {
		return 0, time.Time{}, false, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	stream, _ := b.livenessOf(subject)
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		b.forget(subject)
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, translate(err)
	}
	if m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		b.buried(subject, m.Sequence)
		return m.Sequence, time.Time{}, false, nil
	}
	exp := m.Time.Add(msgTTL(m.Header.Get(jetstream.MsgTTLHeader)))
	b.learned(subject, m.Sequence, exp)
	return m.Sequence, exp, true, nil
}

// msgTTL parses a Nats-TTL header as this backend writes it.
func msgTTL(h string) time.Duration {
	d, err := time.ParseDuration(h)
	if err != nil {
		return 0
	}
	return d
}

// purgeBeats removes a candidacy's liveness message after it resigned.
// Failure is logged, not returned: the message then expires by itself,
// and its candidacy is no longer in the record.
func (b *Backend) purgeBeats(ctx context.Context, subject string) {
	b.forget(subject)
	ctx, cancel := b.opContext(context.WithoutCancel(ctx))
	defer cancel()
	stream, _ := b.livenessOf(subject)
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		b.log.Warn("nats: purge liveness", "subject", subject, "err", err)
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

func (b *Backend) beatKey(subject string) beatKey {
	return beatKey{maphash.String(b.beatSeeds[0], subject), maphash.String(b.beatSeeds[1], subject)}
}

// aliveKey is beatKey(b.aliveSubject(election, nonce)), made without
// building the subject.
func (b *Backend) aliveKey(election string, nonce []byte) beatKey {
	var k beatKey
	for i, seed := range b.beatSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(b.cfg.SubjectPrefix)
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
func (b *Backend) remember(subject string, seq uint64, expires time.Time) {
	k := b.beatKey(subject)
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	if old, ok := b.beats[k]; !ok || seq > old.seq || (seq == old.seq && !old.dead) {
		b.beats[k] = beatInfo{seq: seq, expires: expires.UnixNano()}
		b.rewatchLocked(k)
	}
}

// learned notes the live message at seq of subject as the stream leader
// just returned it, over whatever was known: after the liveness stream was
// lost and made again, its sequences start over lower.
func (b *Backend) learned(subject string, seq uint64, expires time.Time) {
	k := b.beatKey(subject)
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	b.beats[k] = beatInfo{seq: seq, expires: expires.UnixNano()}
	b.rewatchLocked(k)
}

// buried notes that subject's message at seq is gone (deleted at its
// expiry, or a timer's delete marker): no heartbeat may take the fast
// path on it, and a late ack of an older beat cannot revive it.
func (b *Backend) buried(subject string, seq uint64) {
	k := b.beatKey(subject)
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	if old, ok := b.beats[k]; !ok || seq >= old.seq {
		b.beats[k] = beatInfo{seq: seq, expires: time.Now().UnixNano(), dead: true}
		b.rewatchLocked(k)
	}
}

// forget drops what is known of subject, after a purge (which leaves no
// message to follow) or when it has no message at all.
func (b *Backend) forget(subject string) {
	k := b.beatKey(subject)
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	delete(b.beats, k)
	b.rewatchLocked(k)
}

// pruneBeats forgets liveness messages that expired before t, including
// those of candidacies another replica purged.
func (b *Backend) pruneBeats(t time.Time) {
	before := t.UnixNano()
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	for k, bi := range b.beats {
		if bi.expires < before {
			delete(b.beats, k)
		}
	}
}

// expiry returns when subject's live message expires, if one is known.
func (b *Backend) expiry(subject string) (time.Time, bool) {
	return b.expiryOf(b.beatKey(subject))
}

// expiryOf is expiry of the subject whose key is k.
func (b *Backend) expiryOf(k beatKey) (time.Time, bool) {
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	bi, ok := b.beats[k]
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
	at, ok := b.expiry(subject)
	if !ok || at.Before(time.Now().Add(ttl)) {
		return time.Time{}, false
	}
	return at, true
}

// liveSeq returns the sequence of subject's live message, if one is known.
func (b *Backend) liveSeq(subject string) (uint64, bool) {
	k := b.beatKey(subject)
	b.beatsMu.Lock()
	defer b.beatsMu.Unlock()
	bi, ok := b.beats[k]
	return bi.seq, ok && !bi.dead
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
	subject = b.aliveSubject(election, nonce(e.TokenHash))
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
