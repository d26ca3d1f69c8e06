package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// repeat says how the attempts of a request to etcd may be repeated with
// other members.
type repeat int

const (
	// idempotent requests (reads, keep-alives, puts and deletes of a key,
	// lease grants and revocations) may be sent again to another member
	// while an attempt waits: the first answer wins, and the attempts
	// still waiting are cancelled. A cancelled put or delete that etcd
	// applies late does what any request that timed out may do (every
	// write elector makes that could be hurt by it is guarded); a lease
	// granted by a cancelled attempt holds no key and expires.
	idempotent repeat = iota
	// guarded requests are transactions that write: etcd applies each
	// attempt at most once, and only when its comparisons hold. Every
	// transaction elector commits compares a key it writes (its create or
	// mod revision), so once one attempt has applied, any other fails its
	// comparisons: at most one attempt of a request ever applies.
	// (DeleteElection's only deletes keys: applying it twice is applying it
	// once.) A new writing transaction must keep to this. An
	// answer that says the transaction applied settles the request. One
	// that says it did not settles it only when no other attempt may have
	// applied (none is still waiting, none ended without an answer);
	// otherwise the outcome is unknown and the request fails as a timeout
	// would (gateway.ErrUnavailable), which every writer already handles.
	// A batch of writes (batch.go) compares nothing itself, but each of
	// its nested transactions does, so it too applies each write at most
	// once; it counts as applied when all of them did.
	guarded
)

// retryPause spaces out rounds of attempts when every member has failed.
func (p *members) retryPause() time.Duration { return max(p.timeout/3, 10*time.Millisecond) }

// attempt is one try of a request with one member.
type attempt struct {
	m      *member
	term   uint64 // the member's raft term when the attempt began, 0 if unknown
	cancel context.CancelFunc
	// moved is set when the member went down or changed leader while the
	// attempt waited, and another attempt began; dropped when the attempt
	// was cancelled then (idempotent requests), its result unused.
	moved, dropped bool
}

type result[T any] struct {
	a   *attempt
	v   T
	err error
}

