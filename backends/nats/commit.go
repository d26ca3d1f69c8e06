package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/electorhq/elector/gateway"
)

// groupCommit makes the records of a standalone embedded server durable
// in groups: records are written to the store's file as they come, and
// one flush of the store (a sync of its files to disk) covers every
// record stored before it began, however many writers wait for it, as
// etcd's raft log does for concurrent proposals. A campaign then costs a
// share of a sync, not a sync of its own in the stream's one writing
// goroutine, which every other write waits behind.
//
// The promise it keeps is the one SyncAlways kept: nothing of a record is
// acknowledged, shown or built upon before it is on disk. Durable(seq)
// returns only once a flush that began after the record at seq was stored
// has returned without error (a flush syncs what was written to the files
// before it began; a record is written to the file before the server
// acknowledges it), and every path by which a record leaves the stream
// waits for it:
//   - a write (publishRecord) waits before it returns, so before the
//     gateway answers the request that made it;
//   - the view (view.record) waits before it takes a record in, so
//     reads, heartbeat answers and the writes that start from the view
//     never see a record that a power loss could take back;
//   - watches (and the hub's feed of events, webhooks and event streams)
//     wait before they deliver a record's events;
//   - reads of the stream leader (load, scan) wait for what they read;
//   - the read index is the highest durable sequence (durable), which
//     covers every acknowledged write.
//
// So at most one record of an election is ever not yet durable: a writer
// computes the next record only from one it read through the paths
// above, and its compare-and-set is refused while a later record is
// stored. A power loss can take that one record back (it was never
// acknowledged nor shown), never an earlier one: the per-election limit
// (History, at least 2 in this mode) drops only records older than the
// one before it, and a block rewritten without the dropped records is
// synced before it replaces the old one, as before. Terms therefore never
// go back, and no answer given before the loss names a leadership the
// records do not hold after it.
//
// A crash of the process alone loses nothing either way: a record is in
// its file (the kernel's cache of it) before the server answers the
// publish. A flush syncs only while the store is set to sync on flush;
// one during which the server set it back is made again, and fails after
// a few (flush).
//
// A flush that fails (the store's write error) fails every write and read
// waiting for it with gateway.ErrUnavailable; the store keeps its error,
// so writes stay unavailable until the server restarts.
type groupCommit struct {
	store *flushedStore
	log   *slog.Logger

	durable atomic.Uint64 // every record at or below this sequence is on disk; set under mu

	mu      sync.Mutex
	asked   uint64          // flushes asked for (by number): the committer runs until done reaches it
	started uint64          // flushes begun
	done    uint64          // flushes returned
	err     error           // the last flush's error
	changed chan struct{}   // closed (and replaced) when a flush returns
	kick    chan struct{}   // tells the committer a flush is asked for
	quit    <-chan struct{} // closed when the backend is closed: Run returns, Wait fails
	waiting int             // calls of Wait waiting for a flush

	// beforeFlush, when set (by tests), is called as each flush of Run
	// begins; an error fails the flush.
	beforeFlush func() error
}

// newGroupCommit returns the group commit of store, after a first flush:
// records a previous process stored may not be on disk yet, and the
// watermark starts at the stream's last sequence only once they are. Run
// must run until quit is closed.
func newGroupCommit(store *flushedStore, log *slog.Logger, quit <-chan struct{}) (*groupCommit, error) {
	g := &groupCommit{store: store, log: log, changed: make(chan struct{}), kick: make(chan struct{}, 1), quit: quit}
	last, err := g.flush()
	if err != nil {
		return nil, err
	}
	g.durable.Store(last)
	return g, nil
}

// flush syncs the store and returns the last sequence stored before it
// began, every record up to which is now on disk.
//
// The store syncs its files on a flush only while it is set to sync on
// flush: set back to syncing every write (the server resets a store's
// settings when its configuration is updated, and around an atomic batch
// publish), its flush syncs only what is still buffered, not the files
// written meanwhile without a sync. So the setting is made again before
// the flush, and a flush during which it was reset may not have synced
// every record it would cover: it is made again, setting and all, up to
// flushAttempts times in all, and then fails. A flush made again began
// after every record the first would have covered was stored, so it
// covers them too, and its answer is the later last sequence it read.
// (The server resets the settings when a stream's configuration is
// updated, as a replica opening beside this one may do: once, not at
// every flush.)
func (g *groupCommit) flush() (uint64, error) {
	var err error
	for range flushAttempts {
		var last uint64
		if last, err = g.flushOnce(); !errors.Is(err, errSyncSettingsReset) {
			return last, err
		}
		g.log.LogAttrs(context.Background(), slog.LevelInfo, "nats: the records store's sync settings were reset during a flush; flushing again")
	}
	return 0, err
}

