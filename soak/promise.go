package soak

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

// EarlyPromotion is the property checkPromotions checks.
const EarlyPromotion = "early promotion"

// checkPromotions reports leaderships that began while n earlier ones of
// the election (with n = 1: an earlier one) had not run out the time
// elector promised them: the start of the last answer saying it leads
// plus the TTL. Overlap checks what candidates obeying the step-down rule
// did; this checks elector's promise itself, margin or not, and whether or
// not the earlier leader happened to hear of its end in time. A leadership
// that ended by its candidate's resignation promised nothing after it. One
// violation is reported per leadership that began early, naming the
// earlier one whose promise runs out last.
func checkPromotions(ls []Leadership, ttl time.Duration, n int) []Violation {
	byElection := map[string][]Leadership{}
	for _, l := range ls {
		byElection[l.Election] = append(byElection[l.Election], l)
	}
	type holdership struct {
		candidate string
		term      uint64
	}
	var v []Violation
	for election, ls := range byElection {
		sort.Slice(ls, func(i, j int) bool { return ls[i].From.Before(ls[j].From) })
		for i, l := range ls {
			var early *Leadership // the earlier leadership whose promise runs out last
			promised := map[holdership]bool{}
			for j := range ls[:i] {
				p := &ls[j]
				switch {
				case p.Candidate == l.Candidate && p.Term == l.Term: // the same leadership, told again
				case p.Resigned && !p.To.After(l.From):
				case l.From.Before(p.LastAck.Add(ttl)):
					promised[holdership{p.Candidate, p.Term}] = true
					if early == nil || p.LastAck.After(early.LastAck) {
						early = p
					}
				}
			}
			if len(promised) >= n {
				what := "led"
				if n > 1 {
					what = fmt.Sprintf("held, one of %d holderships promised at once (of %d holders)", len(promised), n)
				}
				v = append(v, Violation{EarlyPromotion, election, fmt.Sprintf("%s was told at %s it leads term %d; %s (term %d) was told at %s it %s, so was promised until %s",
					l.Candidate, stamp(l.From), l.Term, early.Candidate, early.Term, stamp(early.LastAck), what, stamp(early.LastAck.Add(ttl)))})
			}
		}
	}
	return v
}

// Loss is an acknowledged candidacy lost early: its candidate was told
// its candidacy is gone (candidate-not-found) before the time elector
// promised it, the start of its last acknowledged campaign or heartbeat
// plus the TTL.
type Loss struct {
	Election, Candidate string
	// LastAck is the start of the candidate's last acknowledged campaign or
	// heartbeat; Told is when it was told its candidacy was gone.
	LastAck, Told time.Time
	// Revoked is set when the answer said the backend ended the candidacy
	// early (a candidate-not-found problem with "revoked"), rather than
	// leaving the candidate to believe it was late.
	Revoked bool
}

// LostEarly returns the acknowledged candidacies of ops lost early, in the
// order they were told. A candidacy that ends with the candidate's
// resignation, or is told it is gone after its TTL ran out, is not lost
// early.
func LostEarly(ops []bench.Op, ttl time.Duration) []Loss {
	byCandidate := map[[2]string][]bench.Op{}
	for _, op := range ops {
		switch op.Kind {
		case bench.Campaign, bench.Heartbeat, bench.Resign:
			k := [2]string{op.Election, op.Candidate}
			byCandidate[k] = append(byCandidate[k], op)
		}
	}
	var out []Loss
	for k, ops := range byCandidate {
		sort.Slice(ops, func(i, j int) bool { return ops[i].Start.Before(ops[j].Start) })
		var ack time.Time
		for _, op := range ops {
			switch {
			case op.Kind == bench.Resign:
				ack = time.Time{}
			case op.Err == nil:
				ack = op.Start
			case errors.Is(op.Err, client.ErrCandidateNotFound):
				if !ack.IsZero() && op.End.Before(ack.Add(ttl)) {
					var p *client.Problem
					revoked := errors.As(op.Err, &p) && p.Ext["revoked"] != nil
					out = append(out, Loss{Election: k[0], Candidate: k[1], LastAck: ack, Told: op.End, Revoked: revoked})
				}
				ack = time.Time{}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Told.Before(out[j].Told) })
	return out
}