// do sends a request to etcd with f, one attempt per member at a time.
// It starts with the member pick gives and starts another attempt with
// another member when an attempt fails without an answer from etcd (see
// retriable), when the member of an attempt goes down or changes its raft
// term (a new leader: a request forwarded to the old one may be lost), and,
// for idempotent requests, each MemberTimeout an attempt waits. For
// guarded requests applied says whether an answer applied (see guarded).
// It returns the answer that settles the request, etcd's error refusing
// it, or, when ctx ends first, an error wrapping ctx's. Every attempt has
// ended when do returns.
//
// The first attempt runs on the caller's goroutine, whose stack has grown
// already, while another goroutine (with a shallow stack) starts the
// others as above and decides: a new goroutine for every request would
// grow its stack again through gRPC's calls (4% of a gateway's CPU under
// campaigns).
func do[T any](ctx context.Context, p *members, r repeat, applied func(T) bool, f func(context.Context, *clientv3.Client) (T, error)) (T, error) {
	var zero T
	cctx, cancelAll := context.WithCancel(ctx)
	var wg sync.WaitGroup
	maxAttempts := 16 * len(p.list)
	results := make(chan result[T])
	var (
		pending []*attempt
		failed  []*member // members whose attempt failed this round
	)
	busy := func(m *member) bool {
		return slices.ContainsFunc(pending, func(a *attempt) bool { return a.m == m && !a.dropped })
	}
	launched := 0
	var first func() // the first attempt, if launched before deciding: the caller runs it
	deciding := false
	launch := func() bool {
		if launched == maxAttempts {
			return false
		}
		m := p.pick(func(m *member) bool { return slices.Contains(failed, m) || busy(m) })
		if m == nil {
			return false
		}
		_, term := m.state()
		actx, cancel := context.WithCancel(cctx)
		a := &attempt{m: m, term: term, cancel: cancel}
		pending = append(pending, a)
		launched++
		cli := m.cli.Load()
		run := func() {
			v, err := f(actx, cli)
			cancel()
			select {
			case results <- result[T]{a, v, err}:
			case <-cctx.Done(): // decided
			}
		}
		if !deciding {
			first = run
		} else {
			wg.Go(run)
		}
		return true
	}
	// decide waits for the attempts' results, starts new attempts when
	// due, and returns what settles the request, once every attempt it
	// started itself has ended.
	decide := func() (T, error) {
		defer wg.Wait()
		defer cancelAll()
		var (
			hedge   <-chan time.Time
			retry   <-chan time.Time
			unknown bool // a guarded attempt ended without an answer
			lastErr error
			refused *T // a guarded answer that did not apply
		)
		if r == idempotent {
			t := time.NewTicker(p.timeout)
			defer t.Stop()
			hedge = t.C
		}
		for {
			if refused == nil && retry == nil && !live(pending) && !launch() {
				failed = failed[:0]
				retry = time.After(p.retryPause())
			}
			select {
			case <-ctx.Done():
				if r == guarded && (unknown || len(pending) > 0) {
					return zero, fmt.Errorf("etcd: no member answered in time, the transaction's outcome is unknown: %w", ctx.Err())
				}
				if lastErr != nil {
					return zero, fmt.Errorf("%w (last member's error: %v)", ctx.Err(), lastErr)
				}
				return zero, ctx.Err()
			case <-retry:
				retry = nil
			case <-hedge:
				if refused == nil {
					launch()
				}
			case <-p.changes():
				for _, a := range pending {
					up, term := a.m.state()
					if a.moved || (up && (a.term == 0 || term == a.term)) {
						continue
					}
					a.moved = true
					if r == idempotent {
						a.dropped = true
						a.cancel()
					}
					if refused == nil {
						launch()
					}
				}
			case res := <-results:
				pending = slices.DeleteFunc(pending, func(a *attempt) bool { return a == res.a })
				if res.a.dropped {
					continue
				}
				switch {
				case res.err == nil && (r == idempotent || applied(res.v)):
					return res.v, nil
				case res.err == nil:
					refused = &res.v
				case (!retriable(res.err) || ctx.Err() != nil) && r == guarded && (unknown || len(pending) > 0):
					// An earlier or other attempt may have applied: this
					// one's refusal does not say the request did not.
					return zero, fmt.Errorf("etcd: an attempt ended (%v) after another may have applied, the transaction's outcome is unknown: %w", res.err, errors.Join(errOutcomeUnknown, ctx.Err()))
				case !retriable(res.err) || ctx.Err() != nil:
					return zero, res.err
				default:
					lastErr = res.err
					failed = append(failed, res.a.m)
					unknown = unknown || r == guarded
				}
			}
			if refused != nil && !waiting(pending) {
				if unknown || len(pending) > 0 {
					return zero, fmt.Errorf("etcd: a member stopped answering, the transaction's outcome is unknown: %w", errOutcomeUnknown)
				}
				return *refused, nil
			}
		}
	}
	launch()
	deciding = true
	if first == nil { // no member to try now
		return decide()
	}
	decided := make(chan result[T], 1)
	go func() {
		v, err := decide()
		decided <- result[T]{v: v, err: err}
	}()
	first()
	d := <-decided
	return d.v, d.err
}

// errOutcomeUnknown is wrapped when a guarded request may or may not have
// applied; translate makes it gateway.ErrUnavailable.
var errOutcomeUnknown = errors.New("an attempt may have applied")

// live reports whether an attempt of pending has not been dropped.
func live(pending []*attempt) bool {
	return slices.ContainsFunc(pending, func(a *attempt) bool { return !a.dropped })
}

// waiting reports whether an attempt of pending may still bring an answer
// worth waiting for: its member is up and has kept its raft term.
func waiting(pending []*attempt) bool {
	return slices.ContainsFunc(pending, func(a *attempt) bool { return !a.moved })
}

// retriable reports whether err, which one attempt of a request to one
// member ended with, says nothing about the request itself: the member or
// the way to it could not serve it (no connection, no leader, a timeout,
// too many requests, the attempt cancelled), so another member may. An
// error of etcd about the request (a compacted revision, a lease not
// found, permission denied, a request too large) is its answer.
func retriable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted, codes.Aborted, codes.Unknown:
		return true
	}
	return false
}
