package backendtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Environment variables of the model test.
const (
	// EnvModelSeed replays the sequences of one seed (a run prints its
	// seed when it fails).
	EnvModelSeed = "ELECTOR_MODEL_SEED"
	// EnvModelOps is the number of steps per backend, spread over
	// sequences of modelSequence steps. Default DefaultModelOps.
	EnvModelOps = "ELECTOR_MODEL_OPS"
	// EnvModelLog, when set, logs every sequence step by step, also
	// those that pass (go test -v shows them).
	EnvModelLog = "ELECTOR_MODEL_LOG"
)

// DefaultModelOps is the number of steps the model test takes per backend
// on real clocks unless EnvModelOps says otherwise; in a synctest bubble,
// where no time passes waiting for timers, ten times as many.
const DefaultModelOps = 96

// modelSequence is the length of one sequence: long enough to reach
// states many steps deep, short enough that sequences run side by side.
const modelSequence = 12

// modelParallel is how many sequences run side by side on a backend on
// real clocks.
const modelParallel = 8

// Shrinking stops after this many runs or this long, whichever comes
// first, and reports the shortest sequence found by then.
const (
	shrinkRuns = 200
	shrinkTime = 3 * time.Minute
)

// realTiming is how far the timers of a backend on real clocks may stray:
// etcd checks leases every 500ms and its reconcilers act after; NATS
// rounds TTLs up to whole seconds (the lengths here are whole seconds)
// and expires messages on its own timer.
var realTiming = timing{early: 250 * time.Millisecond, late: 2 * time.Second}

// testAgreesWithTheRecord runs the model test (see model.go) against b,
// or, with h.Synctest, against backends made by h.New inside a
// testing/synctest bubble, one per sequence.
func testAgreesWithTheRecord(t *testing.T, h Harness, b gateway.Backend) {
	seed, ops := modelConfig(t, h)
	can := abilitiesOf(b)
	deadline, _ := t.Deadline()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, modelParallel)
	for i := range (ops + modelSequence - 1) / modelSequence {
		s, n := seed+uint64(i), min(modelSequence, ops-i*modelSequence)
		run := func() {
			t.Run("seed="+strconv.FormatUint(s, 10), func(t *testing.T) {
				if h.Synctest {
					synctest.Test(t, func(t *testing.T) {
						b := h.New(t)
						start(t, b)
						// No deadline: t.Deadline panics in a bubble,
						// and shrinking takes no time outside it.
						checkAgainstRecord(t, b, timing{}, h.allowances(), can, s, n, time.Time{})
					})
					return
				}
				checkAgainstRecord(t, b, realTiming, h.allowances(), can, s, n, deadline)
			})
		}
		if h.Synctest {
			run() // no time passes: one after another is as quick
			continue
		}
		// Side by side, however small -parallel is: a sequence spends
		// most of its time waiting for timers.
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			run()
		}()
	}
}

// modelConfig reads the seed and the number of steps from the
// environment, or else makes a seed and takes h's number.
func modelConfig(t *testing.T, h Harness) (seed uint64, ops int) {
	t.Helper()
	seed, ops = uint64(time.Now().UnixNano()), h.ModelOps
	if ops <= 0 {
		ops = DefaultModelOps
		if h.Synctest {
			ops *= 10
		}
	}
	if s := os.Getenv(EnvModelSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvModelSeed, s, err)
		}
		seed = v
	}
	if s := os.Getenv(EnvModelOps); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number of steps", EnvModelOps, s)
		}
		ops = v
	}
	return seed, ops
}

func abilitiesOf(b gateway.Backend) abilities {
	return abilities{holders: b.MaxHolders() > 1}
}

