package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// Backend is a gateway.Backend over etcd v3. Create it with New and stop
// it with Close. All methods are safe for concurrent use.
type Backend struct {
	cfg Config
	// cli sends each request to the members as routedClient says.
	cli     *clientv3.Client
	members *members
	keys    keys
	log     *slog.Logger
	cache   *cache
	leases  *leaseBook
	pool    *leasePool
	// index fetches etcd's revision for linearizable reads, barrier writes
	// a revision the watch delivers (see catchUp); each coalesces the calls
	// of concurrent requests.
	index, barrier *gateway.ReadIndex

	// now stamps what this replica writes. It decides no deadline: lease
	// expiries and the promise clock decide those (see plan). Tests set
	// it (export_test.go).
	now func() time.Time
	// mono is the monotonic clock promises are timed on (promise.go).
	mono clock

	revokes     chan clientv3.LeaseID // leases to revoke, see revoke
	revokeFails atomic.Int64          // revocations etcd did not answer, tried again (revoker)
	revocations chan revocation       // records of early revocations to write (revoked.go)
	revokedBook *revokedBook
	lastPass    atomic.Pointer[pass] // see Run
	done        context.Context      // ends with Close
	stop        context.CancelFunc
	wg          sync.WaitGroup
}

var (
	_ gateway.Backend = (*Backend)(nil)
	_ gateway.Runner  = (*Backend)(nil)
	_ gateway.Pinger  = (*Backend)(nil)

	_ gateway.Header           = (*Backend)(nil)
	_ gateway.ElectionCounter  = (*Backend)(nil)
	_ gateway.LeaderReader     = (*Backend)(nil)
	_ gateway.CandidateCounter = (*Backend)(nil)
)

// New connects to etcd and starts following the keys under cfg.Prefix.
// Without credentials it does not wait for etcd: while etcd is unreachable,
// calls fail with gateway.ErrUnavailable and Ping says so. With a Username,
// etcd's client authenticates while connecting, so New fails with
// gateway.ErrUnavailable if no member answers within DialTimeout or the
// credentials are refused. It returns gateway.ErrInvalid for a
// configuration that cannot work (see Config.Validate).
func New(cfg Config) (*Backend, error) {
	return newBackend(cfg, clock{now: time.Now})
}

// newBackend is New with the clock promises are timed on.
func newBackend(cfg Config, mono clock) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	ms, err := newMembers(ctx, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	cli := routedClient(ctx, ms)
	k := keys{p: cfg.Prefix}
	ms.batch.election = k.electionOf()
	b := &Backend{cfg: cfg, cli: cli, members: ms, keys: k, log: cfg.Logger, cache: newCache(cli, ms, k, cfg.Logger), leases: newLeaseBook(), now: time.Now, mono: mono,
		revokes: make(chan clientv3.LeaseID, 1024), revocations: make(chan revocation, 256), revokedBook: newRevokedBook(), done: ctx, stop: stop}
	b.cache.clock, b.cache.departed = mono.now, b.departed
	b.pool = newLeasePool(b)
	b.index, b.barrier = gateway.NewReadIndex(b.head), gateway.NewReadIndex(b.writeBarrier)
	b.wg.Go(func() { ms.run(ctx) })
	b.wg.Go(func() { b.cache.run(ctx, cfg.RequestTimeout) })
	b.wg.Go(func() { b.revoker(ctx) })
	b.wg.Go(func() { b.writeRevoked(ctx) })
	return b, nil
}

// Close stops following etcd and closes the connections. Watch channels
// close; candidates stay in etcd until their leases expire. Leases granted
// ahead of campaigns (leasePool) are revoked.
func (b *Backend) Close() error {
	b.pool.close()
	b.stop()
	b.wg.Wait()
	_ = b.cli.Close() // ends with the context Close cancelled: its error says so
	return b.members.close()
}

// Client returns the etcd client, for tools and tests that need to look at
// the keys themselves.
func (b *Backend) Client() *clientv3.Client { return b.cli }

// reqCtx bounds one request (or one wait for the cache) by RequestTimeout.
func (b *Backend) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.RequestTimeout)
}

