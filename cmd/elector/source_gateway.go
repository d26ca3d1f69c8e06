package main

import (
	"context"

	"github.com/electorhq/elector/client"
)

// gatewaySource is a client.Candidacy seen as a source: the candidacy
// campaigns, heartbeats, obeys the step-down rule and learns of its
// leadership from the event stream; the source passes its standings on.
type gatewaySource struct {
	cand *client.Candidacy
}

// Run runs the candidacy and passes its standings on until ctx ends or the
// candidacy resigned. A standing the reconciler has not taken yet is
// replaced by the next, as the candidacy's own channel does: the
// reconciler acts on the latest.
func (s *gatewaySource) Run(ctx context.Context, out chan observation) error {
	errc := make(chan error, 1)
	go func() { errc <- s.cand.Run(ctx) }()
	for st := range s.cand.States() {
		offer(out, observation{leading: st.Leading, term: st.Term, leader: st.Leader, reason: st.Reason})
	}
	return <-errc
}

// Fail reports the error to the gateway (which hands leadership over) and
// starts the error timeout.
func (s *gatewaySource) Fail(ctx context.Context, reason string) error {
	return s.cand.ReportError(ctx, reason)
}

// Handover hands the leadership over to the target of a pending transfer.
func (s *gatewaySource) Handover(ctx context.Context) error { return s.cand.Handover(ctx) }

// Resign resigns the candidacy, so the next candidate leads at once.
func (s *gatewaySource) Resign(ctx context.Context) error { return s.cand.Resign(ctx) }
