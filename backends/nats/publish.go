package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publish sends m to JetStream and returns the sequence stream stored it
// at. It is jetstream's Publish without its per-call costs (options, a
// context with a timer of its own, a decoded acknowledgement): heartbeats
// and campaigns are little else. It sends no Nats-Expected-Stream header,
// which the server would keep with every message; instead the
// acknowledgement must name stream. It waits at most OpTimeout (or until
// ctx's earlier deadline), with the connection's pooled timers. Errors
// are those of jetstream's Publish: a *jetstream.APIError for a refusal
// (a wrong last sequence is a conflict, isConflict), and
// jetstream.ErrNoStreamResponse when no stream answers after the same
// retries.
func (b *Backend) publish(ctx context.Context, m *nats.Msg, stream string) (uint64, error) {
	request := func() (*nats.Msg, error) {
		timeout := b.cfg.OpTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = min(timeout, time.Until(dl))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		return b.request(m, timeout)
	}
	resp, err := request()
	for r := 0; errors.Is(err, nats.ErrNoResponders) && r < jetstream.DefaultPubRetryAttempts; r++ {
		// A stream changing leader answers no one for a moment.
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(jetstream.DefaultPubRetryWait):
		}
		resp, err = request()
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return 0, jetstream.ErrNoStreamResponse
	case err != nil:
		return 0, err
	}
	return ackSeq(resp.Data, stream)
}

// ackSeq reads the sequence of a publish's acknowledgement by stream, or
// the API error it carries.
func ackSeq(data []byte, stream string) (uint64, error) {
	if !bytes.Contains(data, []byte(`"error"`)) {
		if seq, ok := jsonUint(data, `"seq":`); ok && bytes.Contains(data, []byte(`"stream":"`+stream+`"`)) {
			return seq, nil
		}
	}
	var ack struct {
		Error *jetstream.APIError `json:"error"`
		jetstream.PubAck
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream != stream {
		return 0, fmt.Errorf("nats: a message for stream %s went to stream %q: %w", stream, ack.Stream, jetstream.ErrInvalidJSAck)
	}
	return ack.Sequence, nil
}

// jsonUint reads the unsigned integer after the first occurrence of
// member (such as `"seq":`) in a JSON object that has no other text like
// it before (acknowledgements and message gets of this backend, whose
// subjects and stream names hold no quote).
func jsonUint(data []byte, member string) (uint64, bool) {
	i := bytes.Index(data, []byte(member))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(member):]
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	return v, err == nil
}