// fetchCtx bounds a fetch that a gateway.ReadIndex runs for several
// callers, whose context carries none of their cancellations: by
// RequestTimeout, and by Close, so that no fetch outlives the backend.
func (b *Backend) fetchCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := b.reqCtx(ctx)
	stop := context.AfterFunc(b.done, cancel)
	return rctx, func() { stop(); cancel() }
}

// Ping implements gateway.Pinger: a linearizable read, which needs a
// reachable member with a quorum behind it, and a loaded state. It returns
// gateway.ErrUnavailable otherwise.
func (b *Backend) Ping(ctx context.Context) error {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	if _, err := b.cli.Get(rctx, b.keys.settings("_ping"), clientv3.WithCountOnly()); err != nil {
		return translate(ctx, "ping", err)
	}
	var verr error
	if err := b.cache.read(rctx, func(st *state) { verr = st.checkVersion() }); err != nil {
		return err
	}
	return verr
}

// barrierGrace is how long a read waits for the cache to reach the read
// index by itself (events, or in-order progress notifications) before it
// writes a barrier to move it there.
const barrierGrace = 50 * time.Millisecond

// head fetches etcd's current revision: a linearizable count-only read of
// a key that does not exist, so it costs etcd a read index and no range.
// It is the fetch of b.index.
func (b *Backend) head(ctx context.Context) (uint64, error) {
	rctx, cancel := b.fetchCtx(ctx)
	defer cancel()
	resp, err := b.cli.Get(rctx, b.keys.settings("_head"), clientv3.WithCountOnly())
	if err != nil {
		return 0, translate(ctx, "read index", err)
	}
	return uint64(resp.Header.Revision), nil
}

// writeBarrier writes the barrier key under the prefix and returns the
// revision of the write, whose event the watch is sure to deliver. It is
// the fetch of b.barrier.
func (b *Backend) writeBarrier(ctx context.Context) (uint64, error) {
	rctx, cancel := b.fetchCtx(ctx)
	defer cancel()
	resp, err := b.cli.Put(rctx, b.keys.barrier(), "")
	if err != nil {
		return 0, translate(ctx, "barrier", err)
	}
	return uint64(resp.Header.Revision), nil
}

// Head implements gateway.Header: the id of the newest event, once the
// cache has caught up with etcd's current revision (through the read
// index), or "<rev>" of the cache's load when no event came since. Not
// etcd's revision itself: KV writes, timer markers and the barrier move it
// without an event, and a hub waiting for an event at such a revision
// would never be caught up. Errors: gateway.ErrUnavailable.
func (b *Backend) Head(ctx context.Context) (string, error) {
	if err := b.fresh(ctx); err != nil {
		return "", err
	}
	var last string
	err := b.readCache(ctx, func(st *state) { last = st.last })
	return last, err
}

// MaxCursor implements gateway.CursorBound: the revision the cache has
// caught up with, past etcd's revision fetched through the read index. A
// snapshot's cursor is the revision it was read at, which may be past
// Head, and must be: a cursor at the newest event's revision would be
// compacted away while the election stays quiet and KV writes go on.
// Errors: gateway.ErrUnavailable.
func (b *Backend) MaxCursor(ctx context.Context) (string, error) {
	if err := b.fresh(ctx); err != nil {
		return "", err
	}
	var rev int64
	err := b.readCache(ctx, func(st *state) { rev = st.rev })
	return revCursor(rev), err
}

// CountElections implements gateway.ElectionCounter from the cache, which
// keeps the count as it applies changes: no election is built, and no
// request is made to etcd.
func (b *Backend) CountElections(ctx context.Context) (int, error) {
	var n int
	err := b.readCache(ctx, func(st *state) { n = st.count })
	return n, err
}

// fresh waits until the cache reflects every write etcd acknowledged
// before fresh was called: it fetches etcd's revision through the read
// index (one call shared by concurrent reads, made after this one began)
// and catches up with it.
func (b *Backend) fresh(ctx context.Context) error {
	rev, err := b.index.Revision(ctx)
	if err != nil {
		return err
	}
	return b.catchUp(ctx, int64(rev))
}

