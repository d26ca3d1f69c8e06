package bench

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/client"
)

// readLoop reads the leader of the steady elections in turn, one request
// at a time, until ctx ends. An election without a leader, or not created
// yet by its first campaign, is an answer like any other, not an error.
func (l *Load) readLoop(ctx context.Context, next *atomic.Int64) {
	for ctx.Err() == nil {
		i := int(next.Add(1) - 1)
		g := i % len(l.clients)
		election := l.ElectionName(i % l.cfg.Elections)
		rctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		op := Op{Kind: LeaderRead, Gateway: g, Election: election, Index: -1, Start: time.Now()}
		op.Leader, op.Err = l.clients[g].Leader(rctx, election)
		op.End = time.Now()
		cancel()
		if errors.Is(op.Err, client.ErrNoLeader) || errors.Is(op.Err, client.ErrElectionNotFound) {
			op.Err = nil
		}
		l.record(op)
	}
}

// burstLoop campaigns into fresh elections, and resigns each candidate at
// once, until Config.Burst campaigns have been made or ctx ends.
func (l *Load) burstLoop(ctx context.Context, next *atomic.Int64) {
	for ctx.Err() == nil {
		i := int(next.Add(1) - 1)
		if i >= l.cfg.Burst {
			return
		}
		g := i % len(l.clients)
		cl := l.clients[g]
		election := l.burstElection(i)
		rctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		op := Op{Kind: BurstCampaign, Gateway: g, Election: election, Index: -1, Candidate: "b", Start: time.Now()}
		var token string
		op.Status, token, op.Err = cl.Campaign(rctx, election, client.CampaignRequest{ID: op.Candidate, TTL: l.cfg.TTL})
		op.End = time.Now()
		cancel()
		l.record(op)
		if op.Err != nil {
			continue
		}
		rctx, cancel = context.WithTimeout(context.Background(), l.cfg.Timeout)
		op = Op{Kind: BurstResign, Gateway: g, Election: election, Index: -1, Candidate: "b", Start: time.Now()}
		op.Err = cl.Resign(rctx, election, op.Candidate, token)
		op.End = time.Now()
		cancel()
		l.record(op)
	}
}

// subscribe measures the events of this run that subscriber i receives,
// until the channel closes.
func (l *Load) subscribe(i int, events <-chan client.Event) {
	own := l.cfg.Prefix + "-"
	for ev := range events {
		now := time.Now()
		if l.cfg.ObserveEvent != nil {
			l.cfg.ObserveEvent(i, ev, now)
		}
		if ev.Type == client.EventReset || !strings.HasPrefix(ev.Data.Election, own) {
			continue
		}
		l.stats.ok(Event, now.Sub(ev.Timestamp))
	}
}
