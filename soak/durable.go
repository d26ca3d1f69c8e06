package soak

import (
	"fmt"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

// WriteLost is the property checkDurable checks.
const WriteLost = "acknowledged write lost"

// streamGrace is how long after an answer its events may reach the
// subscribers: an acknowledged write is checked only when some stream
// of its election received events that long after the answer.
const streamGrace = 2 * time.Second

// checkDurable reports acknowledged writes the event streams never show:
// a campaign answered with success whose candidate.joined no subscriber
// received, and a leadership an answer told a candidate of (a term) that
// no stream began (leader.begin naming it, or a reset naming it leader
// of that term). A write acknowledged and then lost to a crash or a
// failover shows this way. Writes are checked only where the streams
// cover them: some subscriber of the election received an event
// streamGrace after the answer, and no stream of it fell back to a
// snapshot around it (a reset replaces the events it skipped).
func checkDurable(ops []bench.Op, events []Event) []Violation {
	_, v := durable(ops, events)
	return v
}

// DurableChecked is how many acknowledged writes of h (campaigns, and
// answers that told a candidate it leads) the streams cover, which
// checkDurable checked.
func DurableChecked(h *History) int {
	n, _ := durable(h.Ops(), h.Events())
	return n
}

// durable is checkDurable, which also counts the writes it checked.
func durable(ops []bench.Op, events []Event) (checked int, v []Violation) {
	type key struct {
		election, candidate string
		term                uint64
	}
	joined := map[key][]time.Time{} // by election and candidate (term 0)
	began := map[key]bool{}
	last := map[string]time.Time{}
	resets := map[string][]time.Time{}
	for _, e := range events {
		if e.Received.After(last[e.Election]) {
			last[e.Election] = e.Received
		}
		switch e.Type {
		case client.EventCandidateJoined:
			k := key{e.Election, e.Candidate, 0}
			joined[k] = append(joined[k], e.Received)
		case client.EventLeaderBegin:
			began[key{e.Election, e.Candidate, e.Term}] = true
		case client.EventReset:
			resets[e.Election] = append(resets[e.Election], e.Received)
			if e.Leader != "" {
				began[key{e.Election, e.Leader, e.LeaderTerm}] = true
			}
			for _, h := range e.Holders {
				began[key{e.Election, h.ID, h.Term}] = true
			}
		}
	}
	covered := func(op bench.Op) bool {
		if !last[op.Election].After(op.End.Add(streamGrace)) {
			return false
		}
		for _, r := range resets[op.Election] {
			if !r.Before(op.Start.Add(-streamGrace)) && !r.After(op.End.Add(streamGrace)) {
				return false
			}
		}
		return true
	}
	for _, op := range ops {
		if op.Err != nil || (op.Kind != bench.Campaign && op.Status.State != client.StateLeader) || !covered(op) {
			continue
		}
		checked++
		if op.Kind == bench.Campaign {
			seen := false
			for _, at := range joined[key{op.Election, op.Candidate, 0}] {
				seen = seen || !at.Before(op.Start)
			}
			if !seen {
				v = append(v, Violation{WriteLost, op.Election, fmt.Sprintf("the campaign of %s answered at %s; no stream got its candidate.joined", op.Candidate, stamp(op.End))})
			}
		}
		if op.Status.State == client.StateLeader && !began[key{op.Election, op.Status.ID, op.Status.Term}] {
			v = append(v, Violation{WriteLost, op.Election, fmt.Sprintf("%s was told at %s it leads term %d; no stream began that term with it", op.Status.ID, stamp(op.End), op.Status.Term)})
		}
	}
	return checked, v
}