// freshRead is fresh for the reads of elections (Election, Elections,
// ElectionLeader), the only callers that honour a local read
// (gateway.WithLocalRead): one skips the read index and answers from the
// cache as it is while a watch follows etcd and has delivered within
// MemberTimeout (cache.following), lagging etcd by what the watch has not
// delivered yet. A member that stops sending is thus not read from for
// longer than MemberTimeout; one cut off from its quorum that goes on
// answering ends the watch itself once it knows it has no leader (the
// watch requires one), within a few of etcd's election timeouts. Then,
// and while the watch moves to another member, a local read takes the
// read index like every other. Every other caller of fresh (a write's
// checks, heartbeats, promises, the reconciler) is linearizable whatever
// its context carries.
func (b *Backend) freshRead(ctx context.Context) error {
	if gateway.LocalRead(ctx) && b.cache.following(b.members.timeout) {
		return nil
	}
	return b.fresh(ctx)
}

// catchUp waits until the cache answers as of rev or later. When neither
// events nor progress notifications bring it there within barrierGrace
// (rev touched nothing under the prefix and the members' progress
// notifications cannot be trusted, see ordersProgress), it writes a
// barrier under the prefix, shared by concurrent waiters, and waits for
// its event: once the cache has applied a revision after rev, it holds
// every change up to rev.
func (b *Backend) catchUp(ctx context.Context, rev int64) error {
	if at, loaded := b.cache.status(); loaded && at >= rev {
		return nil // there already: no timer to set up (most reads under load)
	}
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	gctx, gcancel := context.WithTimeout(rctx, barrierGrace)
	err := b.cache.waitRev(gctx, rev)
	gcancel()
	if err == nil || rctx.Err() != nil {
		return err
	}
	bar, err := b.barrier.Revision(rctx)
	if err != nil {
		return err
	}
	return b.cache.waitApplied(rctx, int64(bar))
}

// readCache runs f on the cache's state once it is loaded, waiting for
// the load at most RequestTimeout. A loaded cache, which every request
// after the first few finds, sets up no timer.
func (b *Backend) readCache(ctx context.Context, f func(st *state)) error {
	if b.cache.tryRead(f) {
		return nil
	}
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	return b.cache.read(rctx, f)
}

// waitApplied waits until the cache holds rev, the revision of a write
// under the prefix that etcd acknowledged.
func (b *Backend) waitApplied(ctx context.Context, rev int64) error {
	if b.cache.holds(rev) {
		return nil // there already (the write's events came first): no timer
	}
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	return b.cache.waitApplied(rctx, rev)
}

// cached returns the view of election from the cache as it is, with the
// revision the cache answers as of.
// cursor is the cursor of a snapshot of the view: the revision it was
// read at (see MaxCursor).
func (b *Backend) cached(ctx context.Context, election string) (v view, cursor string, err error) {
	err = b.readCache(ctx, func(st *state) { v, cursor = st.view(election), revCursor(st.rev) })
	return v, cursor, err
}

// current returns the view of election once the cache reflects every
// write acknowledged before the call (see fresh).
func (b *Backend) current(ctx context.Context, election string) (view, string, error) {
	if err := b.fresh(ctx); err != nil {
		return view{}, "", err
	}
	return b.cached(ctx, election)
}

// Election implements gateway.Backend: a linearizable read, from this
// replica's cache once it has caught up with etcd's revision fetched after
// the call began, or, for a local read, from the cache as it is
// (freshRead). Errors: gateway.ErrElectionNotFound,
// gateway.ErrUnavailable.
func (b *Backend) Election(ctx context.Context, election string) (gateway.Election, error) {
	if err := b.freshRead(ctx); err != nil {
		return gateway.Election{}, err
	}
	v, cursor, err := b.cached(ctx, election)
	if err != nil {
		return gateway.Election{}, err
	}
	if !v.exists {
		return gateway.Election{}, fmt.Errorf("etcd: %q: %w", election, gateway.ErrElectionNotFound)
	}
	return b.snapshot(v, cursor, b.now()), nil
}

// Elections implements gateway.Backend: every election of the cache, at
// one revision, read as Election reads. Errors: gateway.ErrUnavailable.
func (b *Backend) Elections(ctx context.Context) ([]gateway.Election, string, error) {
	if err := b.freshRead(ctx); err != nil {
		return nil, "", err
	}
	var (
		out    []gateway.Election
		cursor string
	)
	now := b.now()
	err := b.readCache(ctx, func(st *state) {
		cursor = revCursor(st.rev)
		for _, n := range st.names() {
			out = append(out, b.snapshot(st.view(n), cursor, now))
		}
	})
	if err != nil {
		return nil, "", err
	}
	return out, cursor, nil
}

