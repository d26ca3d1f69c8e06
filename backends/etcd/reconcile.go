package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// action is one transition a reconciler makes: a transaction whose
// comparisons hold only if the election is still as the reconciler saw it,
// so that when several replicas try the same action, exactly one succeeds.
type action struct {
	what string
	cmps []clientv3.Cmp
	ops  []clientv3.Op
	// timer, if set, is a marker key that the transaction also writes, on
	// a lease granted just before it (timers.go).
	timer *timerPut
	// revoke, if set, is a lease to revoke once the transaction applied.
	revoke clientv3.LeaseID
}

// do runs one action and waits until the cache holds its outcome (ours or
// the write that beat it). ok reports whether it applied.
func (b *Backend) do(ctx context.Context, election string, a action) (ok bool, err error) {
	ops := a.ops
	var lease clientv3.LeaseID
	if a.timer != nil {
		var put clientv3.Op
		if lease, put, err = b.grantMarker(ctx, *a.timer); err != nil {
			return false, translate(ctx, a.what+" in "+election, err)
		}
		ops = append(slices.Clip(ops), put)
	}
	rctx, cancel := b.reqCtx(ctx)
	resp, err := b.cli.Txn(rctx).If(a.cmps...).Then(ops...).Commit()
	cancel()
	if lease != 0 && notApplied(resp, err) {
		b.revokeOwn(lease)
	}
	if leaseGone(err) && a.timer == nil {
		// A key it moves is on a lease that just expired: the election is
		// about to change, as after a failed comparison.
		return false, b.fresh(ctx)
	}
	if leaseGone(err) {
		// The lease gone may be the marker's own, which expired before the
		// transaction arrived: it holds no key, so no event will come to
		// plan the election again. An error, which Run retries.
		return false, fmt.Errorf("etcd: %s in %q: a lease it puts a key on has expired: %w", a.what, election, gateway.ErrUnavailable)
	}
	if err != nil {
		return false, translate(ctx, a.what+" in "+election, err)
	}
	if resp.Succeeded {
		b.log.LogAttrs(ctx, slog.LevelDebug, "etcd: "+a.what, slog.String("election", election), slog.Int64("revision", resp.Header.Revision))
		if a.revoke != 0 {
			b.revoke(a.revoke)
		}
		return true, b.waitApplied(ctx, resp.Header.Revision)
	}
	// The revision of a failed comparison is etcd's current one, which
	// includes the write that beat us but need not touch the prefix.
	return false, b.catchUp(ctx, resp.Header.Revision)
}

// reconcileBeforeAnswer makes the actions due in election after a write
// of op (acknowledging holders, moving keys for a transfer or priorities,
// starting a preemption) before the write answers, rather than at the
// reconcilers' next pass: so the answer shows them, as gateway.Record's
// transition includes them, and a request that follows at once finds them
// made. A failure is only logged: the answer is true at the cache's
// revision, and the actions are Run's job too.
func (b *Backend) reconcileBeforeAnswer(ctx context.Context, op, election string) {
	if err := b.reconcile(ctx, election); err != nil {
		b.log.LogAttrs(ctx, slog.LevelDebug, "etcd: reconcile after "+op, slog.String("election", election), slog.String("error", err.Error()))
	}
}

// reconcileRounds bounds the actions reconcile makes: enough to
// acknowledge a few holders and move a few keys into priority order; the
// reconcilers (Run) do the rest.
const reconcileRounds = 16

// reconcile makes the actions due in one election now, as a writer does
// right after its own write so that its answer already reflects them.
func (b *Backend) reconcile(ctx context.Context, election string) error {
	for range reconcileRounds {
		v, _, err := b.cached(ctx, election)
		if err != nil {
			return err
		}
		acts, _ := b.plan(v, b.now(), b.mono.now())
		if len(acts) == 0 {
			return nil
		}
		if _, err := b.do(ctx, election, acts[0]); err != nil {
			return err
		}
	}
	return nil
}

