package memtrim

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
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
	// Floor, if not zero, is the heap a collection waits for at least:
	// while the live heap is small, Run raises GOGC so that the heap may
	// grow to Floor before the next collection, where GOGC alone would
	// collect at twice the live heap (see Percent). A small heap that
	// allocates fast is otherwise collected many times a second, each
	// collection scanning it whole, on cores the process shares with its
	// backend. Run leaves GOGC alone when the environment sets it.
	// Default 0: off.
	Floor uint64
}

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultQuiet    = 1 << 20
	DefaultSlack    = 32 << 20
	DefaultEvery    = 30 * time.Second
	// MaxPercent caps the GOGC that Floor raises.
	MaxPercent = 1000
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

// Percent is the GOGC that lets a heap whose last collection left live
// bytes grow to Floor before the next one, base being the process's own
// GOGC: base itself once live × (1 + base/100) reaches Floor (or without
// a Floor, or before the first collection), at most MaxPercent.
func (c Config) Percent(base int, live uint64) int {
	if c.Floor == 0 || live == 0 || live*uint64(100+base)/100 >= c.Floor {
		return base
	}
	return min(max(base, int((c.Floor-live)*100/live)), MaxPercent)
}

// Run trims as Config says, and keeps GOGC at Percent of the live heap
// (with a Floor, and GOGC not set in the environment), until ctx ends;
// trims counts the trims made, if not nil (for tests).
func Run(ctx context.Context, cfg Config, trims func()) {
	cfg = cfg.withDefaults()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	before := read()
	var last time.Time
	tune := cfg.Floor > 0 && os.Getenv("GOGC") == ""
	const base = 100 // the runtime's default, GOGC being unset
	percent := base
	defer func() {
		if percent != base {
			debug.SetGCPercent(base)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := read()
			if p := cfg.Percent(base, s.Live); tune && p != percent {
				debug.SetGCPercent(p)
				percent = p
			}
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

// FloorUnder returns the Floor to use for a process that wants want but
// may hold at most limit bytes (0: no limit known): a quarter of the limit
// at most, so that the heap the floor lets grow, with the runtime's own
// memory beside it, stays well inside a container's limit; 0 (off) when
// that quarter is below MinFloor.
func FloorUnder(want, limit uint64) uint64 {
	if limit == 0 {
		return want
	}
	f := min(want, limit/4)
	if f < MinFloor {
		return 0
	}
	return f
}

// MinFloor is the smallest Floor FloorUnder gives: below it, collections
// are cheap enough as they are.
const MinFloor = 32 << 20

// Limit returns the memory the process may hold, as far as it can tell:
// the smaller of GOMEMLIMIT (debug.SetMemoryLimit) and its cgroup's memory
// limit (v2 memory.max, or v1 memory.limit_in_bytes); 0 when neither is
// set.
func Limit() uint64 {
	var limit uint64
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		limit = uint64(l)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n == 0 || n >= 1<<62 { // "max", or v1's "no limit"
			continue
		}
		if limit == 0 || n < limit {
			limit = n
		}
	}
	return limit
}
