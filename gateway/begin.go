package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// FailBegin is the reconciliation of a begin handler that did not
// acknowledge a leadership in time (package webhooks calls it when a
// candidate's own leader.begin webhook gets no 2xx within its deadline): if
// candidate id still leads election in term (holds it, with more than one
// holder), it is put in error, so that
// it gives up its leadership, the next in line takes its slot once the failed
// leader's promise has lapsed (see Record.FailLeader: the leader may not
// know of the verdict, and may act until a TTL after its last heartbeat
// answered "leader"), and it rejoins after the election's error cooldown.
// tokenHash is the candidate's, kept from its campaign. It reports whether
// it acted; a candidate that no longer leads that term is left alone.
//
// The check, the report and the hold are one atomic step of the backend
// (LeaderFailer): a verdict on term never ends a later leadership of the
// same candidate.
//
// Errors: ErrTokenMismatch, ErrUnavailable.
func (g *Gateway) FailBegin(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (bool, error) {
	if len(reason) > MaxReasonBytes {
		reason = reason[:MaxReasonBytes]
	}
	reason = strings.ToValidUTF8(reason, "") // a cut may split a character; ReportError requires valid text
	_, err := g.b.FailLeader(ctx, election, id, tokenHash, term, reason)
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrCandidateNotFound), errors.Is(err, ErrElectionNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("gateway: fail begin of %q in %q: %w", id, election, err)
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "begin handler failed: leader put in error",
		slog.String("election", election), slog.String("candidate", id), slog.Uint64("term", term), slog.String("reason", reason))
	return true, nil
}
