package gateway

import (
	"context"
	"log/slog"
	"path"
	"reflect"
	"time"
)

// Transfer asks the leader of election to hand over to follower to. With
// token "" the caller is an operator the API authorised; otherwise token
// must be the leader's candidate token. The leader learns of it from its
// next heartbeat (refused with a *TransferPendingError) and from the
// leader.transfer event; the target leads with the next term once the
// leader hands over, resigns, errs or expires (see Record.Transfer for why
// that never makes two leaders). Errors: ErrInvalid, ErrElectionNotFound,
// ErrNoLeader, ErrNotLeader, ErrNotFollower, ErrTransferPending,
// ErrNotSupported (an *UnsupportedError), ErrUnavailable.
func (g *Gateway) Transfer(ctx context.Context, election, to, token string) (Election, error) {
	if err := ValidateElectionName(election); err != nil {
		return Election{}, err
	}
	if !validName(to, 128, true, "._:-") {
		return Election{}, invalid("to", "%q is not a valid candidate id: name a follower of the election", clip(to))
	}
	t, err := g.transferer("leadership transfer")
	if err != nil {
		return Election{}, err
	}
	hash := ""
	if token != "" {
		hash = HashToken(token)
	}
	start := time.Now()
	e, err := t.Transfer(ctx, election, to, hash)
	g.observe("transfer", start, err)
	if err != nil {
		return Election{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "leadership transfer requested",
		slog.String("election", election), slog.String("candidate", to), slog.Bool("by_leader", token != ""))
	return e, nil
}

// Handover ends the leadership of candidate id in favour of the pending
// transfer's target, which leads at once with the next term; id stays in
// line as a follower. The caller must have stopped acting as leader first.
// Errors: as Heartbeat, and ErrNoTransfer, ErrNotLeader, ErrNotSupported.
func (g *Gateway) Handover(ctx context.Context, election, id, token string) (Status, error) {
	if err := g.checkCandidate(election, id, token); err != nil {
		return Status{}, err
	}
	t, err := g.transferer("leadership transfer")
	if err != nil {
		return Status{}, err
	}
	start := time.Now()
	st, err := t.Handover(ctx, election, id, HashToken(token))
	g.observe("handover", start, err)
	if err != nil {
		return Status{}, err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "leader handed over",
		slog.String("election", election), slog.String("candidate", id), slog.Uint64("term", st.Term))
	return st, nil
}

// transferer returns the backend as a Transferer, or an *UnsupportedError
// naming the backend and ability.
func (g *Gateway) transferer(ability string) (Transferer, error) {
	if t, ok := g.b.(Transferer); ok {
		return t, nil
	}
	return nil, &UnsupportedError{Backend: backendName(g.b), Ability: ability}
}

// backendName is the name of the package that implements b ("nats").
func backendName(b Backend) string {
	t := reflect.TypeOf(b)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := t.PkgPath(); p != "" {
		return path.Base(p)
	}
	return t.String()
}
