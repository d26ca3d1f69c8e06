package soak

import (
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
func LongestOutage(ops []bench.Op) time.Duration {
	var ends []time.Time
	for _, op := range ops {
		if op.Kind == bench.Heartbeat && op.Err == nil {
			ends = append(ends, op.End)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(ends); i++ {
		longest = max(longest, ends[i].Sub(ends[i-1]))
	}
	return longest
}
