package nats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/testnet"
)

// The group commit reaches into the server's unexported state
// (storeaccess.go): with this server version it must find the records
// store, switch it to sync on flush and back, and refuse a store that
// does not sync every write.
func TestFlushedStoreOfThisServerVersion(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	fs, err := flushedStoreOf(e.srv, b.cfg.Stream)
	if err != nil {
		t.Fatalf("the records store of nats-server %s: %v", server.VERSION, err)
	}
	if fs.always.Load() || !fs.onFlush.Load() {
		t.Fatalf("switched store: sync always %v, on flush %v; want false, true", fs.always.Load(), fs.onFlush.Load())
	}
	if _, err := flushedStoreOf(e.srv, b.cfg.Stream); !errors.Is(err, errNoStoreAccess) {
		t.Fatalf("a store already switched: %v, want errNoStoreAccess", err)
	}
	fs.restore()
	if !fs.always.Load() || fs.onFlush.Load() {
		t.Fatalf("restored store: sync always %v, on flush %v; want true, false", fs.always.Load(), fs.onFlush.Load())
	}
	if _, err := flushedStoreOf(e.srv, "NO_SUCH_STREAM"); !errors.Is(err, errNoStoreAccess) {
		t.Fatalf("a stream that does not exist: %v, want errNoStoreAccess", err)
	}
}

// openEmbedded opens a standalone embedded backend under a temp dir, as
// elector serve does, with its reconciler running, closed when t ends.
func openEmbedded(t *testing.T, ecfg EmbeddedConfig, cfg Config) *Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ecfg.DataDir == "" {
		ecfg.DataDir = t.TempDir()
	}
	b, err := OpenEmbedded(ctx, ecfg, cfg, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	run(t, b)
	return b
}

// Records are synced in groups only where this process is the records
// stream's one writer and reader and a new record cannot drop the last
// durable one: a standalone embedded server without a client listener,
// keeping at least two records per election.
func TestGroupCommitOnlyWhereNothingElseReadsTheRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		ecfg EmbeddedConfig
		cfg  Config
		want bool
	}{
		{"standalone", EmbeddedConfig{}, Config{}, true},
		{"with a client listener", EmbeddedConfig{Listen: testnet.FreeAddr(t)}, Config{}, false},
		{"one record per election", EmbeddedConfig{}, Config{History: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := openEmbedded(t, tc.ecfg, tc.cfg)
			if got := b.commit != nil; got != tc.want {
				t.Fatalf("group commit %v, want %v", got, tc.want)
			}
			campaignT(t, b, "e", "a", time.Minute)
		})
	}
}

// heldFlushes makes the flushes of g wait until release is called (or t
// ends).
func heldFlushes(t *testing.T, g *groupCommit) (release func()) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	g.mu.Lock()
	g.beforeFlush = func() error { <-ch; return nil }
	g.mu.Unlock()
	return release
}

