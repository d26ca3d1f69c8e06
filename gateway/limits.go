package gateway

import (
	"context"
	"errors"
	"fmt"
)

// Names of the limits a Gateway enforces, as LimitError.Limit reports them.
const (
	LimitCandidatesPerElection = "candidates_per_election"
	LimitElections             = "elections"
)

// LimitError is ErrLimit naming the limit that was reached and its value.
type LimitError struct {
	Limit string // LimitCandidatesPerElection, LimitElections, or another component's name
	Max   int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("gateway: limit %s (%d) reached", e.Limit, e.Max)
}

// Is makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// checkCandidateLimit refuses a campaign into an election that already has
// MaxCandidates candidates, and a campaign that would create an election
// beyond MaxElections.
//
// Both checks read a snapshot before the backend's write, so they are
// best-effort across replicas and concurrent requests: a race can overshoot
// a cap by the number of campaigns in flight. They never take part in who
// leads; the backend's compare-and-set alone decides that, so an overshoot
// costs capacity, never safety.
//
// With a CandidateCounter backend a campaign the replica's own counts let
// through needs nothing more (those counts may lag, as the check may
// anyway); a refusal is only ever decided on a linearizable read of the
// election, so a stale count never refuses a campaign the limits allow.
func (g *Gateway) checkCandidateLimit(ctx context.Context, election string) error {
	max := g.cfg.MaxCandidates
	if max <= 0 && g.cfg.MaxElections <= 0 {
		return nil
	}
	if c, ok := g.b.(CandidateCounter); ok {
		n, err := c.CountCandidates(ctx, election)
		switch {
		case errors.Is(err, ErrElectionNotFound):
			if g.checkElectionLimit(ctx) == nil {
				return nil
			}
		case err == nil && (max <= 0 || n < max):
			return nil
		}
		// Over a limit, or not known: decide on a linearizable read.
	}
	e, err := g.b.Election(linearizable(ctx), election)
	switch {
	case errors.Is(err, ErrElectionNotFound):
		return g.checkElectionLimit(ctx)
	case err != nil:
		return err
	case max > 0 && len(e.Candidates) >= max:
		return fmt.Errorf("gateway: election %q has %d candidates: %w", election, len(e.Candidates),
			&LimitError{Limit: LimitCandidatesPerElection, Max: max})
	}
	return nil
}

// checkElectionLimit refuses to create an election beyond MaxElections. It
// is best-effort in the same way as checkCandidateLimit.
func (g *Gateway) checkElectionLimit(ctx context.Context) error {
	max := g.cfg.MaxElections
	if max <= 0 {
		return nil
	}
	n, err := g.countElections(ctx)
	if err != nil {
		return err
	}
	if n >= max {
		return fmt.Errorf("gateway: %d elections exist: %w", n, &LimitError{Limit: LimitElections, Max: max})
	}
	return nil
}

// countElections counts the elections without building them
// (ElectionCounter).
func (g *Gateway) countElections(ctx context.Context) (int, error) {
	return g.b.CountElections(ctx)
}
