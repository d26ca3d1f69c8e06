package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/electorhq/elector/internal/ctxwait"
)

// logTransitions logs every change of leadership of every election, as
// this replica's hub receives it, until ctx ends: a leadership beginning
// or ending (with its reason: resigned, expired, error, transferred,
// preempted), a leader's error, and transfers asked for and cancelled.
// Each replica logs what it sees, whichever replica caused it; a gap in
// the stream (the hub fell behind the backend's history) is logged as
// such and following resumes from the present. It starts where Begin
// noted the backend's head, if it did, else from the present.
func (g *Gateway) logTransitions(ctx context.Context) {
	log := g.cfg.Logger
	cursor := g.origin
	retry := 50 * time.Millisecond
	for ctx.Err() == nil {
		ch, err := g.follow(ctx, cursor)
		switch {
		case errors.Is(err, ErrCursorExpired):
			log.LogAttrs(ctx, slog.LevelWarn, "gateway: leadership changes were missed while this replica fell behind; logging them again from now")
			cursor = ""
			continue
		case err != nil:
			if !ctxwait.Sleep(ctx, retry) {
				return
			}
			retry = min(2*retry, 2*time.Second)
			continue
		}
		got := false
		for ev := range ch {
			logTransition(ctx, log, ev)
			cursor, got = ev.ID, true
		}
		if got {
			retry = 50 * time.Millisecond
		} else if !ctxwait.Sleep(ctx, retry) { // a watch that ends at once must not spin
			return
		}
	}
}

// follow is Watch of every election after cursor for the Gateway's own
// use: from the hub while it runs, else from the backend.
func (g *Gateway) follow(ctx context.Context, cursor string) (<-chan Event, error) {
	if ch, ok, err := g.hub.subscribe(ctx, "", cursor); ok {
		return ch, err
	}
	return g.b.Watch(ctx, "", cursor)
}

// logTransition logs ev if it changes leadership.
func logTransition(ctx context.Context, log *slog.Logger, ev Event) {
	attrs := []slog.Attr{slog.String("election", ev.Election)}
	if ev.Candidate != nil {
		attrs = append(attrs, slog.String("candidate", ev.Candidate.ID))
	}
	attrs = append(attrs, slog.Uint64("term", ev.Term))
	level, msg := slog.LevelInfo, ""
	switch ev.Type {
	case EventLeaderBegin:
		msg = "leadership begins"
		if ev.Previous != nil {
			attrs = append(attrs, slog.String("previous", ev.Previous.ID), slog.Uint64("previous_term", ev.Previous.Term))
		}
		if ev.Reason != "" {
			attrs = append(attrs, slog.String("after", ev.Reason)) // how the previous leadership ended
		}
	case EventLeaderEnd:
		msg = "leadership ends"
		attrs = append(attrs, slog.String("reason", ev.Reason))
	case EventLeaderError:
		level, msg = slog.LevelWarn, "leader reported an error"
		attrs = append(attrs, slog.String("detail", ev.Detail))
	case EventLeaderTransfer:
		msg = "leadership transfer pending"
		if ev.Previous != nil {
			attrs = append(attrs, slog.String("leader", ev.Previous.ID))
		}
		attrs = append(attrs, slog.String("reason", ev.Reason))
	case EventTransferCancelled:
		msg = "leadership transfer cancelled"
		attrs = append(attrs, slog.String("reason", ev.Reason))
	default:
		return
	}
	log.LogAttrs(ctx, level, msg, attrs...)
}
