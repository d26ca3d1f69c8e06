package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/electorhq/elector/gateway"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// translate maps NATS errors onto the gateway's sentinels: anything that
// means NATS could not be reached, did not answer in time or refused the
// work for lack of room (refusals) is ErrUnavailable.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, gateway.ErrUnavailable):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %w", gateway.ErrUnavailable, err)
	case errors.As(err, &apiErr) && (apiErr.Code == 503 || slices.Contains(refusals, apiErr.ErrorCode)):
		return fmt.Errorf("%w: %w", gateway.ErrUnavailable, err)
	}
	return err
}

// refusals are the JetStream API errors by which a server declines work it
// has no room for now (too many consumers, no storage or memory left):
// overload, which ends when the load does, so the gateway answers 503 with
// Retry-After rather than 500.
var refusals = []jetstream.ErrorCode{
	10002, // JSAccountResourcesExceededErr
	10023, // JSInsufficientResourcesErr
	jetstream.JSErrCodeMaximumConsumersLimit,
	jetstream.JSErrCodeStreamNotFound, // a stream lost with a restart, until it is made again
	10028,                             // JSMemoryResourcesExceededErr
	10047,                             // JSStorageResourcesExceededErr
}

// isConflict reports whether err is JetStream's compare-and-set failure:
// the subject's last sequence was not the one expected.
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
