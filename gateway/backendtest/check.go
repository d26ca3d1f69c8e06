package backendtest

import (
	"fmt"

	"github.com/electorhq/elector/gateway"
)

// CheckEvents verifies the safety properties of an event sequence, as one
// watcher received it: per election, leaderships never overlap (each
// leader.begin follows the leader.end of the one before), every leader.end
// and leader.error names the open leadership, and terms strictly increase.
// Of transfers: a leader.transfer names the open leadership, a leadership
// ends by handover (reason transferred or preempted) only while a transfer
// is pending, and while one is pending the next leader is its target.
// It returns the first violation found.
func CheckEvents(events []gateway.Event) error {
	type open struct {
		id   string
		term uint64
		ok   bool
	}
	cur := map[string]open{}
	last := map[string]uint64{}
	target := map[string]string{} // the pending transfer's target
	for i, e := range events {
		o := cur[e.Election]
		switch e.Type {
		case gateway.EventLeaderTransfer:
			if p := e.Previous; !o.ok || p == nil || p.ID != o.id || p.Term != o.term {
				return fmt.Errorf("event %d (%s): transfer to %q from %+v, but the open leadership is %+v", i, e.ID, e.Candidate.ID, e.Previous, o)
			}
			target[e.Election] = e.Candidate.ID
		case gateway.EventTransferCancelled:
			if target[e.Election] != e.Candidate.ID {
				return fmt.Errorf("event %d (%s): cancels a transfer to %q, but the pending one is to %q", i, e.ID, e.Candidate.ID, target[e.Election])
			}
			delete(target, e.Election)
		case gateway.EventLeaderBegin:
			if o.ok {
				return fmt.Errorf("event %d (%s): %q begins term %d while %q still leads term %d", i, e.ID, e.Candidate.ID, e.Term, o.id, o.term)
			}
			if to, ok := target[e.Election]; ok && to != e.Candidate.ID {
				return fmt.Errorf("event %d (%s): %q begins term %d while the transfer to %q is pending", i, e.ID, e.Candidate.ID, e.Term, to)
			}
			delete(target, e.Election)
			if e.Term <= last[e.Election] {
				return fmt.Errorf("event %d (%s): term %d does not increase on %d", i, e.ID, e.Term, last[e.Election])
			}
			last[e.Election] = e.Term
			cur[e.Election] = open{id: e.Candidate.ID, term: e.Term, ok: true}
		case gateway.EventLeaderEnd, gateway.EventLeaderError:
			if !o.ok || o.id != e.Candidate.ID || o.term != e.Term {
				return fmt.Errorf("event %d (%s): %s of %q term %d, but the open leadership is %+v", i, e.ID, e.Type, e.Candidate.ID, e.Term, o)
			}
			handedOver := e.Reason == gateway.ReasonTransferred || e.Reason == gateway.ReasonPreempted
			if _, pending := target[e.Election]; e.Type == gateway.EventLeaderEnd && handedOver && !pending {
				return fmt.Errorf("event %d (%s): %q handed over term %d with no transfer pending", i, e.ID, e.Candidate.ID, e.Term)
			}
			if e.Type == gateway.EventLeaderEnd {
				delete(cur, e.Election)
			}
		}
	}
	return nil
}
