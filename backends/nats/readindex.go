package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// revision is a read index fetched after the call: the group commit's
// durable sequence, read in place (every write acknowledged so far is at
// or below it), or a fetch shared with the reads that arrived meanwhile
// (gateway.ReadIndex).
func (b *Backend) revision(ctx context.Context) (uint64, error) {
	if b.commit != nil {
		return b.commit.Durable(), nil
	}
	return b.readIndex.Revision(ctx)
}

// fetchHead is the read index's fetch: the records stream's last sequence,
// from the stream leader.
//
// It asks for the stream's last message (a message get for subject ">",
// which the server answers from the stream's last sequence without a
// search) rather than for the stream info: the answer is the same
// sequence from the same place (a message get, like stream info, is
// served by the stream leader only, after every write it acknowledged),
// but costs both sides a small fraction of the stream info's JSON. Only
// the sequence is decoded. The message at the last sequence is always
// held (the stream denies deletes and purges, and the per-election limit
// drops only older records); if it is not, as in an empty stream, the
// stream info answers instead. An embedded server outside a cluster is
// asked in process instead, for the same sequence (localHead).
func (b *Backend) fetchHead(ctx context.Context) (uint64, error) {
	if err := b.connected(); err != nil {
		return 0, err
	}
	if b.localHead != nil {
		return b.localHead()
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	m, err := b.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+b.cfg.Stream, headRequest)
	if err != nil {
		return 0, translate(err)
	}
	// The answer carries the whole last record; only its sequence is
	// wanted, which comes right after the subject.
	if !bytes.Contains(m.Data, []byte(`"error"`)) {
		if seq, ok := jsonUint(m.Data, `"seq":`); ok {
			if err := b.confirmQuorum(ctx); err != nil {
				return 0, err
			}
			return seq, nil
		}
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return 0, fmt.Errorf("nats: read index: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		seq, err := b.lastSeq(ctx)
		if err == nil {
			err = b.confirmQuorum(ctx)
		}
		return seq, err
	case resp.Error != nil:
		return 0, translate(resp.Error)
	case resp.Message == nil:
		return 0, fmt.Errorf("nats: read index: an answer without a message")
	}
	// The answer may come from a leader cut off from its quorum: use it
	// only if the lease held when it arrived, or is renewed after it.
	if err := b.confirmQuorum(ctx); err != nil {
		return 0, err
	}
	return resp.Message.Seq, nil
}

// headRequest asks a message get for the stream's last message (in a form
// every JetStream version reads).
var headRequest = []byte(`{"last_by_subj":">"}`)
