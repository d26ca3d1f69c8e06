package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/electorhq/elector/client"
)

// cleanupWorkers bounds the elections removed at once at the end of a run.
const cleanupWorkers = 16

// removeElections deletes the run's elections once their candidates have
// resigned (DELETE /v1/elections/{election}, which needs the admin scope
// when the gateway has API tokens), so that a run leaves nothing behind
// in the gateway's lists and its /ui. It returns how many were removed
// (or already gone) and why the others were kept, if any were: an
// election a candidate is still in (one that could not resign expires
// after its TTL) or an API token without the admin scope.
func (l *Load) removeElections(ctx context.Context, names []string) (removed int, kept string) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.ResignWait)
	defer cancel()
	var done, notEmpty, refused atomic.Int64
	var firstRefusal atomic.Pointer[string]
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(cleanupWorkers, len(names)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				rctx, rcancel := context.WithTimeout(ctx, l.cfg.Timeout)
				err := l.clients[i%len(l.clients)].DeleteElection(rctx, names[i])
				rcancel()
				switch {
				case err == nil || errors.Is(err, client.ErrElectionNotFound):
					done.Add(1)
				case problemSlug(err) == "election-not-empty":
					notEmpty.Add(1)
				default:
					if refused.Add(1) == 1 {
						msg := err.Error()
						firstRefusal.Store(&msg)
					}
					if errors.Is(err, client.ErrForbidden) || errors.Is(err, client.ErrUnauthenticated) {
						cancel() // the same answer for every election
					}
				}
			}
		})
	}
	wg.Wait()
	removed = int(done.Load())
	if left := len(names) - removed; left > 0 {
		kept = fmt.Sprintf("%d kept", left)
		if n := notEmpty.Load(); n > 0 {
			kept += fmt.Sprintf("; %d still had candidates (they expire after their TTL)", n)
		}
		if p := firstRefusal.Load(); p != nil {
			kept += "; " + *p
		}
	}
	return removed, kept
}

// runElections are the names of the elections a run used: the steady
// ones and the burst's first burstDone.
func (l *Load) runElections(burstDone int) []string {
	var names []string
	if l.cfg.Candidates > 0 {
		for i := range l.cfg.Elections {
			names = append(names, l.ElectionName(i))
		}
	}
	for i := range min(burstDone, l.cfg.Burst) {
		names = append(names, l.burstElection(i))
	}
	return names
}

// burstElection is the name of the fresh election of burst campaign i.
func (l *Load) burstElection(i int) string { return fmt.Sprintf("%s-b%d", l.cfg.Prefix, i) }

// problemSlug is the problem type slug of err, "" if it is no problem.
func problemSlug(err error) string {
	var p *client.Problem
	if errors.As(err, &p) {
		return p.Slug()
	}
	return ""
}
