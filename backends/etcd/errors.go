package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/electorhq/elector/gateway"
)

// translate turns an etcd client error into a gateway sentinel, keeping
// the original for the message: a lease that is gone is a candidate that
// is gone, a compacted or future revision is a cursor that is not held, a
// context the caller cancelled stays itself, and everything else (no
// connection, no leader, timeouts, refused credentials) is
// gateway.ErrUnavailable.
func translate(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("etcd: %s: %w", op, gateway.ErrCandidateNotFound)
	case errors.Is(err, rpctypes.ErrCompacted), errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("etcd: %s: %w: %v", op, gateway.ErrCursorExpired, err)
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return fmt.Errorf("etcd: %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("etcd: %s: %w: %w", op, gateway.ErrUnavailable, err)
}
