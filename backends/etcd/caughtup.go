package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// catchUpGrace is how long CaughtUp lets the cache reach etcd's current
// revision before it reports the watch as behind.
const catchUpGrace = time.Second

var _ gateway.CatchUpReporter = (*Backend)(nil)

// CaughtUp implements gateway.CatchUpReporter. It reads etcd's current
// revision (a linearizable count-only read under the prefix) and waits up
// to a second, or ctx's deadline if earlier, for the cache to catch up
// with it as a read does (see Backend.catchUp: a revision that touched
// nothing under the prefix counts too). It returns nil once the cache holds
// that revision; an error wrapping gateway.ErrUnavailable naming both
// revisions when it does not; and the translated error (normally
// gateway.ErrUnavailable) when etcd cannot serve the read.
func (b *Backend) CaughtUp(ctx context.Context) error {
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Get(rctx, b.keys.settings("_caughtup"), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return translate(ctx, "catch-up", err)
	}
	want := resp.Header.Revision
	wctx, wcancel := context.WithTimeout(ctx, catchUpGrace)
	defer wcancel()
	if b.catchUp(wctx, want) == nil {
		return nil
	}
	have, loaded := b.cache.status()
	if !loaded {
		return fmt.Errorf("etcd: watch not caught up: election state not loaded, etcd at revision %d: %w", want, gateway.ErrUnavailable)
	}
	return fmt.Errorf("etcd: watch not caught up: cache at revision %d, etcd at revision %d (%d behind): %w", have, want, want-have, gateway.ErrUnavailable)
}
