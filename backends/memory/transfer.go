package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.Transferer = (*Backend)(nil)

// Transfer implements gateway.Transferer.
func (b *Backend) Transfer(_ context.Context, election, to, tokenHash string) (gateway.Election, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.elections[election]
	if !ok {
		return gateway.Election{}, fmt.Errorf("memory: transfer: %q: %w", election, gateway.ErrElectionNotFound)
	}
	ev, err := r.Transfer(time.Now(), to, tokenHash)
	b.update(r, ev)
	if err != nil {
		return gateway.Election{}, fmt.Errorf("memory: transfer: %w", err)
	}
	return b.snapshot(r), nil
}

// Handover implements gateway.Transferer.
func (b *Backend) Handover(_ context.Context, election, id, tokenHash string) (gateway.Status, error) {
	return b.candidateOp("handover", election, id, func(r *gateway.Record, now time.Time) ([]gateway.Event, error) {
		return r.Handover(now, id, tokenHash)
	})
}