// Run implements gateway.Runner: the reconciler. It makes the due actions
// of the elections the cache saw change (a timer ends with such a change:
// etcd deletes its marker), and retries those whose action failed with an
// error; so a pass costs the same with ten elections as with ten
// thousand. Any number of replicas may run it at once, as every action is
// a guarded transaction. It also refreshes what the replica knows of
// lease expiries. It returns nil when ctx ends.
func (b *Backend) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.refreshLeases(ctx)
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	due := newDueSet()           // election → when its next action is due, on the promise clock
	failed := map[string]int64{} // election → cache revision at which its action's comparison failed
	retry := map[string]bool{}   // elections whose action failed with an error
	replan := map[string]bool{}  // elections whose action's comparison failed: planned again at the next revision
	backoff := time.Duration(0)
	refused := false // the last pass acted on nothing (checkVersion)
	for {
		changed := b.cache.changes()
		seen, _ := b.cache.status() // every election changed up to seen is dirty or planned
		dirty, all := b.cache.takeDirty()
		now, mono := b.now(), b.mono.now()
		names := map[string]bool{}
		for _, n := range dirty {
			names[n] = true
			delete(failed, n)
		}
		for _, n := range due.popDue(mono) {
			names[n] = true
			delete(failed, n) // time moved: what failed may be due now
		}
		for n := range retry {
			names[n] = true
		}
		clear(retry)
		// A write that beat an action need not mark its election dirty
		// (a leader's promise does not): plan it again, once the cache
		// has moved past the failure (see failed).
		for n := range replan {
			names[n] = true
		}
		clear(replan)
		var (
			views []view
			rev   int64
			verr  error
		)
		_ = b.cache.read(ctx, func(st *state) {
			rev, verr = st.rev, st.checkVersion()
			if all || refused {
				clear(failed)
				for n := range st.elections {
					names[n] = true
				}
			}
			if verr != nil {
				return // it acts on nothing (see checkVersion)
			}
			for n := range names {
				views = append(views, st.view(n))
			}
		})
		// A pass that refused planned nothing: once this replica may act
		// again, it plans every election.
		refused = verr != nil
		if verr != nil && ctx.Err() == nil {
			b.log.LogAttrs(ctx, slog.LevelError, "etcd: reconcile", slog.String("error", verr.Error()))
		}
		for _, v := range views {
			acts, at := b.plan(v, now, mono)
			due.set(v.name, at)
			if len(acts) == 0 || failed[v.name] == rev {
				continue
			}
			for _, a := range acts {
				ok, err := b.do(ctx, v.name, a)
				if err != nil {
					if ctx.Err() == nil {
						b.log.LogAttrs(ctx, slog.LevelWarn, "etcd: reconcile", slog.String("election", v.name), slog.String("action", a.what), slog.String("error", err.Error()))
					}
					backoff = min(max(2*backoff, 100*time.Millisecond), 2*time.Second)
					retry[v.name] = true
					break
				}
				if !ok {
					failed[v.name], replan[v.name] = rev, true
					break
				}
				backoff = 0
			}
		}
		b.lastPass.Store(&pass{rev: seen, mono: mono})
		wait := time.Hour
		if t, ok := due.next(); ok {
			wait = min(wait, max(t.Sub(b.mono.now()), 0))
		}
		if len(retry) > 0 {
			wait = min(wait, backoff)
			changed = nil // changes wait for the backoff; they stay dirty meanwhile
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-timer.C:
		case <-b.mono.moved:
		}
	}
}

// pass is what the last pass of Run planned: every election changed up to
// cache revision rev, and every one due by mono on the promise clock.
// Tests wait on it (export_test.go).
type pass struct {
	rev  int64
	mono time.Time
}

// refreshLeases keeps the lease book current for every candidate's lease:
// each second it hands the book the leases that came and went in the
// cache's state and has it look up those due; once a minute, and after
// the state was loaded again, it makes the book's leases the state's.
func (b *Backend) refreshLeases(ctx context.Context) {
	const resyncEvery = 60
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var seen *state
	for pass := 0; ; pass++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		_ = b.cache.read(ctx, func(st *state) {
			if st.leases == nil {
				return
			}
			born, died, overflow := st.leases.take()
			if st != seen || overflow || pass%resyncEvery == 0 {
				seen = st
				b.leases.resync(st.leases.n, now)
				return
			}
			b.leases.track(born, died, now)
		})
		b.leases.refresh(ctx, b.cli, b.cfg.RequestTimeout)
	}
}
