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

// plan returns the actions due in v, and next, when the next one is due
// on the promise clock (promise.go): now stamps what the actions write and
// the "until" shown to users, mono is the promise clock's time.
//
//   - A leader whose promise lapsed at mono while etcd still holds its key:
//     expire it (expireLeader). Otherwise next is when it lapses.
//   - No acknowledged leader, no handover pending, a line: acknowledge the
//     head of the line (write the lead record naming it), unless the last
//     leadership expired and its promise holds (then next is when it
//     lapses).
//   - A handover pending (the named leader's key went without elector ending
//     it): start the delay (write "until" and the delay's marker key), or
//     once etcd has deleted the marker and the leader's promise has lapsed
//     acknowledge the head of the line, or record the end if nobody waits.
//   - A cooling candidate whose cooldown's marker etcd deleted: re-create
//     its candidacy key, at the back of the line, on its lease.
//   - A delay or cooldown written without a marker (by an older version):
//     give it one of its full length, or of what "until" says is left if
//     that is longer. It ends late by at most that much, never early.
//   - A pending transfer (transfer.go): move the followers between the
//     leader and the target behind the target, one per action; after the
//     leader expired, the keys ahead of the target, then acknowledge it.
//     A transfer whose target expired: drop it from the lead record.
//   - Otherwise, a line out of priority order: move the next key that
//     must go behind a candidate of higher priority (reorder), the head's
//     too while nobody leads, whom nobody is acknowledged before; with the
//     line in order and preempt set, start a preemption (preempt).
//
// Whether a delay or cooldown ended is whether etcd still holds its marker
// key, so a replica whose wall clock runs ahead cannot end one early (see
// timers.go). Whether a promise lapsed is this replica's monotonic clock
// since it held the promise, which etcd committed after the heartbeat was
// sent: never before the candidate's own deadline.
func (b *Backend) plan(v view, now, mono time.Time) (acts []action, next time.Time) {
	leadKey := b.keys.lead(v.name)
	leadIs := clientv3.Compare(clientv3.ModRevision(leadKey), "=", v.leadMod)
	if l := v.leader; l != nil && !l.native {
		if end, ok := v.promiseLapses(); ok {
			if !mono.Before(end) {
				return []action{b.expireLeader(v, now)}, time.Time{}
			}
			next = end
		}
	}
	hold, held := v.hold(mono)
	if held {
		next = hold
	}
	ack := func(prevEnd string) (action, bool) {
		x := v.line[0]
		var prev *gateway.TermRef
		if v.lead != nil {
			prev = &gateway.TermRef{ID: v.lead.ID, Term: v.lead.Term}
		}
		if v.pending && v.transfer != nil && v.target > 0 && !slices.ContainsFunc(v.line[:v.target], func(y *entry) bool { return y.native }) {
			// The leader the transfer was for is gone (it expired): its
			// target, not the head, leads next. Nobody leads meanwhile, so
			// the keys ahead of it (elector's: no native key can get ahead
			// of a target, see Transfer) move behind it one by one first.
			return b.moveTargetUp(v, leadIs), true
		}
		if held {
			return action{}, false // the expired leader's promise still runs
		}
		if _, unsorted := b.reorder(v); unsorted {
			return action{}, false // the line goes in priority order first (below)
		}
		return action{what: "acknowledge leader",
			cmps: []clientv3.Cmp{leadIs, clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create)},
			ops:  []clientv3.Op{clientv3.OpPut(leadKey, mustJSON(acknowledge(x, prev, prevEnd, now)))}}, true
	}
	switch {
	case v.pending && v.lead.Until.IsZero() && v.settings.HandoverDelay > 0:
		l := *v.lead
		l.Until, l.At, l.Timed = now.Add(v.settings.HandoverDelay), now, true
		acts = append(acts, action{what: "start handover delay", cmps: []clientv3.Cmp{leadIs}, ops: []clientv3.Op{clientv3.OpPut(leadKey, mustJSON(l))},
			timer: &timerPut{key: b.keys.handoverMark(v.name), value: markerValue{Term: l.Term, Until: l.Until}, ttl: v.settings.HandoverDelay}})
	case v.pending && !v.lead.Until.IsZero() && !v.lead.Timed:
		l := *v.lead
		l.Timed = true
		acts = append(acts, action{what: "time handover delay in etcd", cmps: []clientv3.Cmp{leadIs}, ops: []clientv3.Op{clientv3.OpPut(leadKey, mustJSON(l))},
			timer: &timerPut{key: b.keys.handoverMark(v.name), value: markerValue{Term: l.Term, Until: l.Until}, ttl: max(v.settings.HandoverDelay, l.Until.Sub(now))}})
	case v.pending && !v.lead.Until.IsZero() && v.handover != nil && v.handover.Term == v.lead.Term:
		// The delay's marker is still in etcd: its lease has not expired.
	case v.pending && len(v.line) > 0:
		if a, ok := ack(gateway.ReasonExpired); ok {
			acts = append(acts, a)
		}
	case v.pending:
		l := *v.lead
		l.Ended, l.Until, l.Timed, l.At, l.Transfer = gateway.ReasonExpired, time.Time{}, false, now, nil
		acts = append(acts, action{what: "end expired leadership", cmps: []clientv3.Cmp{leadIs}, ops: []clientv3.Op{clientv3.OpPut(leadKey, mustJSON(l))}})
	case v.leader == nil && len(v.line) > 0:
		prevEnd := ""
		if v.lead != nil {
			prevEnd = v.lead.Ended
		}
		if a, ok := ack(prevEnd); ok {
			acts = append(acts, a)
		}
	case v.lead != nil && v.lead.Transfer != nil && v.transfer == nil:
		// A transfer whose target left the line without elector removing
		// it (it expired): drop it from the record.
		l := *v.lead
		l.Transfer, l.At = nil, now
		acts = append(acts, action{what: "drop cancelled transfer", cmps: []clientv3.Cmp{leadIs}, ops: []clientv3.Op{clientv3.OpPut(leadKey, mustJSON(l))}})
	}
	// At most one of these: each moves the line or the record another
	// would compute from.
	if v.leader != nil && v.transfer != nil && v.target > 1 && blocked(v, v.target) == nil {
		acts = append(acts, b.moveTargetUp(v, leadIs))
	} else if a, ok := b.reorder(v); ok {
		acts = append(acts, a)
	} else if a, ok := b.preempt(v, now); ok {
		acts = append(acts, a)
	}
	for _, x := range v.cooling {
		if v.cooldowns[x.hex] {
			continue // the cooldown's marker is still in etcd
		}
		ie, ok := v.ids[x.value.ID]
		if !ok || ie.hex != x.hex {
			continue // expiring: its id key is already gone
		}
		coolKey := b.keys.cooling(v.name, x.hex)
		if !x.value.Timed {
			timed := x.value
			timed.Timed = true
			acts = append(acts, action{what: "time cooldown in etcd",
				cmps:  []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod)},
				ops:   []clientv3.Op{clientv3.OpPut(coolKey, mustJSON(timed), clientv3.WithLease(clientv3.LeaseID(x.lease)))},
				timer: &timerPut{key: b.keys.cooldownMark(v.name, x.hex), value: markerValue{Until: x.value.CooldownUntil}, ttl: max(v.settings.ErrorCooldown, x.value.CooldownUntil.Sub(now))}})
			continue
		}
		back := x.value
		back.CooldownUntil, back.At, back.Timed = time.Time{}, now, false
		k := b.keys.candidacy(v.name, x.hex)
		acts = append(acts, action{what: "rejoin after cooldown",
			cmps: []clientv3.Cmp{
				clientv3.Compare(clientv3.ModRevision(coolKey), "=", x.mod),
				clientv3.Compare(clientv3.CreateRevision(b.keys.candidateID(v.name, x.value.ID)), "=", ie.create),
				clientv3.Compare(clientv3.CreateRevision(k), "=", 0),
			},
			ops: []clientv3.Op{clientv3.OpDelete(coolKey), clientv3.OpPut(k, mustJSON(back), clientv3.WithLease(clientv3.LeaseID(x.lease)))}})
	}
	return acts, next
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
		b.revoke(lease)
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
// of op (acknowledging the head of the line, moving keys for a transfer
// or priorities, starting a preemption) before the write answers, rather
// than at the reconcilers' next pass: so the answer shows them, as
// gateway.Record's transition includes them, and a request that follows
// at once finds them made. A failure is only logged: the answer is true
// at the cache's revision, and the actions are Run's job too.
func (b *Backend) reconcileBeforeAnswer(ctx context.Context, op, election string) {
	if err := b.reconcile(ctx, election); err != nil {
		b.log.LogAttrs(ctx, slog.LevelDebug, "etcd: reconcile after "+op, slog.String("election", election), slog.String("error", err.Error()))
	}
}

