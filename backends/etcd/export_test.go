package etcd

import (
	"context"
	"time"
)

// PrepareRemove computes, from this replica's view of election as it is
// now, the transaction that Resign (reason "resigned") or ReportError
// (reason "error") would commit for candidate id, and returns a function
// that commits it later and reports whether its comparisons held. Tests use
// it to commit a transaction computed from a view that has since gone
// stale, as a replica whose cache lags behind another's write does.
func (b *Backend) PrepareRemove(ctx context.Context, election, id, tokenHash, reason string) (commit func() (bool, error), err error) {
	v, x, cooling, err := b.owned(ctx, "prepare", election, id, tokenHash, true)
	if err != nil {
		return nil, err
	}
	cmps, ops := b.removeTxn(v, x, cooling, id, reason, "", time.Now())
	return func() (bool, error) {
		resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return false, err
		}
		if !resp.Succeeded {
			return false, b.catchUp(ctx, resp.Header.Revision)
		}
		return true, b.waitApplied(ctx, resp.Header.Revision)
	}, nil
}
