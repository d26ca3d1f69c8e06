package nats

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A request to a replicated stream's leader can go unanswered without
// failing. A leader that steps down (handOver moves every leadership of a
// member that shuts down, for a rolling restart) drops what it received
// and did not answer, and its successor never saw it: JetStream answers
// no one, and the request would wait out OpTimeout, 5 s. With one request
// of every writer caught so, no write went through for those 5 s.
//
// So on a replicated stream a request is sent again when its answer has
// not come within answerWait, then within twice that, and so on until
// OpTimeout. The leader answers in milliseconds; the waits double so that
// a leader slow under load is sent a few copies at most, not one every
// half second. What is sent again is safe to send twice:
//
//   - reads, purges and the deletion of an expired liveness message
//     (resent), which change nothing, or nothing more the second time (a
//     second deletion finds the message gone, which expiry reads as it
//     would a lost answer: deleteBeat);
//   - publishes of records, of conditional liveness messages and of the
//     KV's writes carry the subject's expected last sequence. JetStream
//     checks it at the leader, which takes proposals only once it has
//     applied its whole log (nats-server v2.15.2, the embedded server's:
//     stream.isLeader), so at most one copy is stored: the second finds
//     the first. That refusal therefore says nothing about the write
//     (publish reports it as unanswered: a record's write then looks for
//     its own message, landed; a KV write answers unavailable). A
//     server that stored both would store one record twice, the second
//     naming as its Prev the sequence before the first: an event watch
//     refuses that as a gap and ends (watchGap), loudly, and no state
//     differs, the copies being the same record (or the same KV value);
//   - an unconditional liveness message (a heartbeat) stored twice is one
//     renewal, and a timer's marker stored twice ends as much later as the
//     copy was sent: a handover delay, hold or cooldown that ends later
//     never lets a candidate lead early.
const answerWait = 500 * time.Millisecond

// leaderlessWaits are the pauses before a request is sent again after its
// stream had no leader to take it: nobody listened (no responders), or a
// member answered that the group has none (JetStream's "system
// temporarily unavailable", 10008). A leader handed over (handOver) is in
// place within tens of milliseconds, so the first pauses are short; 620
// ms in all, after which the request fails as unavailable, so that a
// stream that lost its leader to a crash (an election after 4 to 9 s of
// silence) fails requests rather than holding them.
var leaderlessWaits = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond}

// leaderless reports whether err says the request found its stream, or
// JetStream's meta group, without a leader at that moment.
func leaderless(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || (errors.As(err, &apiErr) && apiErr.ErrorCode == jsClusterNotAvail)
}

// jsClusterNotAvail is JetStream's "JetStream system temporarily
// unavailable": the stream's group, or the meta group, has no leader.
const jsClusterNotAvail jetstream.ErrorCode = 10008

// pause waits d, or until ctx ends (its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errNoAnswerYet is the cause of an attempt's context that ended because
// its answer had not come within the attempt's wait.
var errNoAnswerYet = errors.New("nats: no answer yet")

// resent runs op, a request to a stream's leader that may be sent twice
// (a read, a purge), bounded by OpTimeout. It runs it again each time it
// goes unanswered within its wait (answerWait, doubling; none on a stream
// of one replica, b.answerWait 0), and after each of leaderlessWaits while
// it finds no leader. It returns op's last error.
func (b *Backend) resent(ctx context.Context, op func(ctx context.Context) error) error {
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	wait, waits := b.answerWait, leaderlessWaits
	for {
		var err error
		if dl, _ := ctx.Deadline(); wait <= 0 || time.Until(dl) <= wait {
			err = op(ctx)
		} else {
			attempt, cancelAttempt := context.WithTimeoutCause(ctx, wait, errNoAnswerYet)
			err = op(attempt)
			cancelAttempt()
			if err != nil && ctx.Err() == nil && errors.Is(context.Cause(attempt), errNoAnswerYet) {
				wait *= 2
				continue
			}
		}
		if !leaderless(err) || len(waits) == 0 {
			return err
		}
		if perr := pause(ctx, waits[0]); perr != nil {
			return err
		}
		waits = waits[1:]
	}
}
