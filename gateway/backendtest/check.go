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
func CheckEvents(events []gateway.Event) error { return CheckHolderEvents(events, 1) }

// CheckHolderEvents is CheckEvents for elections of up to n holders: per
// election, a holdership begins only while fewer than n are open, every
// leader.end and leader.error names an open holdership, and terms strictly
// increase (so each holdership's is unique). Of transfers: a
// leader.transfer names an open holdership, a holdership ends by handover
// only while a transfer of that holdership is pending, its target does not
// begin while that holdership is open, and once it has ended the next
// holdership to begin is the target's.
func CheckHolderEvents(events []gateway.Event, n int) error {
	type transfer struct {
		to    string
		from  uint64 // the holdership asked to hand over
		ended bool   // it has ended: the target is next
	}
	open := map[string]map[uint64]string{} // election → term → holder
	last := map[string]uint64{}
	pending := map[string]*transfer{}
	for i, e := range events {
		el := e.Election
		if open[el] == nil {
			open[el] = map[uint64]string{}
		}
		p := pending[el]
		switch e.Type {
		case gateway.EventLeaderTransfer:
			if pr := e.Previous; pr == nil || open[el][pr.Term] != pr.ID || pr.ID == "" {
				return fmt.Errorf("event %d (%s): transfer to %q from %+v, but the open holderships are %v", i, e.ID, e.Candidate.ID, e.Previous, open[el])
			}
			pending[el] = &transfer{to: e.Candidate.ID, from: e.Previous.Term}
		case gateway.EventTransferCancelled:
			if p == nil || p.to != e.Candidate.ID {
				return fmt.Errorf("event %d (%s): cancels a transfer to %q, but the pending one is %+v", i, e.ID, e.Candidate.ID, p)
			}
			delete(pending, el)
		case gateway.EventLeaderBegin:
			if len(open[el]) >= n {
				return fmt.Errorf("event %d (%s): %q begins term %d while %d already hold (%v)", i, e.ID, e.Candidate.ID, e.Term, len(open[el]), open[el])
			}
			if p != nil {
				switch {
				case p.ended && p.to != e.Candidate.ID:
					return fmt.Errorf("event %d (%s): %q begins term %d while the transfer to %q is pending", i, e.ID, e.Candidate.ID, e.Term, p.to)
				case !p.ended && p.to == e.Candidate.ID:
					return fmt.Errorf("event %d (%s): the transfer's target %q begins term %d while term %d it replaces is open", i, e.ID, e.Candidate.ID, e.Term, p.from)
				case p.ended:
					delete(pending, el)
				}
			}
			if e.Term <= last[el] {
				return fmt.Errorf("event %d (%s): term %d does not increase on %d", i, e.ID, e.Term, last[el])
			}
			last[el] = e.Term
			open[el][e.Term] = e.Candidate.ID
		case gateway.EventLeaderEnd, gateway.EventLeaderError:
			if id, ok := open[el][e.Term]; !ok || id != e.Candidate.ID {
				return fmt.Errorf("event %d (%s): %s of %q term %d, but the open holderships are %v", i, e.ID, e.Type, e.Candidate.ID, e.Term, open[el])
			}
			handedOver := e.Reason == gateway.ReasonTransferred || e.Reason == gateway.ReasonPreempted
			if e.Type == gateway.EventLeaderEnd && handedOver && (p == nil || p.from != e.Term) {
				return fmt.Errorf("event %d (%s): %q handed over term %d with no transfer of it pending", i, e.ID, e.Candidate.ID, e.Term)
			}
			if e.Type == gateway.EventLeaderEnd {
				delete(open[el], e.Term)
				if p != nil && p.from == e.Term {
					p.ended = true
				}
			}
		}
	}
	return nil
}
