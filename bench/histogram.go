package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits is how many bits of a value below its leading one a Histogram
// keeps: 2^subBits buckets per power of two, so a quantile is off by at
// most 1/2^subBits (about 3%) of its value.
const subBits = 5

// buckets is the number of buckets that cover every non-negative int64.
const buckets = (64 - subBits) << subBits

// Histogram counts durations in log-linear buckets. Its memory is fixed
// (15 KiB) whatever the number of samples, and Record is a few atomic
// additions, so that many goroutines can record into one without a lock.
// The zero value is ready to use; it is safe for concurrent use.
type Histogram struct {
	counts [buckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
}

// bucketOf returns the index of the bucket that holds v (≥ 0).
func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(v) - subBits // ≥ 1
	return e<<subBits | int(v>>(e-1)&(1<<subBits-1))
}

// upperOf returns the largest value bucket i holds.
func upperOf(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	e := i >> subBits
	low := uint64(1<<subBits|i&(1<<subBits-1)) << (e - 1)
	return low + 1<<(e-1) - 1
}

// Record counts one duration; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(uint64(d))].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Max returns the largest duration recorded, 0 if none.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Quantile returns the smallest duration that at least q (0 < q ≤ 1) of the
// recorded ones do not exceed, to the precision of the buckets and never
// above Max; 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q * float64(n))
	if float64(rank) < q*float64(n) {
		rank++
	}
	rank = max(rank, 1)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(time.Duration(upperOf(i)), h.Max())
		}
	}
	return h.Max()
}