// lastStored is the records stream's last sequence as the server holds
// it, on disk or not.
func lastStored(ctx context.Context, t *testing.T, b *Backend) uint64 {
	t.Helper()
	info, err := b.records.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// A record the server holds but has not synced to disk is neither
// acknowledged, nor shown by a read, nor delivered by a watch: a power
// loss could take it back. Once a flush has synced it, all three happen.
func TestGroupCommitShowsNothingBeforeItIsOnDisk(t *testing.T) {
	b := openEmbedded(t, EmbeddedConfig{}, Config{})
	if b.commit == nil {
		t.Fatal("no group commit on a standalone embedded server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaignT(t, b, "warm", "a", time.Minute) // the view is filled
	events, err := b.Watch(ctx, "held", "")
	if err != nil {
		t.Fatal(err)
	}
	before := lastStored(ctx, t, b)
	release := heldFlushes(t, b.commit)

	done := make(chan error, 1)
	go func() {
		_, err := b.Campaign(ctx, "held", gateway.Candidacy{ID: "x", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
		done <- err
	}()
	eventually.NoErrorUntil(ctx, t, "the record stored", func() error {
		if last := lastStored(ctx, t, b); last <= before {
			return fmt.Errorf("last sequence %d", last)
		}
		return nil
	})
	// The campaign, the view and the watch each wait for the flush.
	eventually.NoErrorUntil(ctx, t, "three waiting for the disk", func() error {
		if n := b.commit.waiters(); n < 3 {
			return fmt.Errorf("%d waiting", n)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("the campaign answered (%v) before its record was on disk", err)
	default:
	}
	if e, err := b.Election(ctx, "held"); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("a read before the record is on disk: %+v, %v; want ErrElectionNotFound", e, err)
	}
	if s, found, _ := b.load(ctx, "warm"); !found || s.rec.Find("a") == nil {
		t.Fatal("a record on disk is not read while another waits")
	}

	release()
	if err := <-done; err != nil {
		t.Fatalf("campaign: %v", err)
	}
	select {
	case ev := <-events:
		if ev.Type != gateway.EventCandidateJoined || ev.Candidate.ID != "x" {
			t.Fatalf("first event %+v, want x joined", ev)
		}
	case <-ctx.Done():
		t.Fatal("no event after the record reached the disk")
	}
	if _, err := b.Election(ctx, "held"); err != nil {
		t.Fatalf("read after the flush: %v", err)
	}
}

// Concurrent writes share their flushes: campaigns whose records were all
// stored while a flush was held complete with at most two more.
func TestGroupCommitSharesFlushes(t *testing.T) {
	b := openEmbedded(t, EmbeddedConfig{}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaignT(t, b, "warm", "a", time.Minute)
	before := lastStored(ctx, t, b)
	release := heldFlushes(t, b.commit)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := b.Campaign(ctx, fmt.Sprintf("e%d", i), gateway.Candidacy{ID: "c", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
			errs <- err
		})
	}
	eventually.NoErrorUntil(ctx, t, "every record stored", func() error {
		if last := lastStored(ctx, t, b); last < before+n {
			return fmt.Errorf("%d of %d stored", last-before, n)
		}
		return nil
	})
	b.commit.mu.Lock()
	flushed := b.commit.done
	b.commit.mu.Unlock()
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b.commit.mu.Lock()
	after := b.commit.done
	b.commit.mu.Unlock()
	if after-flushed > 2 {
		t.Fatalf("%d campaigns stored during one flush took %d more flushes; want at most 2", n, after-flushed)
	}
	if d, last := b.commit.Durable(), lastStored(ctx, t, b); d < last {
		t.Fatalf("durable sequence %d after every write returned, stream at %d", d, last)
	}
}

// A flush that fails fails the writes waiting for it as unavailable and
// moves nothing past them; the next flush that succeeds covers the record.
func TestGroupCommitFailedFlushFailsTheWrite(t *testing.T) {
	b := openEmbedded(t, EmbeddedConfig{}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	campaignT(t, b, "warm", "a", time.Minute)
	durable := b.commit.Durable()
	failing := errors.New("disk on fire")
	b.commit.mu.Lock()
	b.commit.beforeFlush = func() error { return failing }
	b.commit.mu.Unlock()
	_, err := b.Campaign(ctx, "lost", gateway.Candidacy{ID: "c", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
	if !errors.Is(err, gateway.ErrUnavailable) || !errors.Is(err, failing) {
		t.Fatalf("campaign whose flush failed: %v, want ErrUnavailable and the flush's error", err)
	}
	if d := b.commit.Durable(); d != durable {
		t.Fatalf("durable sequence moved from %d to %d without a flush", durable, d)
	}
	if _, err := b.Election(ctx, "lost"); !errors.Is(err, gateway.ErrElectionNotFound) {
		t.Fatalf("read of a record not on disk: %v, want ErrElectionNotFound", err)
	}
	b.commit.mu.Lock()
	b.commit.beforeFlush = nil
	b.commit.mu.Unlock()
	eventually.NoErrorUntil(ctx, t, "the record read once a flush succeeds", func() error {
		_, err := b.Election(ctx, "lost")
		return err
	})
}

// withStore replaces the store the flushes of g go through, between two
// flushes.
func withStore(t *testing.T, g *groupCommit, st server.StreamStore) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually.NoErrorUntil(ctx, t, "no flush under way", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.started != g.done {
			return fmt.Errorf("flush %d under way", g.started)
		}
		g.store.StreamStore = st
		return nil
	})
}

// resetDuringFlush sets the store back to syncing every write as each of
// its next resets flushes begins, as the server does when it updates the
// store's configuration.
type resetDuringFlush struct {
	server.StreamStore
	reset  func()
	resets *atomic.Int32
}

func (s resetDuringFlush) FlushAllPending() error {
	if s.resets.Add(-1) >= 0 {
		s.reset()
	}
	return s.StreamStore.FlushAllPending()
}

// A store the server set back to syncing every write would leave, on a
// flush, the files written without a sync unsynced: the group commit sets
// sync on flush again before each flush, and fails the writes of a flush
// during which the setting was reset.
func TestGroupCommitKeepsTheStoreSyncingOnFlush(t *testing.T) {
	b := openEmbedded(t, EmbeddedConfig{}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := b.commit
	campaignT(t, b, "warm", "a", time.Minute)

	g.store.restore()
	campaignT(t, b, "after-reset", "a", time.Minute)
	if g.store.always.Load() || !g.store.onFlush.Load() {
		t.Fatalf("store after a flush: sync always %v, on flush %v; want false, true", g.store.always.Load(), g.store.onFlush.Load())
	}

	inner := g.store.StreamStore
	tests := []struct {
		name   string
		resets int32
		fails  bool
	}{
		{"a reset during one flush: it is made again and covers the record", 1, false},
		{"a reset during every flush: the write fails, nothing counts as synced", math.MaxInt32, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resets atomic.Int32
			resets.Store(tt.resets)
			withStore(t, g, resetDuringFlush{StreamStore: inner, reset: g.store.restore, resets: &resets})
			defer withStore(t, g, inner)
			durable := g.Durable()
			election := fmt.Sprintf("reset-%d", i)
			_, err := b.Campaign(ctx, election, gateway.Candidacy{ID: "c", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
			if !tt.fails {
				if n := resets.Load(); n > 0 {
					t.Fatalf("%d resets left: the flushes did not come", n)
				}
				if err != nil {
					t.Fatalf("campaign whose first flush saw a reset: %v", err)
				}
				if d := g.Durable(); d <= durable {
					t.Fatalf("durable sequence %d, want past %d", d, durable)
				}
				if g.store.always.Load() || !g.store.onFlush.Load() {
					t.Fatalf("store after the flush made again: sync always %v, on flush %v; want false, true", g.store.always.Load(), g.store.onFlush.Load())
				}
				return
			}
			if !errors.Is(err, gateway.ErrUnavailable) || !errors.Is(err, errSyncSettingsReset) {
				t.Fatalf("campaign whose flushes all saw a reset: %v, want ErrUnavailable and errSyncSettingsReset", err)
			}
			if d := g.Durable(); d != durable {
				t.Fatalf("durable sequence moved from %d to %d by flushes that saw a reset", durable, d)
			}
			withStore(t, g, inner)
			eventually.NoErrorUntil(ctx, t, "the record read once a flush succeeds", func() error {
				_, err := b.Election(ctx, election)
				return err
			})
		})
	}
}
