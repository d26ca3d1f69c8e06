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
// ctx's earlier deadline), with the connection's pooled timers, and on a
// replicated stream sends m again each time its answer has not come within
// a wait (resend.go). Errors are those of jetstream's Publish: a
// *jetstream.APIError for a refusal (a wrong last sequence is a conflict,
// isConflict), and jetstream.ErrNoStreamResponse when no stream answers
// after leaderlessWaits. A conflict that answers a copy sent after an
// unanswered one is nats.ErrTimeout instead: the first copy may be what
// it found.
func (b *Backend) publish(ctx context.Context, m *nats.Msg, stream string) (uint64, error) {
	deadline := time.Now().Add(b.cfg.OpTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	wait, waits, unanswered := b.answerWait, leaderlessWaits, false
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		attempt, last := left, true
		if wait > 0 && wait < left {
			attempt, last = wait, false
		}
		resp, err := b.request(m, attempt)
		switch {
		case errors.Is(err, nats.ErrNoResponders) && len(waits) > 0:
			// A stream changing leader answers no one for a moment.
			if err := pause(ctx, waits[0]); err != nil {
				return 0, err
			}
			waits = waits[1:]
			continue
		case errors.Is(err, nats.ErrNoResponders):
			return 0, jetstream.ErrNoStreamResponse
		case errors.Is(err, nats.ErrTimeout) && !last:
			unanswered = true
			wait *= 2
			continue
		case err != nil:
			return 0, err
		}
		seq, err := ackSeq(resp.Data, stream)
		if unanswered && isConflict(err) {
			return 0, fmt.Errorf("nats: a copy of a publish sent after one went unanswered was refused (%v): %w", err, nats.ErrTimeout)
		}
		return seq, err
	}
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