// checkAgainstRecord runs one sequence of n steps drawn from seed; on a
// disagreement it shrinks the sequence, by deadline (the test's, or zero
// for none), and fails t with the shortest one found, step by step.
func checkAgainstRecord(t *testing.T, b gateway.Backend, tm timing, allow allowances, can abilities, seed uint64, n int, deadline time.Time) {
	t.Helper()
	g := &generator{rng: rand.New(rand.NewPCG(seed, seed)), can: can}
	ops, d, log, err := runSequence(b, tm, allow, func(i int, r *gateway.Record) (op, bool) {
		if i >= n {
			return op{}, false
		}
		return g.next(r), true
	})
	if err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, strings.Join(log, "\n"))
	}
	if d == nil {
		if os.Getenv(EnvModelLog) != "" {
			t.Logf("seed %d:\n%s", seed, strings.Join(log, "\n"))
		}
		return
	}
	first, firstLog := *d, log
	stop := time.Now().Add(shrinkTime)
	if !deadline.IsZero() && deadline.Add(-time.Minute).Before(stop) {
		stop = deadline.Add(-time.Minute) // leave time to report
	}
	short := shrink(ops[:min(d.step+1, len(ops))], stop, func(ops []op) bool {
		_, d, _, err := runSequence(b, tm, allow, fixed(ops))
		return err == nil && d != nil
	})
	rerun := fmt.Sprintf("%s=%d go test -run '%s$'", EnvModelSeed, seed, t.Name())
	_, d, log, err = runSequence(b, tm, allow, fixed(short))
	if err != nil || d == nil {
		t.Fatalf("the backend disagrees with gateway.Record at step %d of %d (%s):\n%s\nat step %d: %s\n"+
			"(shrunk to %d steps, which then passed: the disagreement depends on timing)",
			first.step+1, len(ops), rerun, strings.Join(firstLog, "\n"), first.step+1, first.what, len(short))
	}
	t.Fatalf("the backend disagrees with gateway.Record (%s), first at step %d of %d: %s\n"+
		"the shortest sequence found, %d steps:\n%s\nat step %d: %s",
		rerun, first.step+1, len(ops), first.what, len(short), strings.Join(log, "\n"), d.step+1, d.what)
}

// shrink returns the shortest sequence it finds for which fails holds,
// starting from ops (for which it holds): steps deleted, in halving
// chunks, then single steps made simpler (smaller ids, default
// arguments), until neither helps, shrinkRuns runs were made or stop
// passed.
func shrink(ops []op, stop time.Time, fails func([]op) bool) []op {
	runs := 0
	try := func(c []op) bool {
		if runs >= shrinkRuns || time.Now().After(stop) {
			return false
		}
		runs++
		return fails(c)
	}
	for changed := true; changed; {
		changed = false
		for size := max(len(ops)/2, 1); size >= 1; size /= 2 {
			for i := 0; i+size <= len(ops); {
				if c := slices.Concat(ops[:i], ops[i+size:]); try(c) {
					ops, changed = c, true
				} else {
					i += size
				}
			}
		}
		for i := range ops {
			for _, s := range simpler(ops[i]) {
				c := slices.Clone(ops)
				c[i] = s
				if try(c) {
					ops, changed = c, true
					break
				}
			}
		}
	}
	return ops
}

// simpler returns the steps one simplification away from o, simplest
// first.
func simpler(o op) []op {
	var out []op
	for _, id := range candidateIDs {
		if id >= o.id || o.id == "" {
			break
		}
		s := o
		s.id = id
		out = append(out, s)
	}
	with := func(change func(*op)) {
		s := o
		change(&s)
		if s != o {
			out = append(out, s)
		}
	}
	with(func(s *op) { s.priority = 0 })
	with(func(s *op) { s.metadata = false })
	with(func(s *op) { s.stale = false })
	with(func(s *op) { s.preempt = false })
	with(func(s *op) { s.delay = durNone })
	with(func(s *op) { s.holders = 0 })
	with(func(s *op) { s.from = "" })
	if o.kind == opTransfer || o.kind == opCancelTransfer {
		with(func(s *op) { s.token = tokenOperator })
	} else {
		with(func(s *op) { s.token = tokenOwn })
	}
	return out
}