// reconcileRounds bounds the actions reconcile makes: enough to
// acknowledge a leader and move a few keys into priority order; the
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
	due := map[string]time.Time{} // election → when its next action is due, on the promise clock
	failed := map[string]int64{}  // election → cache revision at which its action's comparison failed
	retry := map[string]bool{}    // elections whose action failed with an error
	replan := map[string]bool{}   // elections whose action's comparison failed: planned again at the next revision
	backoff := time.Duration(0)
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
		for n, t := range due {
			if !t.After(mono) {
				names[n] = true
				delete(failed, n) // time moved: what failed may be due now
			}
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
		)
		_ = b.cache.read(ctx, func(st *state) {
			rev = st.rev
			if all {
				clear(failed)
				for n := range st.elections {
					names[n] = true
				}
			}
			for n := range names {
				views = append(views, st.view(n))
			}
		})
		for _, v := range views {
			acts, at := b.plan(v, now, mono)
			if at.IsZero() {
				delete(due, v.name)
			} else {
				due[v.name] = at
			}
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
		for _, t := range due {
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

// refreshLeases keeps the lease book current for every candidate's lease.
func (b *Backend) refreshLeases(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		live := map[int64]bool{}
		_ = b.cache.read(ctx, func(st *state) {
			for _, e := range st.elections {
				for _, x := range e.line {
					if x.lease != 0 {
						live[x.lease] = true
					}
				}
				for _, x := range e.cooling {
					live[x.lease] = true
				}
			}
		})
		b.leases.refresh(ctx, b.cli, live, b.cfg.RequestTimeout)
	}
}

// preempt returns the action that starts a transfer (reason preempted) to
// the follower of highest priority that the line lets through, when the
// election preempts, an elector candidate leads, and that follower's
// priority is higher than the leader's. Once the line is in order that
// follower is line[1]; while a preemption is pending, its target stands
// there, and the keys behind it are not reordered (reorder), so the
// follower is the first of highest priority behind it, up to the first
// native key. A pending preemption to another target moves to it, as
// gateway.Record's does (moveTargetUp then brings it up); a transfer an
// operator asked for is left alone. Like Transfer, it changes no
// leadership by itself.
func (b *Backend) preempt(v view, now time.Time) (action, bool) {
	l := v.leader
	if !v.settings.Preempt || l == nil || l.native || len(v.line) < 2 {
		return action{}, false
	}
	x := v.line[1]
	if t := v.transfer; t != nil {
		if t.Reason != gateway.ReasonPreempted {
			return action{}, false
		}
		for _, y := range v.line[2:] {
			if y.native {
				break // a native key keeps its place: nobody behind it can go ahead
			}
			if y.priority() > x.priority() {
				x = y
			}
		}
		if t.Key == x.hex {
			return action{}, false
		}
	}
	if x.priority() <= l.priority() {
		return action{}, false
	}
	lead := *v.lead
	lead.Transfer, lead.At = &leadTransfer{To: x.value.ID, Key: x.hex, Reason: gateway.ReasonPreempted, At: now}, now
	return action{what: "preempt",
		cmps: []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(b.keys.lead(v.name)), "=", v.leadMod),
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, l)), "=", l.create), // still leading: see Transfer
			clientv3.Compare(clientv3.CreateRevision(b.keyOf(v.name, x)), "=", x.create),
		},
		ops: []clientv3.Op{clientv3.OpPut(b.keys.lead(v.name), mustJSON(lead))}}, true
}