// Configure implements gateway.Backend. The error cooldown applies to
// errors reported afterwards, the handover delay to expiries that happen
// afterwards. Raising the holders fills the new slots from the line at
// once (the reconcile after the write); lowering them below the holders
// ends the newest holderships in the transaction that writes the
// settings (guarded by the lead record, see lowered), and their slots
// stay taken until their promises lapse. Turning preempt on may start a
// preemption, which is made before the answer too (as gateway.Record's
// Configure makes it). Errors: gateway.ErrUnavailable.
func (b *Backend) Configure(ctx context.Context, election string, s gateway.Settings) (gateway.Election, error) {
	op := fmt.Sprintf("configure %q", election)
	var rev int64
	for attempt := 0; ; attempt++ {
		if err := gateway.Conflicts.Try(ctx, attempt); err != nil {
			return gateway.Election{}, fmt.Errorf("etcd: %s: %w", op, err)
		}
		v, _, err := b.cached(ctx, election)
		if err != nil {
			return gateway.Election{}, err
		}
		now := b.now()
		var cmps []clientv3.Cmp
		ops := []clientv3.Op{clientv3.OpPut(b.keys.settings(election), mustJSON(settingsOf(s, now)))}
		if n := s.HolderLimit(); n < v.settings.HolderLimit() || len(v.holders) > n {
			// Lowering compares the lead record it ends holderships in,
			// and every acknowledgement compares the settings: of the two
			// that race, one fails, so no holdership begins under a
			// setting it was not counted with.
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(b.keys.lead(election)), "=", v.leadMod),
				// The key it writes, as every transaction elector
				// commits compares (see Connections in the package doc).
				clientv3.Compare(clientv3.ModRevision(b.keys.settings(election)), "=", v.settingsMod))
			if len(v.holders) > n {
				ops = append(ops, b.putLead(v, lowered(v, n, now))...)
			}
		}
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Txn(rctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return gateway.Election{}, translate(ctx, op, err)
		}
		if !resp.Succeeded {
			if err := b.catchUp(ctx, resp.Header.Revision); err != nil {
				return gateway.Election{}, err
			}
			continue
		}
		rev = resp.Header.Revision
		break
	}
	// The cache at the write's revision reflects every write acknowledged
	// before this one: it answers as a linearizable read would.
	if err := b.waitApplied(ctx, rev); err != nil {
		return gateway.Election{}, err
	}
	b.reconcileBeforeAnswer(ctx, "configure", election)
	v, cursor, err := b.cached(ctx, election)
	if err != nil {
		return gateway.Election{}, err
	}
	if !v.exists {
		return gateway.Election{}, fmt.Errorf("etcd: %s: settings vanished: %w", op, gateway.ErrUnavailable)
	}
	return b.snapshot(v, cursor, b.now()), nil
}

// snapshot turns a view into the gateway's Election.
func (b *Backend) snapshot(v view, cursor string, now time.Time) gateway.Election {
	return b.snapshotOf(v, cursor, now, true)
}

// leaderSnapshot is snapshot without the candidates: what
// gateway.LeaderReader returns (see Record.LeaderSnapshot), by the same
// code, from a view or a leaderView.
func (b *Backend) leaderSnapshot(v view, cursor string, now time.Time) gateway.Election {
	return b.snapshotOf(v, cursor, now, false)
}

