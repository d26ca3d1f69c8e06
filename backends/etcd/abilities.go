package etcd

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var (
	_ gateway.LeaderFailer    = (*Backend)(nil)
	_ gateway.ElectionDeleter = (*Backend)(nil)
	_ gateway.TokenChecker    = (*Backend)(nil)
	_ gateway.MultiHolder     = (*Backend)(nil)
)

// MaxHolders implements gateway.MultiHolder: the lead record's slots hold
// up to gateway.MaxHolders (see "Who holds" in the package doc).
func (b *Backend) MaxHolders() int { return gateway.MaxHolders }

// FailLeader implements gateway.LeaderFailer: ReportError, only while id
// holds election in term. The check is part of the transaction: removing a
// holder compares the lead record's mod revision with the one the check
// read (see removeTxn and handOver), so a holdership that ended and began
// again in between makes the transaction fail, and the next attempt sees
// that id no longer holds term. Unlike ReportError it does not hand over:
// the holder may not know of the verdict, so its slot stays taken until
// its promise has lapsed (handOver, promise.go); the other slots are
// unaffected. Errors: gateway.ErrNotLeader, and as ReportError.
func (b *Backend) FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (gateway.Status, error) {
	_, err := b.removeIf(ctx, "fail leader", election, id, tokenHash, gateway.ReasonError, reason, true, func(v view, x *entry) error {
		if i := v.holderOf(x); i < 0 || v.held[i].Term != term {
			return fmt.Errorf("etcd: fail leader %q in %q, term %d: %w", id, election, term, gateway.ErrNotLeader)
		}
		return nil
	})
	if err != nil {
		return gateway.Status{}, err
	}
	return b.status(ctx, "fail leader", election, id, tokenHash)
}

// DeleteElection implements gateway.ElectionDeleter: one transaction
// deletes the election's settings, lead record, mark and promises, if no
// key of its line (elector's or a native etcd client's), of its cooldowns
// or of its candidate ids exists at that revision. Terms need no tombstone
// here: a term is a revision (a candidacy key's create revision, or the
// revision of the write that acknowledged it), and etcd's revision only
// grows, so an election created again hands out larger terms. While the
// promise of a holdership that ended without the holder asking still
// holds on this replica's clock, the election is not empty: deleting its
// lead record would let a newcomer hold at once (see promise.go).
func (b *Backend) DeleteElection(ctx context.Context, election string) error {
	v, _, err := b.current(ctx, election)
	if err != nil {
		return err
	}
	if !v.exists {
		return fmt.Errorf("etcd: delete %q: %w", election, gateway.ErrElectionNotFound)
	}
	if left, held := v.promiseHolds(b.mono.now()); held {
		return fmt.Errorf("etcd: delete %q: the promise of a holder it ended holds for %s more: %w", election, left, gateway.ErrElectionNotEmpty)
	}
	none := func(prefix string) clientv3.Cmp {
		return clientv3.Compare(clientv3.CreateRevision(prefix), "=", 0).WithPrefix()
	}
	k := b.keys
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Txn(rctx).
		If(none(k.line(election)), none(k.cooling(election, "")), none(k.candidateID(election, "")),
			clientv3.Compare(clientv3.ModRevision(k.lead(election)), "=", v.leadMod)). // the holderships checked above
		Then(clientv3.OpDelete(k.settings(election)), clientv3.OpDelete(k.lead(election)), clientv3.OpDelete(k.mark(election)),
			clientv3.OpDelete(k.promise(election)), clientv3.OpDelete(k.promiseOf(election, "")+"/", clientv3.WithPrefix())).
		Commit()
	cancel()
	if err != nil {
		return translate(ctx, fmt.Sprintf("delete %q", election), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: delete %q: %w", election, gateway.ErrElectionNotEmpty)
	}
	return b.waitApplied(ctx, resp.Header.Revision)
}

// CheckToken implements gateway.TokenChecker from the replica's view,
// reading etcd again when the view does not know the candidate or its
// token differs.
func (b *Backend) CheckToken(ctx context.Context, election, id, tokenHash string) error {
	_, _, _, err := b.owned(ctx, "check token", election, id, tokenHash, false)
	if errors.Is(err, gateway.ErrElectionNotFound) {
		return fmt.Errorf("etcd: check token %q: %w", id, gateway.ErrCandidateNotFound)
	}
	return err
}
