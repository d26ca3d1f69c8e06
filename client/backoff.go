package client

import "time"

// retryDelay is the wait before retry number failures (1 for the first)
// of a request that failed: base doubled per failure up to limit, with
// equal jitter (half fixed, half scaled by jitter, a number in [0, 1)) so
// that candidates cut off together do not come back in step, and never
// shorter than the Retry-After the gateway asked for, up to limit.
func retryDelay(base, limit time.Duration, failures int, retryAfter time.Duration, jitter float64) time.Duration {
	d := base
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	d = d/2 + time.Duration(float64(d/2)*jitter)
	return max(d, min(retryAfter, limit))
}
