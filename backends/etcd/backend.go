package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// Backend is a gateway.Backend over etcd v3. Create it with New and stop
// it with Close. All methods are safe for concurrent use.
type Backend struct {
	cfg    Config
	cli    *clientv3.Client
	keys   keys
	log    *slog.Logger
	cache  *cache
	leases *leaseBook

	revokes chan clientv3.LeaseID // leases to revoke, see revoke
	done    context.Context       // ends with Close
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

var (
	_ gateway.Backend = (*Backend)(nil)
	_ gateway.Runner  = (*Backend)(nil)
	_ gateway.Pinger  = (*Backend)(nil)
)

// New connects to etcd and starts following the keys under cfg.Prefix.
// Without credentials it does not wait for etcd: while etcd is unreachable,
// calls fail with gateway.ErrUnavailable and Ping says so. With a Username,
// etcd's client authenticates while connecting, so New fails with
// gateway.ErrUnavailable if no member answers within DialTimeout or the
// credentials are refused. It returns gateway.ErrInvalid for a
// configuration that cannot work (see Config.Validate).
func New(cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cli, err := cfg.client()
	if err != nil {
		return nil, err
	}
	k := keys{p: cfg.Prefix}
	ctx, stop := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, cli: cli, keys: k, log: cfg.Logger, cache: newCache(cli, k, cfg.Logger), leases: newLeaseBook(), revokes: make(chan clientv3.LeaseID, 1024), done: ctx, stop: stop}
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		b.cache.run(ctx, cfg.RequestTimeout)
	}()
	go func() {
		defer b.wg.Done()
		b.revoker(ctx)
	}()
	return b, nil
}

// Close stops following etcd and closes the connection. Watch channels
// close; candidates stay in etcd until their leases expire.
func (b *Backend) Close() error {
	b.stop()
	b.wg.Wait()
	return b.cli.Close()
}

// Client returns the etcd client, for tools and tests that need to look at
// the keys themselves.
func (b *Backend) Client() *clientv3.Client { return b.cli }

// reqCtx bounds one request (or one wait for the cache) by RequestTimeout.
func (b *Backend) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.RequestTimeout)
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
	return b.cache.read(rctx, func(*state) {})
}

// sync brings the cache up to etcd's current revision.
func (b *Backend) sync(ctx context.Context) error {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	resp, err := b.cli.Get(rctx, b.keys.settings("_sync"), clientv3.WithCountOnly())
	if err != nil {
		return translate(ctx, "read", err)
	}
	return b.cache.waitRev(rctx, resp.Header.Revision)
}

// waitRev waits until the cache holds rev, the revision of a write.
func (b *Backend) waitRev(ctx context.Context, rev int64) error {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	return b.cache.waitRev(rctx, rev)
}

// current returns the view of election from the cache. With fresh set, or
// when the cache does not know the election, it first syncs with etcd.
func (b *Backend) current(ctx context.Context, election string, fresh bool) (view, int64, error) {
	var (
		v   view
		rev int64
	)
	get := func() error {
		rctx, cancel := b.reqCtx(ctx)
		defer cancel()
		return b.cache.read(rctx, func(st *state) { v, rev = st.view(election), st.rev })
	}
	if !fresh {
		if err := get(); err != nil {
			return view{}, 0, err
		}
		if v.exists {
			return v, rev, nil
		}
	}
	if err := b.sync(ctx); err != nil {
		return view{}, 0, err
	}
	if err := get(); err != nil {
		return view{}, 0, err
	}
	return v, rev, nil
}

// Election implements gateway.Backend. It reads this replica's cache,
// syncing with etcd first when the cache does not know the election.
// Errors: gateway.ErrElectionNotFound, gateway.ErrUnavailable.
func (b *Backend) Election(ctx context.Context, election string) (gateway.Election, error) {
	v, rev, err := b.current(ctx, election, false)
	if err != nil {
		return gateway.Election{}, err
	}
	if !v.exists {
		return gateway.Election{}, fmt.Errorf("etcd: %q: %w", election, gateway.ErrElectionNotFound)
	}
	return b.snapshot(v, rev, time.Now()), nil
}

