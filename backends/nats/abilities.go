package nats

import (
	"context"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

var (
	_ gateway.LeaderFailer    = (*Backend)(nil)
	_ gateway.ElectionDeleter = (*Backend)(nil)
	_ gateway.TokenChecker    = (*Backend)(nil)
	_ gateway.Transferer      = (*Backend)(nil)
	_ gateway.MultiHolder     = (*Backend)(nil)
)

// MaxHolders implements gateway.MultiHolder: the records' slots hold up to
// gateway.MaxHolders (see "Holders" in the package doc).
func (b *Backend) MaxHolders() int { return gateway.MaxHolders }

// FailLeader implements gateway.LeaderFailer: Record.FailLeader under
// compare-and-set, so the check that id leads term and the error report
// are one write of the election's record chain. Errors:
// gateway.ErrNotLeader, and as ReportError.
func (b *Backend) FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (gateway.Status, error) {
	if _, _, _, _, err := b.owned(ctx, "fail leader", election, id, tokenHash); err != nil {
		return gateway.Status{}, err
	}
	s, err := b.apply(ctx, "fail leader", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.FailLeader(now, id, tokenHash, term, reason)
	})
	if err != nil {
		return gateway.Status{}, err
	}
	return b.status(ctx, "fail leader", s, id, time.Time{})
}

// DeleteElection implements gateway.ElectionDeleter. It writes a
// tombstone over the election's latest record, under compare-and-set: the
// record with "deleted" set, no candidate and its last term, so that an
// election created again continues above that term (apply) and the chain
// of records goes on. Reads treat a tombstone as absent. An election
// whose failed or demoted holder's promise still holds
// (gateway.Record.FailLeader, Configure)
// is not empty. Errors:
// gateway.ErrElectionNotFound, gateway.ErrElectionNotEmpty,
// gateway.ErrUnavailable.
func (b *Backend) DeleteElection(ctx context.Context, election string) error {
	for i := 0; ; i++ {
		if err := gateway.Conflicts.Try(ctx, i); err != nil {
			return fmt.Errorf("nats: delete %q: %w", election, err)
		}
		cur, found, err := b.load(ctx, election)
		if err != nil {
			return fmt.Errorf("nats: delete %q: %w", election, err)
		}
		if !found || cur.deleted {
			return fmt.Errorf("nats: delete %q: %w", election, gateway.ErrElectionNotFound)
		}
		ev := cur.rec.Advance(b.now())
		if n := len(cur.rec.Line) + len(cur.rec.Cooling); n > 0 {
			return fmt.Errorf("nats: delete %q: %d candidates: %w", election, n, gateway.ErrElectionNotEmpty)
		}
		if hs := cur.rec.Held; len(hs) > 0 {
			// A tombstone keeps no hold: a campaign would lead at once.
			return fmt.Errorf("nats: delete %q: the promise of ended term %d holds: %w", election, hs[0].Term, gateway.ErrElectionNotEmpty)
		}
		cur.deleted = true
		next, err := b.publishRecord(ctx, cur, ev)
		if isConflict(err) {
			continue // the election moved: look again
		}
		if err != nil {
			return fmt.Errorf("nats: delete %q: %w", election, translate(err))
		}
		next.deleted = true
		if v := b.running(); v != nil {
			v.put(next)
		}
		return nil
	}
}

// CheckToken implements gateway.TokenChecker with the record read from
// the stream leader and the candidacy's liveness.
func (b *Backend) CheckToken(ctx context.Context, election, id, tokenHash string) error {
	_, _, _, _, err := b.owned(ctx, "check token", election, id, tokenHash)
	return err
}

// Transfer implements gateway.Transferer: Record.Transfer under
// compare-and-set. While it is pending, the leader's heartbeats are
// refused before they publish anything (Heartbeat), so its liveness
// message is not renewed and the transfer completes at its expiry at the
// latest.
func (b *Backend) Transfer(ctx context.Context, election, to, tokenHash string) (gateway.Election, error) {
	return b.TransferFrom(ctx, election, "", to, tokenHash)
}

// TransferFrom implements gateway.Transferer: Record.Transfer under
// compare-and-set, as every transition.
func (b *Backend) TransferFrom(ctx context.Context, election, from, to, tokenHash string) (gateway.Election, error) {
	s, err := b.apply(ctx, "transfer", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Transfer(now, from, to, tokenHash)
	})
	if err != nil {
		return gateway.Election{}, err
	}
	e, err := b.show(ctx, s)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("nats: transfer %q: %w", election, err)
	}
	return e, nil
}

// CancelTransfer implements gateway.Transferer: Record.CancelTransfer
// under compare-and-set, one link of the record chain like a handover or
// an expiry, so whichever is stored first wins and the other finds the
// record changed (see gateway.Record.CancelTransfer for why that cannot
// make two leaders). From then on the leader's heartbeats publish again.
func (b *Backend) CancelTransfer(ctx context.Context, election, tokenHash string) (gateway.Election, error) {
	s, err := b.apply(ctx, "cancel transfer", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.CancelTransfer(now, tokenHash)
	})
	if err != nil {
		return gateway.Election{}, err
	}
	e, err := b.show(ctx, s)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("nats: cancel transfer %q: %w", election, err)
	}
	return e, nil
}

// Handover implements gateway.Transferer: Record.Handover under
// compare-and-set. The old leader stays in line and heartbeats again (its
// heartbeats are no longer refused).
func (b *Backend) Handover(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	if _, _, _, _, err := b.owned(ctx, "handover", election, id, tokenHash); err != nil {
		return gateway.Status{}, err
	}
	s, err := b.apply(ctx, "handover", election, nil, writeOnSuccess, func(_ context.Context, r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		ev, err := r.Handover(now, id, tokenHash)
		if e := r.Find(id); e != nil {
			e.ExpiresAt = time.Time{} // liveness lives in the liveness stream
		}
		return ev, err
	})
	if err != nil {
		return gateway.Status{}, err
	}
	return b.status(ctx, "handover", s, id, time.Time{})
}