// snapshotOf is snapshot, or leaderSnapshot without all.
func (b *Backend) snapshotOf(v view, cursor string, now time.Time, all bool) gateway.Election {
	e := gateway.Election{Name: v.name, Settings: v.settings, Term: v.term, Cursor: cursor, Transfer: v.transfer.gateway()}
	if v.settings.HolderLimit() > 1 {
		e.Holders = make([]gateway.Leader, 0, len(v.holders))
	}
	line := v.line[:len(v.holders)] // the holders are the head of the line
	if all {
		line = v.line
		e.Candidates = make([]gateway.Candidate, 0, len(v.line)+len(v.cooling))
	}
	for i, x := range line {
		c := b.candidate(x, gateway.StateFollower)
		if i < len(v.holders) {
			s := v.held[i]
			c.State, c.Term = gateway.StateLeader, s.Term
			l := gateway.Leader{ID: c.ID, Metadata: c.Metadata, Term: s.Term, Since: s.Since, ExpiresAt: c.ExpiresAt}
			if i == 0 {
				e.Leader = &l
			}
			if e.Holders != nil {
				e.Holders = append(e.Holders, l)
			}
		}
		if all {
			e.Candidates = append(e.Candidates, c)
		}
	}
	for _, x := range v.cooling { // none in a leaderView
		c := b.candidate(x, gateway.StateError)
		c.CooldownUntil = x.value.CooldownUntil
		e.Candidates = append(e.Candidates, c)
	}
	// The slots held back by handover delays and promises: when the next
	// frees, on this replica's clock.
	e.HandoverUntil = v.heldUntil(now, b.mono.now())
	return e
}

func (b *Backend) candidate(x *entry, s gateway.State) gateway.Candidate {
	c := gateway.Candidate{ID: x.value.ID, Metadata: x.value.Metadata, TTL: x.value.ttl(), Priority: x.priority(), State: s, JoinedAt: x.value.At}
	if x.native {
		c.JoinedAt = x.seen
	}
	i, known := b.leases.get(x.lease)
	switch {
	case known:
		c.ExpiresAt = i.expires
		if x.native {
			c.TTL = i.ttl
		}
	case !x.native:
		c.ExpiresAt = x.value.At.Add(c.TTL) // at least until then
	default:
		// A native lease this replica has not looked up yet (Run does
		// within a second): unknown, shown as "now" rather than left empty.
		c.ExpiresAt = time.Now()
	}
	return c
}

// status derives the Status of candidate id, whose token hash is
// tokenHash, from the cache as it is, as of now; it is what
// gateway.StatusOf returns for the snapshot of the election, without
// building the snapshot. Callers first make sure the cache is recent
// enough for their answer (fresh, or waitApplied of their write). Errors:
// gateway.ErrCandidateNotFound, gateway.ErrTokenMismatch,
// gateway.ErrUnavailable.
func (b *Backend) status(ctx context.Context, op, election, id, tokenHash string) (gateway.Status, error) {
	var (
		st standing
		ok bool
	)
	if err := b.readCache(ctx, func(s *state) { st, ok = s.standing(election, id) }); err != nil {
		return gateway.Status{}, err
	}
	if !ok {
		return gateway.Status{}, fmt.Errorf("etcd: %s %q: %w", op, id, gateway.ErrCandidateNotFound)
	}
	if !gateway.TokenMatches(st.x.value.TokenHash, tokenHash) {
		return gateway.Status{}, fmt.Errorf("etcd: %s %q: %w", op, id, gateway.ErrTokenMismatch)
	}
	out := gateway.Status{Election: election, Position: st.ahead, Term: st.term, Transfer: st.transfer.gateway()}
	switch {
	case st.cooling:
		out.Candidate = b.candidate(st.x, gateway.StateError)
		out.Candidate.CooldownUntil = st.x.value.CooldownUntil
		out.Position = -1
	default:
		out.Candidate = b.candidate(st.x, gateway.StateFollower)
	}
	if st.own != nil {
		out.Candidate.State, out.Candidate.Term, out.Term = gateway.StateLeader, st.own.Term, st.own.Term
	}
	holder := func(x *entry, s *slotValue) gateway.Leader {
		c := out.Candidate
		if x != st.x {
			c = b.candidate(x, gateway.StateFollower)
		}
		return gateway.Leader{ID: c.ID, Metadata: c.Metadata, Term: s.Term, Since: s.Since, ExpiresAt: c.ExpiresAt}
	}
	if st.leader != nil {
		l := holder(st.leader, st.lslot)
		out.Leader = &l
	}
	if st.holders != nil {
		out.Holders = make([]gateway.Leader, len(st.holders))
		for i, n := range st.holders {
			out.Holders[i] = holder(n.x, n.s)
		}
	}
	return out, nil
}
