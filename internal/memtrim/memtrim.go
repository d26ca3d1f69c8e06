package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config tunes Run. The zero value takes the defaults.
type Config struct {
	// Interval is how often the allocation rate is checked. Default 1s.
	Interval time.Duration
	// Quiet is the allocation within one Interval below which the process
	// counts as quiet. Default 1 MiB.
	Quiet uint64
	// Slack is how much more than the last collection left (live heap)
	// the process may keep resident, in heap objects and free heap pages
	// not yet returned, before a quiet moment trims it. Default 32 MiB or
	// a quarter of the live heap, whichever is more.
	Slack uint64
	// Every bounds how often a trim runs. Default 30s.
	Every time.Duration
}

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultQuiet    = 1 << 20
	DefaultSlack    = 32 << 20
	DefaultEvery    = 30 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Quiet == 0 {
		c.Quiet = DefaultQuiet
	}
	if c.Slack == 0 {
		c.Slack = DefaultSlack
	}
	if c.Every <= 0 {
		c.Every = DefaultEvery
	}
	return c
}

// Sample is what Due decides from: the process's heap as runtime/metrics
// reports it.
type Sample struct {
	Allocated uint64 // bytes allocated since the process started (cumulative)
	Live      uint64 // bytes the last collection found live
	Objects   uint64 // bytes of heap objects now, live and garbage
	Free      uint64 // bytes of free heap pages not returned to the system
}

// Due reports whether a trim is due at now, given the sample before
// (taken one Interval earlier) and the last trim. Safe to call with the
// zero last.
func (c Config) Due(before, now Sample, at, last time.Time) bool {
	c = c.withDefaults()
	if !last.IsZero() && at.Sub(last) < c.Every {
		return false
	}
	if now.Allocated-before.Allocated >= c.Quiet {
		return false // not quiet
	}
	return now.Objects+now.Free > now.Live+max(c.Slack, now.Live/4)
}

// Run trims as Config says until ctx ends; trims counts the trims made,
// if not nil (for tests).
func Run(ctx context.Context, cfg Config, trims func()) {
	cfg = cfg.withDefaults()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	before := read()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := read()
			if cfg.Due(before, s, now, last) {
				debug.FreeOSMemory()
				last = now
				s = read()
				if trims != nil {
					trims()
				}
			}
			before = s
		}
	}
}

// names are the runtime/metrics Sample reads.
var names = []string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
}

// read samples the heap.
func read() Sample {
	ms := make([]metrics.Sample, len(names))
	for i, n := range names {
		ms[i].Name = n
	}
	metrics.Read(ms)
	v := func(i int) uint64 {
		if ms[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return ms[i].Value.Uint64()
	}
	return Sample{Allocated: v(0), Live: v(1), Objects: v(2), Free: v(3)}
}
