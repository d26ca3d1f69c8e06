package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// idleSweeper deletes elections that have had no candidate and no event
// for Config.IdleElectionExpiry. Each replica runs one; they race
// harmlessly, because the backend deletes only an election that is empty
// at that instant (ElectionDeleter), and a campaign after a deletion
// creates the election again with terms above the deleted one's.
//
// Idleness is measured by this replica: from the last event it saw of the
// election, or from when it first saw the election. A replica that
// restarts starts counting again, which only delays a deletion.
type idleSweeper struct {
	g    *Gateway
	idle time.Duration
	seen map[string]time.Time // election → last activity this replica knows of
}

// runIdleSweeper deletes idle elections until ctx ends.
func (g *Gateway) runIdleSweeper(ctx context.Context, idle time.Duration) {
	s := &idleSweeper{g: g, idle: idle, seen: map[string]time.Time{}}
	events, err := g.Watch(ctx, "", "")
	for err != nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		events, err = g.Watch(ctx, "", "")
	}
	tick := time.NewTicker(max(idle/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				// Cut off or the watch broke: activity may have been
				// missed, so count every election as active now.
				s.touchAll(time.Now())
				if events, err = g.Watch(ctx, "", ""); err != nil {
					events = nil // retried at the next tick
				}
				continue
			}
			s.seen[ev.Election] = time.Now()
		case <-tick.C:
			if events == nil {
				if events, err = g.Watch(ctx, "", ""); err != nil {
					events = nil
				}
				s.touchAll(time.Now())
				continue
			}
			s.sweep(ctx)
		}
	}
}

// touchAll counts every known election as active at now.
func (s *idleSweeper) touchAll(now time.Time) {
	for name := range s.seen {
		s.seen[name] = now
	}
}

// sweep deletes the empty elections idle for longer than s.idle.
func (s *idleSweeper) sweep(ctx context.Context) {
	es, _, err := s.g.Elections(ctx)
	if err != nil {
		return // the next tick tries again
	}
	now := time.Now()
	live := make(map[string]bool, len(es))
	for _, e := range es {
		live[e.Name] = true
		last, ok := s.seen[e.Name]
		if !ok {
			s.seen[e.Name] = now
			continue
		}
		if len(e.Candidates) > 0 || now.Sub(last) < s.idle {
			continue
		}
		err := s.g.DeleteElection(ctx, e.Name)
		switch {
		case err == nil:
			s.g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "idle election deleted", slog.String("election", e.Name), slog.Duration("idle", now.Sub(last)))
		case errors.Is(err, ErrElectionNotEmpty), errors.Is(err, ErrElectionNotFound):
			// A campaign or another replica got there first.
		default:
			s.g.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "deleting an idle election", slog.String("election", e.Name), slog.Any("err", err))
		}
	}
	for name := range s.seen {
		if !live[name] {
			delete(s.seen, name)
		}
	}
}
