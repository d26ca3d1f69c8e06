package nats

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

// A replicated records stream's leader that is cut off from the other
// members goes on answering message gets (the read index, loads) from its
// own store until it notices it lost its quorum, which NATS checks every
// ten seconds; a JetStream member that leads the meta group too answers
// until then. Meanwhile the other members elect a leader of their own
// (after at least minElection of silence) and accept writes: a read
// served by the cut-off leader after that would tell a stale leader as
// current. The quorum lease below closes that window.
//
// Why a lease cannot let a stale read through: the stream info names, for
// each follower, how long ago the leader last heard from it. A follower
// that heard from the leader does not stand for election, and so no
// other leader can be elected, until minElection has passed since. Once
// the leader has heard from a quorum (itself and, of three, one more) at
// or after time h, no other leader can commit a write before h +
// minElection. Reads answered by that leader until h + leaseSpan, with
// leaseSpan well below minElection, cannot miss a write acknowledged by
// another leader. h is taken on this replica's clock as the time the info
// request was sent minus the follower's reported silence, which is no
// later than the real time of hearing; only durations are compared, so no
// two clocks need to agree.
const (
	// minElection is NATS's minimum election timeout: a Raft follower
	// does not stand for election sooner after hearing from its leader.
	minElection = 4 * time.Second
	// leaseSpan is how long after a quorum was last heard reads may be
	// answered without asking again: half of minElection, the other half
	// a margin for delays between the follower and this replica.
	leaseSpan = minElection / 2
)

// quorumLease holds until when the records stream's leader is known to
// have had its quorum (see above).
type quorumLease struct {
	mu    sync.Mutex
	until time.Time
	renew chan struct{} // a token: one renewal at a time
}

func newQuorumLease() *quorumLease { return &quorumLease{renew: make(chan struct{}, 1)} }

func (l *quorumLease) valid(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.until)
}

// confirmQuorum returns nil when reads from the records stream's leader
// cannot miss a write acknowledged elsewhere: at once while the lease
// holds, after one stream info otherwise (shared by the callers that wait
// meanwhile). A stream of one replica has no other leader to fear. Errors:
// gateway.ErrUnavailable, naming what is missing.
func (b *Backend) confirmQuorum(ctx context.Context) error {
	if b.cfg.Replicas == 1 {
		return nil
	}
	l := b.lease
	if l.valid(time.Now()) {
		return nil
	}
	select {
	case l.renew <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("nats: quorum: %w: %w", gateway.ErrUnavailable, ctx.Err())
	}
	defer func() { <-l.renew }()
	if l.valid(time.Now()) { // renewed while this call waited
		return nil
	}
	sent := time.Now()
	heard, err := b.quorumHeard(ctx)
	if err != nil {
		return err
	}
	until := sent.Add(-heard).Add(leaseSpan)
	if !time.Now().Before(until) {
		return fmt.Errorf("nats: quorum: the leader of stream %s last heard from a quorum of its replicas %s ago: %w",
			b.cfg.Stream, heard.Round(time.Millisecond), gateway.ErrUnavailable)
	}
	l.mu.Lock()
	l.until = until
	l.mu.Unlock()
	return nil
}

// quorumHeard asks the records stream's leader how long ago it last heard
// from a quorum of its replicas. Errors: gateway.ErrUnavailable when the
// stream has no leader or NATS cannot be reached.
func (b *Backend) quorumHeard(ctx context.Context) (time.Duration, error) {
	return b.streamHeard(ctx, b.records, b.cfg.Stream)
}

// streamHeard asks the leader of stream s (named name) how long ago it
// last heard from a quorum of its replicas. Errors as quorumHeard.
func (b *Backend) streamHeard(ctx context.Context, s jetstream.Stream, name string) (time.Duration, error) {
	if err := b.connected(); err != nil {
		return 0, fmt.Errorf("nats: quorum: %w", err)
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	var info *jetstream.StreamInfo
	err := b.resent(ctx, func(ctx context.Context) (err error) {
		info, err = s.Info(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("nats: quorum: stream %s: %w", name, translate(err))
	}
	return quorumSilence(info.Cluster, name)
}

// quorumSilence is how long ago the leader described by ci last heard
// from enough followers to make a quorum with itself.
func quorumSilence(ci *jetstream.ClusterInfo, stream string) (time.Duration, error) {
	if ci == nil || ci.Leader == "" {
		return 0, fmt.Errorf("nats: quorum: stream %s has no leader: %w", stream, gateway.ErrUnavailable)
	}
	var silences []time.Duration
	for _, p := range ci.Replicas {
		// A peer never heard from reports neither current nor a silence.
		if p == nil || p.Offline || (!p.Current && p.Active <= 0) {
			continue
		}
		silences = append(silences, p.Active)
	}
	need := (len(ci.Replicas) + 1) / 2 // followers that make a majority with the leader
	if len(silences) < need {
		return 0, fmt.Errorf("nats: quorum: the leader %s of stream %s hears from %d of the %d followers it needs: %w",
			ci.Leader, stream, len(silences), need, gateway.ErrUnavailable)
	}
	if need == 0 {
		return 0, nil
	}
	slices.Sort(silences)
	return silences[need-1], nil
}
