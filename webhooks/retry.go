package webhooks

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRetrySchedule is the wait before each retry of a delivery: after
// the first attempt fails, 5s, then 30s, … A delivery is marked failed after
// the last retry, about four and a half hours after the event: a leadership
// event is stale long before days have passed.
func DefaultRetrySchedule() []time.Duration {
	return []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour}
}

// jitter spreads a wait by ±20%, so that endpoints that failed together do
// not retry together.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	spread := int64(d) / 5
	return d - time.Duration(spread) + time.Duration(rand.Int64N(2*spread+1))
}

// nextWait is the wait before the retry that follows attempt number n
// (1-based) of a delivery: the schedule's n-th entry, jittered, at least
// the receiver's Retry-After (capped at maxRetryAfter). ok is false when
// the schedule is exhausted and the delivery fails.
func nextWait(schedule []time.Duration, n int, retryAfter, maxRetryAfter time.Duration, jit func(time.Duration) time.Duration) (time.Duration, bool) {
	if n < 1 || n > len(schedule) {
		return 0, false
	}
	d := jit(schedule[n-1])
	if retryAfter > maxRetryAfter {
		retryAfter = maxRetryAfter
	}
	return max(d, retryAfter), true
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date. It returns 0 when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > 1<<31 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
