package client

import (
	"context"
	"time"
)

// Observe follows the leader of election, as etcd's Election.Observe does,
// but also saying when there is none: the channel first receives the
// current leader, then every change, a Leader whose ID is "" meaning "no
// leader" (its Term is then the last leadership's). Between two leaders
// there is always a "no leader".
//
// With several holders (the election's holders setting above 1) the
// Leader is the longest-standing holder, with every holder in its
// Holders, and a change of any holder is a new value; "no leader" then
// means nobody holds.
//
// The first connection is made before Observe returns, and its error
// returned, as for Watch; after that the stream resumes by itself. The
// channel closes when ctx ends or the watch ends.
func (c *Client) Observe(ctx context.Context, election string) (<-chan Leader, error) {
	events, err := c.Watch(ctx, election, "")
	if err != nil {
		return nil, err
	}
	out := make(chan Leader)
	go func() {
		defer close(out)
		var (
			h     holderSet
			last  Leader
			first = true
		)
		for ev := range events {
			if !h.apply(ev) {
				continue
			}
			l := h.leader()
			l.Election = election
			if !first && sameLeader(l, last) {
				continue
			}
			first, last = false, l
			select {
			case out <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// holderSet is who holds an election, as its events tell: the holders in
// the order their holderships began, and the last term heard of.
type holderSet struct {
	holders []Leader
	term    uint64
	many    bool // the election has more than one slot
}

// apply updates h with ev and reports whether ev says who holds.
func (h *holderSet) apply(ev Event) bool {
	switch ev.Type {
	case EventReset:
		if ev.Snapshot == nil {
			return false
		}
		s := ev.Snapshot
		h.term, h.many = s.Term, s.Settings.Holders > 1 || len(s.Holders) > 1
		switch {
		case s.Holders != nil:
			h.holders = append([]Leader(nil), s.Holders...)
		case s.Leader != nil:
			h.holders = []Leader{*s.Leader}
		default:
			h.holders = nil
		}
	case EventLeaderBegin:
		l := Leader{Term: ev.Data.Term, Since: Time{ev.Timestamp}}
		if ev.Data.Candidate != nil {
			l.ID, l.Metadata = ev.Data.Candidate.ID, ev.Data.Candidate.Metadata
		}
		h.holders = append(h.holders, l)
		h.term = ev.Data.Term
		h.many = h.many || len(h.holders) > 1
	case EventLeaderEnd:
		for i, l := range h.holders {
			if l.Term == ev.Data.Term {
				h.holders = append(h.holders[:i:i], h.holders[i+1:]...)
				break
			}
		}
		if len(h.holders) == 0 {
			h.term = ev.Data.Term
		}
	default:
		return false
	}
	return true
}

// leader is the longest-standing holder, with every holder when the
// election has several slots, or "no leader" with the last term heard.
func (h *holderSet) leader() Leader {
	if len(h.holders) == 0 {
		return Leader{Term: h.term}
	}
	l := h.holders[0]
	l.Holders = nil
	if h.many {
		l.Holders = append([]Leader(nil), h.holders...)
	}
	return l
}

// sameLeader reports whether a and b name the same holderships.
func sameLeader(a, b Leader) bool {
	if a.ID != b.ID || a.Term != b.Term || len(a.Holders) != len(b.Holders) {
		return false
	}
	for i := range a.Holders {
		if a.Holders[i].Term != b.Holders[i].Term {
			return false
		}
	}
	return true
}

// watch follows the candidate's election through the gateway in use and
// pokes Run's loop when an event concerns this candidate, so that it
// heartbeats at once and learns from the answer: a follower that the
// gateway has just promoted begins within a round trip, not at its next
// heartbeat. The stream only hastens heartbeats; what the candidate does
// is decided by their answers alone, so a stale or forged event cannot
// make it lead.
func (c *Candidacy) watch(ctx context.Context, pokes chan<- struct{}) {
	failures := 0
	for {
		cl := c.clients[c.gw.Load()]
		sctx, cancel := context.WithCancel(ctx)
		// The stream moves when the gateway in use changes, also while it
		// is still connecting: a gateway that hangs would hold it forever.
		moved, moverDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(moverDone)
			select {
			case <-c.gwChanged:
				close(moved)
				cancel()
			case <-sctx.Done():
			}
		}()
		events, err := cl.Watch(sctx, c.cfg.Election, "")
		if err == nil {
			failures = 0
			c.follow(sctx, events, pokes)
		} else if sctx.Err() == nil {
			failures++
		}
		cancel()
		<-moverDone
		if events != nil {
			for range events { // the watch's goroutine ends with sctx
			}
		}
		select {
		case <-moved:
			continue // to the new gateway at once
		default:
		}
		if failures == 0 {
			failures = 1 // a stream that ended: wait a little before the next
		}
		t := time.NewTimer(retryDelay(c.retryBase(), MaxRetryDelay, failures, 0, c.jitter()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.gwChanged:
			t.Stop()
		case <-t.C:
		}
	}
}

// follow reads events until the stream ends or ctx ends (also when the
// gateway in use changes: see watch).
func (c *Candidacy) follow(ctx context.Context, events <-chan Event, pokes chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if c.concerns(ev) {
				select {
				case pokes <- struct{}{}:
				default:
				}
			}
		}
	}
}

// concerns reports whether ev may change this candidate's standing.
func (c *Candidacy) concerns(ev Event) bool {
	switch ev.Type {
	case EventReset:
		if ev.Snapshot == nil {
			return false
		}
		for _, h := range ev.Snapshot.Holders {
			if h.ID == c.cfg.ID {
				return true
			}
		}
		return ev.Snapshot.Leader != nil && ev.Snapshot.Leader.ID == c.cfg.ID
	case EventLeaderBegin, EventLeaderEnd, EventLeaderError, EventCandidateLeft:
		return ev.Data.Candidate != nil && ev.Data.Candidate.ID == c.cfg.ID
	case EventLeaderTransfer:
		// Asked to hand over: the next heartbeat is refused and says so.
		return ev.Data.Previous != nil && ev.Data.Previous.ID == c.cfg.ID
	}
	return false
}
