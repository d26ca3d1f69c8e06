package nats

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	b.live.remember(subject, seq, exp)
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
	var m *jetstream.RawStreamMsg
	err = b.resent(ctx, func(ctx context.Context) (err error) {
		m, err = stream.GetLastMsgForSubject(ctx, subject)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		b.live.forget(subject)
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, translate(err)
	}
	if m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		b.live.buried(subject, m.Sequence)
		return m.Sequence, time.Time{}, false, nil
	}
	exp := m.Time.Add(msgTTL(m.Header.Get(jetstream.MsgTTLHeader)))
	b.live.learned(subject, m.Sequence, exp)
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
	b.live.forget(subject)
	ctx, cancel := b.opContext(context.WithoutCancel(ctx))
	defer cancel()
	stream, _ := b.livenessOf(subject)
	if err := b.resent(ctx, func(ctx context.Context) error { return stream.Purge(ctx, jetstream.WithPurgeSubject(subject)) }); err != nil {
		b.log.Warn("nats: purge liveness", "subject", subject, "err", err)
	}
}

// livenessOf returns the stream that holds subject, a liveness or a timer
// subject, and its name.
func (b *Backend) livenessOf(subject string) (jetstream.Stream, string) {
	if b.subj.isTimer(subject) {
		return b.timers, b.subj.timerStream()
	}
	return b.alive, b.subj.aliveStream()
}
