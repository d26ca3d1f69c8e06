package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// Harness tells the suite how to get a backend.
type Harness struct {
	// New returns a fresh backend over a real engine. The suite runs its
	// Run loop, if it has one, until the test ends.
	New func(t *testing.T) gateway.Backend
	// Replica, if set, returns a second backend over the same storage as b,
	// as a second gateway replica would have; the concurrency test then
	// spreads its candidates over both.
	Replica func(t *testing.T, b gateway.Backend) gateway.Backend
	// Candidates is the number of candidates of the concurrency test.
	// Default 100.
	Candidates int
	// Duration of the concurrency test. Default 3s.
	Duration time.Duration
	// ModelOps is the number of steps of the model test
	// (AgreesWithTheRecord) unless EnvModelOps says otherwise. Default
	// DefaultModelOps (ten times as many with Synctest).
	ModelOps int
	// Synctest says that backends made by New keep time with the time
	// package alone (no engine, no network, no other process): the model
	// test (AgreesWithTheRecord) then makes one per sequence inside a
	// testing/synctest bubble, where every timer ends exactly on time and
	// the Record's order of timers is checked exactly.
	Synctest bool
	// TransferMovesFollowers says that a pending transfer moves the
	// followers standing ahead of its target behind it, where the Record
	// keeps the line as it is until the target takes the slot (etcd: a
	// candidate's place in line is its key's create revision, which only a
	// new key can change). The model test then lets the followers' order
	// differ from the Record's while a transfer is pending; once it has
	// ended, the backend's line must be back in the Record's order (etcd:
	// a key moved to make way keeps its rank).
	TransferMovesFollowers bool
	// ExpiryHolds says that the promise of a leader that expired holds
	// the next leadership back as a failed leader's does (etcd: the
	// promise lapses on a replica's clock, a little after etcd ends the
	// lease; see gateway.Election.HandoverUntil). The model test then
	// lets promotion wait after a leader's expiry until its last
	// heartbeat's promise has lapsed.
	ExpiryHolds bool
	// BeginSkipsHeldPrevious says that a leader.begin that fills a slot
	// while another slot is still kept by the handover delay or the
	// promise of a holder that expired need not name that holdership as
	// its previous one (nor "expired" as the reason), as the Record does,
	// and may name an earlier one or none (etcd: an expiry is written to
	// the lead record only once its slot frees; see backends/etcd, fill).
	// Only with several holders can a slot fill while another is kept.
	BeginSkipsHeldPrevious bool
	// TransferTargetBlocksSlots says that while a transfer is pending and
	// the holdership it asks to hand over is open, a free slot is not
	// filled from the followers behind its target (etcd: the holders are
	// the head of the line, and the target waits first behind them; see
	// backends/etcd, fill), where the Record fills it. Both are safe; the
	// backend leaves a slot empty longer. The model test ends a sequence,
	// passed and logged, where the Record fills such a slot: from there the
	// two hold different candidates.
	TransferTargetBlocksSlots bool
	// SingleHolder declares a backend that takes one holder per election
	// only (its MaxHolders is 1): the holders subtests above one holder
	// then check that it refuses them with gateway.ErrNotSupported. The
	// suite fails if the backend says otherwise, so a backend that takes
	// more drops it and runs them all.
	SingleHolder bool
}

// allowances are the differences from gateway.Record a Harness declares.
func (h Harness) allowances() allowances {
	return allowances{reorders: h.TransferMovesFollowers, expiryHolds: h.ExpiryHolds, heldPrev: h.BeginSkipsHeldPrevious,
		targetBlocks: h.TransferTargetBlocksSlots}
}

// start runs b's loop until t ends.
func start(t *testing.T, b gateway.Backend) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("backend Run: %v", err)
		}
	})
}

// name returns a fresh election name with a readable prefix.
func name(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// token returns a fresh token hash.
func token() string { return gateway.HashToken(gateway.NewToken()) }

// defaults are the settings elections of the suite start with.
var defaults = gateway.Settings{ErrorCooldown: time.Second}

// campaign campaigns and fails the test on error.
func campaign(t *testing.T, b gateway.Backend, election, id string, ttl time.Duration) (string, gateway.Status) {
	t.Helper()
	th := token()
	st, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, defaults)
	if err != nil {
		t.Fatalf("campaign %s/%s: %v", election, id, err)
	}
	return th, st
}

// keepAlive heartbeats every ttl/4 until the returned stop is called or
// the test ends.
func keepAlive(t *testing.T, b gateway.Backend, election, id, th string, ttl time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = b.Heartbeat(ctx, election, id, th)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func snapshot(t *testing.T, b gateway.Backend, election string) gateway.Election {
	t.Helper()
	e, err := b.Election(context.Background(), election)
	if err != nil {
		t.Fatalf("election %s: %v", election, err)
	}
	return e
}

// eventWait bounds how long a test waits for the events its steps make to
// come through a watch: long enough for a loaded machine that runs other
// tests beside it (CI saw a NATS cluster, under a storm of writes in a
// parallel subtest, deliver none for over 5s). It bounds nothing that a
// backend promises: each test then checks which events came, in which
// order and for which reasons, which tells a handover from an expiry.
const eventWait = 20 * time.Second

// recorder collects the events of a watch.
type recorder struct {
	mu     sync.Mutex
	events []gateway.Event
}

// watch starts recording events of election after cursor until the test ends.
func watch(t *testing.T, b gateway.Backend, election, after string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := b.Watch(ctx, election, after)
	if err != nil {
		cancel()
		t.Fatalf("watch %q after %q: %v", election, after, err)
	}
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range ch {
			rec.mu.Lock()
			rec.events = append(rec.events, e)
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

func (r *recorder) all() []gateway.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gateway.Event(nil), r.events...)
}

// count is how many events of type typ were recorded so far.
func (r *recorder) count(typ gateway.EventType) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// wait returns the recorded events once match finds what it needs in them.
func (r *recorder) wait(t *testing.T, timeout time.Duration, what string, match func([]gateway.Event) bool) []gateway.Event {
	t.Helper()
	var got []gateway.Event
	eventually.NoError(t, timeout, what, func() error {
		if got = r.all(); match(got) {
			return nil
		}
		return fmt.Errorf("events: %s", describe(got))
	})
	return got
}

// has reports whether events contain one of type typ about candidate id,
// with reason if reason is not empty.
func has(events []gateway.Event, typ gateway.EventType, id, reason string) bool {
	return find(events, typ, id, reason) >= 0
}

func find(events []gateway.Event, typ gateway.EventType, id, reason string) int {
	for i, e := range events {
		if e.Type == typ && e.Candidate != nil && e.Candidate.ID == id && (reason == "" || e.Reason == reason) {
			return i
		}
	}
	return -1
}

func describe(events []gateway.Event) string {
	s := "["
	for i, e := range events {
		if i > 0 {
			s += " "
		}
		id := ""
		if e.Candidate != nil {
			id = e.Candidate.ID
		}
		s += string(e.Type) + "(" + id + "," + e.Reason + ")"
	}
	return s + "]"
}

func ids(cands []gateway.Candidate) []string {
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.ID + ":" + string(c.State)
	}
	return out
}