// Elections implements gateway.Backend: every election of the cache, at
// one revision. Errors: gateway.ErrUnavailable.
func (b *Backend) Elections(ctx context.Context) ([]gateway.Election, string, error) {
	var (
		out []gateway.Election
		rev int64
	)
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	now := time.Now()
	err := b.cache.read(rctx, func(st *state) {
		rev = st.rev
		for _, n := range st.names() {
			out = append(out, b.snapshot(st.view(n), rev, now))
		}
	})
	if err != nil {
		return nil, "", err
	}
	return out, revCursor(rev), nil
}

// Configure implements gateway.Backend. Settings never change who leads:
// the error cooldown applies to errors reported afterwards, the handover
// delay to expiries that happen afterwards. Errors: gateway.ErrUnavailable.
func (b *Backend) Configure(ctx context.Context, election string, s gateway.Settings) (gateway.Election, error) {
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Put(rctx, b.keys.settings(election), mustJSON(settingsOf(s, time.Now())))
	cancel()
	if err != nil {
		return gateway.Election{}, translate(ctx, fmt.Sprintf("configure %q", election), err)
	}
	if err := b.waitRev(ctx, resp.Header.Revision); err != nil {
		return gateway.Election{}, err
	}
	e, err := b.Election(ctx, election)
	if errors.Is(err, gateway.ErrElectionNotFound) {
		return gateway.Election{}, fmt.Errorf("etcd: configure %q: settings vanished: %w", election, gateway.ErrUnavailable)
	}
	return e, err
}

// snapshot turns a view into the gateway's Election.
func (b *Backend) snapshot(v view, rev int64, now time.Time) gateway.Election {
	e := gateway.Election{Name: v.name, Settings: v.settings, Term: v.term, Cursor: revCursor(rev)}
	e.Candidates = make([]gateway.Candidate, 0, len(v.line)+len(v.cooling))
	for _, x := range v.line {
		c := b.candidate(x, gateway.StateFollower)
		if x == v.leader {
			c.State, c.Term = gateway.StateLeader, v.term
			e.Leader = &gateway.Leader{ID: c.ID, Metadata: c.Metadata, Term: v.term, Since: v.lead.Since, ExpiresAt: c.ExpiresAt}
		}
		e.Candidates = append(e.Candidates, c)
	}
	for _, x := range v.cooling {
		c := b.candidate(x, gateway.StateError)
		c.CooldownUntil = x.value.CooldownUntil
		e.Candidates = append(e.Candidates, c)
	}
	if v.pending && len(v.line) > 0 {
		switch {
		case !v.lead.Until.IsZero():
			e.HandoverUntil = v.lead.Until
		case v.settings.HandoverDelay > 0:
			e.HandoverUntil = now.Add(v.settings.HandoverDelay) // not started yet: a reconciler is about to
		}
	}
	return e
}

func (b *Backend) candidate(x *entry, s gateway.State) gateway.Candidate {
	c := gateway.Candidate{ID: x.value.ID, Metadata: x.value.Metadata, TTL: x.value.ttl(), State: s, JoinedAt: x.value.At}
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

// status derives a candidate's Status from the cache, as of now.
func (b *Backend) status(ctx context.Context, op, election, id string) (gateway.Status, error) {
	v, rev, err := b.current(ctx, election, false)
	if err != nil {
		return gateway.Status{}, err
	}
	st, ok := gateway.StatusOf(b.snapshot(v, rev, time.Now()), id)
	if !ok {
		return gateway.Status{}, fmt.Errorf("etcd: %s %q: %w", op, id, gateway.ErrCandidateNotFound)
	}
	return st, nil
}
