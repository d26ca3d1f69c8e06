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
