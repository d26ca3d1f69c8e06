package gateway

import (
	"context"
	"log/slog"
	"path"
	"reflect"
)

// Transfer asks a holder of election to hand over to follower to (with
// one holder: the leader). from names the holder; "" means the holder
// whose token token is, or the one holder; with more than one holding an
// operator must name it.
// With token "" the caller is an operator the API authorised; otherwise
// token must be the holder's candidate token. The holder learns of it from
// its next heartbeat (refused with a *TransferPendingError) and from the
// leader.transfer event; the target holds with the next term once the
// holder hands over, resigns, errs or expires (see Record.Transfer for why
// that never makes more holders act than the setting). Errors: ErrInvalid,
// ErrElectionNotFound, ErrNoLeader, ErrNotLeader, ErrNotFollower,
// ErrTransferPending, ErrUnavailable.
func (g *Gateway) Transfer(ctx context.Context, election, from, to, token string) (Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Election{}, err
	}
	if !validName(to, 128, true, "._:-") {
		return Election{}, invalid("to", "%q is not a valid candidate id: name a follower of the election", clip(to))
	}
	if from != "" && !validName(from, 128, true, "._:-") {
		return Election{}, invalid("from", "%q is not a valid candidate id: name a holder of the election", clip(from))
	}
	e, err := g.b.TransferFrom(ctx, election, from, to, optionalHash(token))
	if err != nil {
		return Election{}, err
	}
	// Every replica logs the transfer itself (logTransitions); this line
	// says who asked, for debugging.
	g.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "leadership transfer requested",
		slog.String("election", election), slog.String("candidate", to), slog.Bool("by_leader", token != ""))
	return e, nil
}

// CancelTransfer drops the pending transfer of election while the holder
// it asks to hand over still holds: that holder's heartbeats count again,
// and nobody else is promoted (see Record.CancelTransfer for why that
// cannot make more holders). With token "" the caller is an operator the
// API authorised; otherwise token must be that holder's candidate token. Errors:
// ErrInvalid, ErrElectionNotFound, ErrNoTransfer, ErrNotLeader,
// ErrPreempting, ErrUnavailable.
func (g *Gateway) CancelTransfer(ctx context.Context, election, token string) (Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Election{}, err
	}
	e, err := g.b.CancelTransfer(ctx, election, optionalHash(token))
	if err != nil {
		return Election{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "leadership transfer cancellation requested",
		slog.String("election", election), slog.Bool("by_leader", token != ""))
	return e, nil
}

// Handover ends the holdership of candidate id in favour of the pending
// transfer's target, which holds at once with the next term; id stays in
// line as a follower. The caller must have stopped acting as holder first.
// Errors: as Heartbeat, and ErrNoTransfer, ErrNotLeader.
func (g *Gateway) Handover(ctx context.Context, election, id, token string) (Status, error) {
	if err := g.checkCandidate(election, id, token); err != nil {
		return Status{}, err
	}
	st, err := g.b.Handover(ctx, election, id, HashToken(token))
	if err != nil {
		return Status{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "leader handed over",
		slog.String("election", election), slog.String("candidate", id), slog.Uint64("term", st.Term))
	return st, nil
}

// optionalHash is the hash of token, or "" for an operator's call
// without one.
func optionalHash(token string) string {
	if token == "" {
		return ""
	}
	return HashToken(token)
}

// backendName is the name of the package that implements b ("nats").
// A decorator names the backend it wraps.
func backendName(b Backend) string {
	for {
		w, ok := b.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		b = w.Unwrap()
	}
	t := reflect.TypeOf(b)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := t.PkgPath(); p != "" {
		return path.Base(p)
	}
	return t.String()
}
