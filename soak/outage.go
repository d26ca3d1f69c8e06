package soak

import (
	"fmt"
	"slices"
	"time"

	"github.com/electorhq/elector/bench"
)

// LongestOutage is the longest time, between the first and the last
// heartbeat answered, in which no heartbeat of any candidate was answered
// with success (counted from the end of one to the end of the next): how
// long the gateways as a whole could not keep candidacies alive. Faults
// that take one replica away should not show here when candidates move to
// the others; an outage near the TTL costs every leader its leadership.
// It returns when the outage began and ended (both zero without one).
func LongestOutage(ops []bench.Op) (from, to time.Time) {
	var ends []time.Time
	for _, op := range ops {
		if op.Kind == bench.Heartbeat && op.Err == nil {
			ends = append(ends, op.End)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(ends); i++ {
		if ends[i].Sub(ends[i-1]) > to.Sub(from) {
			from, to = ends[i-1], ends[i]
		}
	}
	return from, to
}

// During returns the faults under way at some moment from from to
// to, as "kind (target)".
func During(faults []Fault, from, to time.Time) []string {
	var out []string
	for _, f := range faults {
		if f.Start.Before(to) && f.End.After(from) {
			out = append(out, fmt.Sprintf("%s (%s)", f.Kind, f.Target))
		}
	}
	return out
}

// LongestAnswer is the longest time an operation of a candidate took to
// end (answered or not) among those that started while a fault of kind
// was under way, leaving out operations sent to a gateway
// (gateways[op.Gateway]) that another fault targeted meanwhile: what a
// fault of kind, say a stopped etcd follower, cost the gateways. It
// returns that time, the fault it started in, and how many operations
// were counted.
func LongestAnswer(ops []bench.Op, faults []Fault, kind string, gateways []string) (longest time.Duration, in Fault, counted int) {
	for _, f := range faults {
		if f.Kind != kind {
			continue
		}
		for _, op := range ops {
			switch op.Kind {
			case bench.Campaign, bench.Heartbeat, bench.Resign:
			default:
				continue
			}
			if op.Start.Before(f.Start) || op.Start.After(f.End) || gatewayFaulted(faults, gateways, op) {
				continue
			}
			counted++
			if d := op.End.Sub(op.Start); d > longest {
				longest, in = d, f
			}
		}
	}
	return longest, in, counted
}

// gatewayFaulted reports whether a fault targeted op's gateway while op
// was under way.
func gatewayFaulted(faults []Fault, gateways []string, op bench.Op) bool {
	if op.Gateway < 0 || op.Gateway >= len(gateways) {
		return false
	}
	for _, f := range faults {
		if f.Target == gateways[op.Gateway] && f.Start.Before(op.End) && f.End.After(op.Start) {
			return true
		}
	}
	return false
}
