package backendtest

import (
	"fmt"

	"github.com/electorhq/elector/gateway"
)

// CheckEvents verifies the safety properties of an event sequence, as one
// watcher received it: per election, leaderships never overlap (each
// leader.begin follows the leader.end of the one before), every leader.end
// and leader.error names the open leadership, and terms strictly increase.
// It returns the first violation found.
func CheckEvents(events []gateway.Event) error {
	type open struct {
		id   string
		term uint64
		ok   bool
	}
	cur := map[string]open{}
	last := map[string]uint64{}
	for i, e := range events {
		o := cur[e.Election]
		switch e.Type {
		case gateway.EventLeaderBegin:
			if o.ok {
				return fmt.Errorf("event %d (%s): %q begins term %d while %q still leads term %d", i, e.ID, e.Candidate.ID, e.Term, o.id, o.term)
			}
			if e.Term <= last[e.Election] {
				return fmt.Errorf("event %d (%s): term %d does not increase on %d", i, e.ID, e.Term, last[e.Election])
			}
			last[e.Election] = e.Term
			cur[e.Election] = open{id: e.Candidate.ID, term: e.Term, ok: true}
		case gateway.EventLeaderEnd, gateway.EventLeaderError:
			if !o.ok || o.id != e.Candidate.ID || o.term != e.Term {
				return fmt.Errorf("event %d (%s): %s of %q term %d, but the open leadership is %+v", i, e.ID, e.Type, e.Candidate.ID, e.Term, o)
			}
			if e.Type == gateway.EventLeaderEnd {
				delete(cur, e.Election)
			}
		}
	}
	return nil
}
