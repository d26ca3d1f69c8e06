package nats

import (
	"context"
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
)

// recordStreamConfig keeps History records per election and never ages
// them out: the latest record of an idle election holds its term, and
// terms must never restart.
func (b *Backend) recordStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.cfg.Stream,
		Description:       "elector: election records and their events",
		Subjects:          []string{b.subj.record("*")},
		Storage:           jetstream.FileStorage,
		Replicas:          b.cfg.Replicas,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: int64(b.cfg.History),
		DenyDelete:        true,
		DenyPurge:         true,
	}
}

// aliveStreamConfig keeps one liveness message per candidacy. Each message
// carries its candidate's TTL (Nats-TTL), at which the server removes it
// and writes nothing in its place: the stream has no delete markers, whose
// store races heartbeats (see "Liveness" in the package doc), so a message
// leaves it only by its TTL, by a later message on its subject, or by a
// write of this backend. It is kept in memory: a heartbeat waits for no
// disk, and a lost liveness stream costs every candidate one more TTL,
// never a second leader (see "Liveness durability" in the package doc).
func (b *Backend) aliveStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.subj.aliveStream(),
		Description:       "elector: candidate liveness, one message per candidacy with its TTL",
		Subjects:          []string{b.subj.alive("*", "*")},
		Storage:           jetstream.MemoryStorage,
		Replicas:          b.cfg.Replicas,
		Retention:         jetstream.LimitsPolicy,
		MaxMsgsPerSubject: 1,
		AllowMsgTTL:       true,
	}
}

// timerStreamConfig keeps one marker per running timer (timers.go) with
// the timer's length as its TTL; when it expires the server writes a
// delete marker, which ends the timer. In memory, like the liveness
// stream: a lost timer runs again whole (sweepTimers).
func (b *Backend) timerStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:                   b.subj.timerStream(),
		Description:            "elector: handover delays, holds and cooldowns, one marker per running timer with its length as TTL",
		Subjects:               []string{b.subj.timer("*", "*")},
		Storage:                jetstream.MemoryStorage,
		Replicas:               b.cfg.Replicas,
		Retention:              jetstream.LimitsPolicy,
		MaxMsgsPerSubject:      1,
		AllowMsgTTL:            true,
		SubjectDeleteMarkerTTL: b.cfg.MarkerTTL,
	}
}

// openAlive creates or updates the liveness stream. One an older version
// made is deleted first: kept on disk (a stream cannot change its
// storage), or writing delete markers (which held the timers too, and
// whose markers could remove an acknowledged heartbeat). The new one
// starts without an epoch, so every recorded candidate is granted a full
// TTL (epochs.grant) before anything is decided on it, and the timers it held
// run again whole on their own stream (sweepTimers).
func (b *Backend) openAlive(ctx context.Context) (jetstream.Stream, error) {
	cfg := b.aliveStreamConfig()
	old, err := b.js.Stream(ctx, cfg.Name)
	switch {
	case err == nil && (old.CachedInfo().Config.Storage != cfg.Storage || old.CachedInfo().Config.SubjectDeleteMarkerTTL != 0):
		b.log.LogAttrs(ctx, slog.LevelInfo, "nats: making the liveness stream again, in memory and without delete markers", slog.String("stream", cfg.Name))
		if err := b.js.DeleteStream(ctx, cfg.Name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, err
		}
	case err != nil && !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, err
	}
	return b.js.CreateOrUpdateStream(ctx, cfg)
}
