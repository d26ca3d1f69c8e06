package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrContended is an ErrUnavailable: a compare-and-set write lost to other
// writes of the same election on every attempt its RetryPolicy allows.
// The refused write was not made (a request of several writes, such as a
// handover moving candidates step by step, may have made its earlier
// ones, each whole); the request may be sent again as it was.
var ErrContended = fmt.Errorf("gateway: election contended: %w", ErrUnavailable)

// RetryPolicy says how often, and how far apart, a backend tries a
// compare-and-set write of an election again after another write of that
// election got there first (its comparison failed). Every backend uses
// Conflicts; a policy is a value so that tests can name the bound.
type RetryPolicy struct {
	// Attempts is how many times the write is tried in all, the first
	// included.
	Attempts int
	// First is the mean pause before the third attempt (the second goes at
	// once: the first commonly started from a cache one write behind);
	// each later one doubles it, up to Max.
	First, Max time.Duration
}

// Conflicts is the policy of every compare-and-set write of an election:
// 16 attempts, the second at once, then pausing 1 ms, 2 ms, … up to
// 100 ms (each jittered) before each.
//
// A refused compare-and-set means that another write of the same election
// was stored between this one's read and its write: somebody made
// progress, so retrying is safe and, in the common case, brief. The bound
// is for the case that is not: losing 16 times in a row means 16 other
// writes of this one election landed within this request, over about a
// second of pauses (1+2+4+…+64 ms, then 100 ms seven times). Heartbeats
// extend a lease or a liveness message and write the election only for a
// new leader's promise (etcd), so only bursts of campaigns, resignations
// and error reports at one election get there: the conformance storm, a
// hundred candidates each writing one election every 20 ms or so through
// NATS, met the bound on 8% to 16% of its answers on a loaded two-core
// machine, and etcd's on none. (Since the NATS backend combines the writes
// of one election that a replica has waiting into one, that storm meets it
// on none of its answers either: only replicas contend.) Past it, retrying longer only
// holds the request open while it keeps losing and adds to the burst.
// The writer then answers ErrContended, which the API maps to a 503 with
// Retry-After, so the caller tries again later, as it does after any
// 503, instead of waiting for its deadline without an answer. A bound
// never makes two leaders: a write that gives up is one the backend
// refused.
var Conflicts = RetryPolicy{Attempts: 16, First: time.Millisecond, Max: 100 * time.Millisecond}

// Pause waits before attempt i (counted from 0; attempts 0 and 1 do not
// wait) for First·2^(i-2), at most Max, jittered by ±50%. It returns an
// error wrapping ErrUnavailable and ctx's error when ctx ends first.
func (p RetryPolicy) Pause(ctx context.Context, i int) error {
	if i <= 1 {
		return nil
	}
	d := p.First << min(i-2, 30)
	if d <= 0 || d > p.Max {
		d = p.Max
	}
	t := time.NewTimer(d/2 + rand.N(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	case <-t.C:
		return nil
	}
}

// Exhausted is the error of a write that lost on every attempt: it wraps
// ErrContended and says how often it tried.
func (p RetryPolicy) Exhausted() error {
	return fmt.Errorf("the election changed under each of %d attempts: %w", p.Attempts, ErrContended)
}

// Try returns nil when attempt i (counted from 0) may go ahead, once its
// Pause has passed; Exhausted's error once i reaches Attempts; and Pause's
// error when ctx ends first. A retry loop calls it at the top of each
// attempt:
//
//	for i := 0; ; i++ {
//		if err := gateway.Conflicts.Try(ctx, i); err != nil {
//			return err
//		}
//		… read, compute, compare-and-set; continue when refused …
//	}
func (p RetryPolicy) Try(ctx context.Context, i int) error {
	if i >= p.Attempts {
		return p.Exhausted()
	}
	return p.Pause(ctx, i)
}
