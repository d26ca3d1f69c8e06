package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/electorhq/elector/client"
)

// candidate is one steady candidate, owned by one heartbeat loop.
type candidate struct {
	index    int
	election string
	gw       int           // index of the gateway it talks to
	gen      int           // bumped when a campaign finds the id taken by a candidacy we hold no token of
	phase    time.Duration // offset of its heartbeats within each interval
	token    string        // "" while it does not campaign
	leader   bool          // what its last answer said
	orphans  int           // candidacies left to expire (see gen)
}

// id is the candidate's id in its election.
func (c *candidate) id() string {
	if c.gen == 0 {
		return fmt.Sprintf("c%06d", c.index)
	}
	return fmt.Sprintf("c%06d-%d", c.index, c.gen)
}

// heartbeatLoop serves the steady candidates of loop w: candidates w,
// w+Connections, …, each at its own phase of the heartbeat interval
// (TTL/3), so that the load is spread evenly over time. Its first round
// campaigns them. A loop holds one request at a time, so a gateway slower
// than the schedule shows as schedule lag (and, past the TTL, as
// candidates that expire and campaign again), never as an unbounded number
// of requests in flight. It returns its candidates when ctx ends; Run
// resigns them once every loop has stopped.
func (l *Load) heartbeatLoop(ctx context.Context, w int, start time.Time) []*candidate {
	cfg := l.cfg
	interval := cfg.TTL / 3
	var mine []*candidate
	for i := w; i < cfg.Candidates; i += cfg.Connections {
		mine = append(mine, &candidate{
			index:    i,
			election: l.ElectionName(i % cfg.Elections),
			gw:       i % len(l.clients),
			phase:    time.Duration(int64(interval) * int64(i) / int64(cfg.Candidates)),
		})
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
run:
	for r := time.Duration(0); ; r++ {
		for _, c := range mine {
			due := start.Add(c.phase + r*interval)
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					timer.Stop()
					break run
				case <-timer.C:
				}
			} else if ctx.Err() != nil {
				break run
			}
			if l.isPaused(c.index) {
				continue // a stopped process sends nothing
			}
			l.stats.ok(ScheduleLag, time.Since(due))
			l.beat(c)
		}
	}
	return mine
}

// beat campaigns c if it holds no candidacy, else heartbeats it; a
// heartbeat that finds the candidacy gone campaigns again at once.
func (l *Load) beat(c *candidate) {
	if c.token != "" {
		op := l.call(context.Background(), c, Heartbeat, func(ctx context.Context, cl *client.Client, op *Op) {
			op.Status, op.Err = cl.Heartbeat(ctx, c.election, op.Candidate, c.token)
		})
		l.heard(c, op)
		if !errors.Is(op.Err, client.ErrCandidateNotFound) {
			return
		}
		// The candidacy is gone: campaign again from the candidate's own
		// gateway, as a process started afresh would.
		c.token = ""
		c.gw = c.index % len(l.clients)
	}
	var token string
	op := l.call(context.Background(), c, Campaign, func(ctx context.Context, cl *client.Client, op *Op) {
		op.Status, token, op.Err = cl.Campaign(ctx, c.election, client.CampaignRequest{ID: op.Candidate, TTL: l.cfg.TTL})
	})
	l.heard(c, op)
	switch {
	case op.Err == nil:
		c.token = token
	case errors.Is(op.Err, client.ErrCandidateExists):
		// An earlier campaign of this id succeeded without our hearing
		// the answer: leave that candidacy to expire, campaign as another.
		c.gen++
		c.orphans++
	}
}

// call sends one request of c, bounded by Config.Timeout, to c's gateway
// and, with Config.Failover, as client.Candidacy does: while it fails in
// transport or with a 5xx, to the next gateways in turn, the one that
// answered being c's from then on; when the time runs out on one, c's
// next request starts with the gateway after it. Every attempt is
// recorded as an operation; call returns the last.
func (l *Load) call(parent context.Context, c *candidate, kind Kind, f func(context.Context, *client.Client, *Op)) Op {
	ctx, cancel := context.WithTimeout(parent, l.cfg.Timeout)
	defer cancel()
	n := 1
	if l.cfg.Failover {
		n = len(l.clients)
	}
	var op Op
	for i := range n {
		g := (c.gw + i) % len(l.clients)
		op = Op{Kind: kind, Gateway: g, Election: c.election, Index: c.index, Candidate: c.id(), Start: time.Now()}
		f(ctx, l.clients[g], &op)
		op.End = time.Now()
		l.record(op)
		switch {
		case op.Err == nil || !failsOver(op.Err):
			c.gw = g
			return op
		case ctx.Err() != nil:
			if n > 1 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				c.gw = (g + 1) % len(l.clients)
			}
			return op
		}
	}
	return op
}

// failsOver reports whether another gateway may answer where one failed
// with err, by client.Candidacy's rule: a transport error or a 5xx.
func failsOver(err error) bool {
	var p *client.Problem
	return !errors.As(err, &p) || p.Status >= 500
}

// heard updates the count of leaders from c's last answer.
func (l *Load) heard(c *candidate, op Op) {
	leader := c.leader
	switch {
	case op.Err == nil:
		leader = op.Status.State == client.StateLeader
	case errors.Is(op.Err, client.ErrCandidateNotFound):
		leader = false
	}
	if leader != c.leader {
		c.leader = leader
		if leader {
			l.leaders.Add(1)
		} else {
			l.leaders.Add(-1)
		}
	}
}

// resignAll resigns the candidates that hold a candidacy, within
// Config.ResignWait in all. A resignation refused for now (rate-limited,
// backend unavailable, no answer) is tried again after a back-off. A
// candidacy already gone counts as resigned; an orphan (see beat) as
// unresigned.
func (l *Load) resignAll(cs []*candidate) (resigned, unresigned int) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.ResignWait)
	defer cancel()
	for _, c := range cs {
		unresigned += c.orphans
		if c.token == "" {
			continue
		}
		if l.resign(ctx, c) {
			resigned++
			c.token = ""
			if c.leader {
				c.leader = false
				l.leaders.Add(-1)
			}
		} else {
			unresigned++
		}
	}
	return resigned, unresigned
}

// resign resigns c, trying again while the refusal is temporary and ctx
// lasts, and reports whether the candidacy is gone.
func (l *Load) resign(ctx context.Context, c *candidate) bool {
	backoff := 50 * time.Millisecond
	for {
		op := l.call(ctx, c, Resign, func(rctx context.Context, cl *client.Client, op *Op) {
			op.Err = cl.Resign(rctx, c.election, op.Candidate, c.token)
		})
		var p *client.Problem
		switch {
		case op.Err == nil || errors.Is(op.Err, client.ErrCandidateNotFound):
			return true
		case errors.As(op.Err, &p) && !errors.Is(p, client.ErrRateLimited) && !errors.Is(p, client.ErrUnavailable):
			return false // refused for good: a token mismatch, say
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