// flushAttempts bounds the flushes flush makes when the server resets the
// store's sync settings during them.
const flushAttempts = 3

// flushOnce is one flush of flush: the setting made, the store flushed,
// and the setting checked.
func (g *groupCommit) flushOnce() (uint64, error) {
	g.store.syncOnFlush()
	var st server.StreamState
	g.store.FastState(&st)
	if err := g.store.FlushAllPending(); err != nil {
		return 0, err
	}
	if g.store.closed.Load() {
		// A closed store returns from a flush without syncing anything.
		return 0, server.ErrStoreClosed
	}
	if !g.store.onFlush.Load() {
		return 0, errSyncSettingsReset
	}
	return st.LastSeq, nil
}

// errSyncSettingsReset fails a flush during which the server set the
// records store back to syncing every write (groupCommit.flush).
var errSyncSettingsReset = errors.New("nats: the records store's sync settings were reset during a flush")

// Durable returns the highest sequence known to be on disk: the read index
// of a replica over this store (every acknowledged write is at or below
// it), read in place.
func (g *groupCommit) Durable() uint64 { return g.durable.Load() }

// Wait returns once the record at seq, which the store has stored, is on
// disk, asking for a flush if none that began after the call covers it.
// Errors: gateway.ErrUnavailable when the flush fails, or ctx ends or the
// backend is closed first.
func (g *groupCommit) Wait(ctx context.Context, seq uint64) error {
	if g.durable.Load() >= seq {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.durable.Load() >= seq {
		return nil
	}
	need := g.started + 1 // a flush that begins after now
	if g.asked < need {
		g.asked = need
		select {
		case g.kick <- struct{}{}:
		default:
		}
	}
	g.waiting++
	defer func() { g.waiting-- }()
	for g.durable.Load() < seq {
		if g.done >= need {
			err := g.err
			if err == nil {
				err = fmt.Errorf("sequence %d is past the stream's last when the flush began", seq)
			}
			return fmt.Errorf("nats: records not on disk: %w: %w", gateway.ErrUnavailable, err)
		}
		ch := g.changed
		g.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = fmt.Errorf("nats: waiting for records to reach the disk: %w: %w", gateway.ErrUnavailable, ctx.Err())
		case <-g.quit:
			err = fmt.Errorf("nats: waiting for records to reach the disk: backend closed: %w", gateway.ErrUnavailable)
		}
		g.mu.Lock()
		if err != nil {
			return err
		}
	}
	return nil
}

// waiters returns how many calls of Wait wait for a flush.
func (g *groupCommit) waiters() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

// Run flushes whenever a flush is asked for, one at a time, until quit is
// closed; waiters that arrive during a flush share the next one.
func (g *groupCommit) Run() {
	for {
		g.mu.Lock()
		for g.asked <= g.done {
			g.mu.Unlock()
			select {
			case <-g.quit:
				return
			case <-g.kick:
			}
			g.mu.Lock()
		}
		g.started++
		n := g.started
		hook := g.beforeFlush
		g.mu.Unlock()

		var last uint64
		var err error
		if hook != nil {
			err = hook()
		}
		if err == nil {
			last, err = g.flush()
		}
		if err != nil {
			g.log.LogAttrs(context.Background(), slog.LevelError, "nats: records could not be synced to disk", slog.Any("err", err))
		}
		g.mu.Lock()
		g.done, g.err = n, err
		if err == nil && last > g.durable.Load() {
			g.durable.Store(last)
		}
		close(g.changed)
		g.changed = make(chan struct{})
		g.mu.Unlock()
	}
}

// durable returns once the record at seq, which the records stream holds,
// is on disk (groupCommit.Wait); at once when the stream syncs or
// replicates every record before acknowledging it. Errors:
// gateway.ErrUnavailable.
func (b *Backend) durable(ctx context.Context, seq uint64) error {
	if b.commit == nil {
		return nil
	}
	return b.commit.Wait(ctx, seq)
}
