package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

var (
	_ gateway.Transferer = (*Backend)(nil)
)

// Transfer implements gateway.Transferer.
func (b *Backend) Transfer(ctx context.Context, election, to, tokenHash string) (gateway.Election, error) {
	return b.TransferFrom(ctx, election, "", to, tokenHash)
}

// TransferFrom implements gateway.Transferer.
func (b *Backend) TransferFrom(_ context.Context, election, from, to, tokenHash string) (gateway.Election, error) {
	return b.electionOp("transfer", election, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Transfer(now, from, to, tokenHash)
	})
}

// Handover implements gateway.Transferer.
func (b *Backend) Handover(_ context.Context, election, id, tokenHash string) (gateway.Status, error) {
	return b.candidateOp("handover", election, id, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Handover(now, id, tokenHash)
	})
}

// CancelTransfer implements gateway.Transferer: Record.CancelTransfer
// under the backend's mutex, like every transition, so it is ordered
// with a handover or an expiry (see Record.CancelTransfer).
func (b *Backend) CancelTransfer(_ context.Context, election, tokenHash string) (gateway.Election, error) {
	return b.electionOp("cancel transfer", election, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.CancelTransfer(now, tokenHash)
	})
}

// electionOp applies fn to the record of election under the mutex, keeps
// what it changed (time may have advanced even when it fails) and returns
// the election as it is then.
func (b *Backend) electionOp(what, election string, fn func(*gateway.Record, time.Time) ([]gateway.Event, error)) (gateway.Election, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		return gateway.Election{}, fmt.Errorf("memory: %s: %q: %w", what, election, gateway.ErrElectionNotFound)
	}
	ev, err := fn(r, time.Now())
	b.update(r, ev)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("memory: %s: %w", what, err)
	}
	return b.snapshot(r), nil
}
