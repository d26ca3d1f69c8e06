package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.CatchUpReporter = (*Backend)(nil)

// CaughtUp implements gateway.CatchUpReporter. It reads etcd's current
// revision (a linearizable count-only read under the prefix) and waits
// (gateway.WaitCaughtUp) for the cache to catch up with it as a read does
// (see Backend.catchUp: a revision that touched nothing under the prefix
// counts too). It returns nil once the cache holds that revision; an
// error wrapping gateway.ErrUnavailable naming both revisions when it
// does not; and the translated error (normally gateway.ErrUnavailable)
// when etcd cannot serve the read.
func (b *Backend) CaughtUp(ctx context.Context) error {
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Get(rctx, b.keys.settings("_caughtup"), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return translate(ctx, "catch-up", err)
	}
	want := resp.Header.Revision
	err = gateway.WaitCaughtUp(ctx, "revision", uint64(want),
		func(ctx context.Context) error { return b.catchUp(ctx, want) },
		func() (uint64, error) {
			have, loaded := b.cache.status()
			if !loaded {
				return 0, fmt.Errorf("election state not loaded, etcd at revision %d: %w", want, gateway.ErrUnavailable)
			}
			return uint64(have), nil
		})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	return nil
}
