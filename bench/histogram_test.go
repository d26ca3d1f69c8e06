package bench

import (
	"testing"
	"time"
)

func TestHistogramBucketsCoverValuesInOrder(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1} {
		i := bucketOf(v)
		if i < prev || i >= buckets {
			t.Fatalf("bucketOf(%d) = %d after %d", v, i, prev)
		}
		if up := upperOf(i); up < v || (i > 0 && upperOf(i-1) >= v) {
			t.Fatalf("%d in bucket %d whose range ends at %d (previous ends at %d)", v, i, up, upperOf(i-1))
		}
		prev = i
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(-time.Second) // counts as zero
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 500 * time.Microsecond},
		{0.9, 900 * time.Microsecond},
		{0.99, 990 * time.Microsecond},
		{1, 1000 * time.Microsecond},
	} {
		got := h.Quantile(c.q)
		if got < c.want-c.want/20 || got > c.want+c.want/20 {
			t.Errorf("Quantile(%v) = %s, want %s ± 5%%", c.q, got, c.want)
		}
	}
	if h.Count() != 1001 || h.Max() != time.Millisecond {
		t.Errorf("count %d, max %s", h.Count(), h.Max())
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Max() != 0 {
		t.Error("an empty histogram has quantiles")
	}
}
