package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// The liveness stream is kept in memory (see "Liveness durability" in the
// package doc): a restart of the NATS servers may lose it whole, while the
// records, which hold the terms, stay on disk. A candidacy whose subject
// has no message at all is therefore dead only in a liveness stream known
// to have been granted: its epoch message (subjects.epoch, no TTL) is
// written after every candidacy of the records was given a liveness
// message of its full TTL (epochs.grant). A liveness stream without its epoch is
// new or was lost; whoever finds it so grants before deciding anything.

// epochs reads the liveness stream's epoch and grants a new one where
// there is none.
type epochs struct {
	b  *Backend
	mu sync.Mutex // one grant at a time
}

// current returns the id of the liveness stream's epoch, or "" when the
// stream has none (it is new, or lost its messages). A liveness stream
// that is gone altogether is created again, empty.
func (e *epochs) current(ctx context.Context) (string, error) {
	b := e.b
	if err := b.connected(); err != nil {
		return "", err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	m, err := b.alive.GetLastMsgForSubject(ctx, b.subj.epoch())
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return "", nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		b.log.LogAttrs(ctx, slog.LevelWarn, "nats: liveness stream gone; creating it again", slog.String("stream", b.subj.aliveStream()))
		if _, err := b.js.CreateOrUpdateStream(ctx, b.aliveStreamConfig()); err != nil {
			return "", translate(err)
		}
		return "", nil
	case err != nil:
		return "", translate(err)
	}
	return string(m.Data), nil
}

// grant gives every candidacy in the records a liveness message of its
// full TTL, unless its subject already has one, then writes the epoch; it
// does nothing when the epoch is there. Concurrent grants, on this replica
// or others, are harmless: each publish is conditional on the subject
// being empty, so a candidacy gets at most one granted message, and never
// one over a message or marker of its own.
func (e *epochs) grant(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.b
	if id, err := e.current(ctx); err != nil || id != "" {
		return err
	}
	recs, _, err := b.scan(ctx)
	if err != nil {
		return fmt.Errorf("nats: grant: %w", err)
	}
	none := uint64(0)
	granted := 0
	for _, s := range recs {
		for _, c := range slices.Concat(s.rec.Line, s.rec.Cooling) {
			_, err := b.beat(ctx, b.subj.alive(s.rec.Name, nonce(c.TokenHash)), lifeTTL(c.TTL), &none)
			switch {
			case err == nil:
				granted++
			case !isConflict(err):
				return fmt.Errorf("nats: grant %q: %w", s.rec.Name, translate(err))
			}
		}
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	_, err = b.js.Publish(ctx, b.subj.epoch(), []byte(hex.EncodeToString(id)),
		jetstream.WithExpectStream(b.subj.aliveStream()), jetstream.WithExpectLastSequencePerSubject(0))
	if err != nil && !isConflict(err) {
		return fmt.Errorf("nats: grant: epoch: %w", translate(err))
	}
	b.log.LogAttrs(ctx, slog.LevelInfo, "nats: new liveness stream: every recorded candidate got a full TTL",
		slog.Int("elections", len(recs)), slog.Int("granted", granted))
	return nil
}

// checkAlive reads a candidacy's liveness from the stream leader for a
// decision that may expire it. alive is false only when the subject is
// empty in a liveness stream whose epoch was there before the read and is
// the same after it: every message the subject had then left by its TTL
// or by a write of this backend made after that TTL (expiry.go), never
// by the server's delete marker (the liveness stream writes none), so no
// heartbeat acknowledged on it promised more. A liveness stream without
// an epoch is granted first, and the subject read again. seq is the
// subject's last sequence while alive. Errors: gateway.ErrUnavailable,
// also for a delete marker on the subject (errMarker).
func (b *Backend) checkAlive(ctx context.Context, subject string) (seq uint64, alive bool, err error) {
	seq, alive, err = b.candidacyBeat(ctx, subject)
	if err != nil || alive {
		return seq, alive, err
	}
	for range 3 {
		before, err := b.epochs.current(ctx)
		if err != nil {
			return 0, false, err
		}
		if before == "" {
			if err := b.epochs.grant(ctx); err != nil {
				return 0, false, err
			}
			continue
		}
		seq, alive, err := b.candidacyBeat(ctx, subject)
		if err != nil || alive {
			return seq, alive, err
		}
		after, err := b.epochs.current(ctx)
		if err != nil {
			return 0, false, err
		}
		if after == before {
			return 0, false, nil // gone in a granted stream: dead
		}
	}
	return 0, false, fmt.Errorf("nats: liveness of %s: the liveness stream keeps changing: %w", subject, gateway.ErrUnavailable)
}

// candidacyBeat is lastBeat for a candidacy's subject, where a delete
// marker is no answer (errMarker): it could have removed a heartbeat that
// was acknowledged, so neither its presence nor the empty subject it
// leaves behind shows that the candidacy's last promise lapsed.
func (b *Backend) candidacyBeat(ctx context.Context, subject string) (seq uint64, alive bool, err error) {
	seq, _, alive, err = b.lastBeat(ctx, subject)
	if err == nil && !alive && seq > 0 {
		return 0, false, fmt.Errorf("nats: liveness of %s: %w", subject, errMarker)
	}
	return seq, alive, err
}

// errMarker is a delete marker found on a candidacy's liveness subject,
// which only a liveness stream of another version's layout has (Ping
// refuses it, openAlive makes it again).
var errMarker = fmt.Errorf("a delete marker on a liveness subject: the liveness stream has another version's layout: %w", gateway.ErrUnavailable)
