package etcd_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestTimersEndOnEtcdsLeasesNotAReplicasClock: once a handover delay or an
// error cooldown has started, the replica's clock jumps an hour ahead (as
// another replica's clock may run ahead of the one that started it) and a
// campaign makes it reconcile the election. With the timer judged by that
// clock it would end at once; here it ends only when etcd expires its
// marker's lease, at least the delay after it started in real time.
func TestTimersEndOnEtcdsLeasesNotAReplicasClock(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	const delay = 2 * time.Second
	ctx := context.Background()
	tests := []struct {
		name string
		// start starts the timer and returns when it started (the
		// replica's clock was still right then) and whether an event
		// ends it.
		start func(t *testing.T, b *etcd.Backend, election string) (time.Time, func(gateway.Event) bool)
	}{
		{"HandoverDelay", func(t *testing.T, b *etcd.Backend, election string) (time.Time, func(gateway.Event) bool) {
			campaignAs(t, b, election, "a", time.Second) // expires: its lease is never kept alive
			th := campaignAs(t, b, election, "b", 10*time.Second)
			keepBeating(t, b, election, "b", th)
			var until time.Time
			eventually.True(t, 10*time.Second, "the handover delay starts", func() bool {
				var err error
				until, err = b.LeadUntil(ctx, election)
				return err == nil && !until.IsZero()
			})
			return until.Add(-delay), func(ev gateway.Event) bool {
				return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b"
			}
		}},
		{"ErrorCooldown", func(t *testing.T, b *etcd.Backend, election string) (time.Time, func(gateway.Event) bool) {
			th := campaignAs(t, b, election, "a", 10*time.Second)
			keepBeating(t, b, election, "a", th)
			if _, err := b.ReportError(ctx, election, "a", th, "begin hook failed"); err != nil {
				t.Fatal(err)
			}
			until, err := b.CooldownUntil(ctx, election, "a")
			if err != nil || until.IsZero() {
				t.Fatalf("cooldown until %v, %v: want a cooling", until, err)
			}
			return until.Add(-delay), func(ev gateway.Event) bool {
				return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "a" && ev.Reason == gateway.ReasonRejoined
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, ms, "skew-"+tt.name)
			var ahead atomic.Bool
			b.SetClock(func() time.Time {
				if ahead.Load() {
					return time.Now().Add(time.Hour)
				}
				return time.Now()
			})
			run(t, b)
			election := "timers"
			if _, err := b.Configure(ctx, election, gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			events, err := b.Watch(wctx, election, "")
			if err != nil {
				t.Fatal(err)
			}
			started, ended := tt.start(t, b, election)
			ahead.Store(true)
			campaignAs(t, b, election, "c", 10*time.Second) // the replica reconciles the election
			for {
				ev, ok := <-events
				if !ok {
					t.Fatal("watch ended before the timer did")
				}
				if !ended(ev) {
					continue
				}
				if held := time.Since(started); held < delay {
					t.Fatalf("%s %s after the timer started; it is %s long", ev.Type, held, delay)
				}
				return
			}
		})
	}
}

// campaignAs campaigns id with ttl and returns its token hash.
func campaignAs(t *testing.T, b *etcd.Backend, election, id string, ttl time.Duration) string {
	t.Helper()
	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: id, TTL: ttl, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatalf("campaign %s: %v", id, err)
	}
	return th
}

// keepBeating heartbeats id every 500ms until the test ends.
func keepBeating(t *testing.T, b *etcd.Backend, election, id, th string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
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
	t.Cleanup(func() { cancel(); <-done })
}

// TestTimersOutliveALostAnswer: the transaction that starts a handover
// delay or an error cooldown commits, but its answer is lost (a request
// timeout after etcd applied it, a connection cut). The writer does not
// know whether the timer started; it must not revoke the lease of the
// marker it may have written, as that would end the timer at once: the
// timer ends when etcd expires the lease, at least its length after it
// started.
func TestTimersOutliveALostAnswer(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	const delay = 3 * time.Second
	ctx := context.Background()
	tests := []struct {
		name   string
		marker string // the marker whose write loses its answer
		// start starts the timer and returns when it started at the
		// latest and whether an event ends it.
		start func(t *testing.T, b *etcd.Backend, election string, lost *hookKV) (time.Time, func(gateway.Event) bool)
	}{
		{"HandoverDelay", "/_elector/handover/", func(t *testing.T, b *etcd.Backend, election string, lost *hookKV) (time.Time, func(gateway.Event) bool) {
			campaignAs(t, b, election, "a", time.Second) // expires: its lease is never kept alive
			th := campaignAs(t, b, election, "b", 10*time.Second)
			keepBeating(t, b, election, "b", th)
			eventually.True(t, 10*time.Second, "the reconciler's start of the handover delay loses its answer", lost.fired.Load)
			// The transaction applied though its answer was lost: the
			// replica's cache shows the delay once its watch brings it.
			var until time.Time
			eventually.True(t, 10*time.Second, "the cache shows the handover delay under way", func() bool {
				u, err := b.LeadUntil(ctx, election)
				until = u
				return err == nil && !u.IsZero()
			})
			return until.Add(-delay), func(ev gateway.Event) bool {
				return ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b"
			}
		}},
		{"ErrorCooldown", "/_elector/cooldown/", func(t *testing.T, b *etcd.Backend, election string, lost *hookKV) (time.Time, func(gateway.Event) bool) {
			th := campaignAs(t, b, election, "a", 10*time.Second)
			keepBeating(t, b, election, "a", th)
			started := time.Now()
			if _, err := b.ReportError(ctx, election, "a", th, "begin hook failed"); err == nil {
				t.Fatal("ReportError succeeded; want the lost answer's error")
			}
			if !lost.fired.Load() {
				t.Fatal("ReportError's transaction did not lose its answer")
			}
			return started, func(ev gateway.Event) bool {
				return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "a" && ev.Reason == gateway.ReasonRejoined
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t, ms, "lost-"+tt.name)
			lost := &hookKV{key: tt.marker, commit: lostAnswer}
			if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { lost.KV = kv; return lost }); err != nil {
				t.Fatal(err)
			}
			run(t, b)
			election := "timers"
			if _, err := b.Configure(ctx, election, gateway.Settings{ErrorCooldown: delay, HandoverDelay: delay}); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			events, err := b.Watch(wctx, election, "")
			if err != nil {
				t.Fatal(err)
			}
			started, ended := tt.start(t, b, election, lost)
			for {
				ev, ok := <-events
				if !ok {
					t.Fatal("watch ended before the timer did")
				}
				if !ended(ev) {
					continue
				}
				if held := time.Since(started); held < delay {
					t.Fatalf("%s %s after the timer started; it is %s long", ev.Type, held, delay)
				}
				return
			}
		})
	}
}

// hookKV is a clientv3.KV that hands the first transaction putting a key
// containing key to commit, which commits it (or not) and answers in its
// stead; fired is set by commit when it did what the test is about.
type hookKV struct {
	clientv3.KV
	key    string
	fired  atomic.Bool
	commit func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error)
}

// lostAnswer answers a successful transaction with an error, as a request
// that timed out after etcd applied it.
func lostAnswer(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
	resp, err := txn.Commit()
	if err == nil && resp.Succeeded && k.fired.CompareAndSwap(false, true) {
		return nil, context.DeadlineExceeded
	}
	return resp, err
}

// delayed sends the transaction to etcd only after wait.
func delayed(wait time.Duration) func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
	return func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
		if k.fired.CompareAndSwap(false, true) {
			time.Sleep(wait) // the delay under test: a request slower than the lease it carries
		}
		return txn.Commit()
	}
}

func (k *hookKV) Txn(ctx context.Context) clientv3.Txn {
	return &hookTxn{Txn: k.KV.Txn(ctx), kv: k}
}

type hookTxn struct {
	clientv3.Txn
	kv  *hookKV
	hit bool
}

func (t *hookTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *hookTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *hookTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.hit = t.hit || putsKey(ops, t.kv.key)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *hookTxn) Commit() (*clientv3.TxnResponse, error) {
	if !t.hit || t.kv.fired.Load() {
		return t.Txn.Commit()
	}
	return t.kv.commit(t.kv, t.Txn)
}

// TestHandoverDelayStartsAfterItsMarkersLeaseRanOut: the reconciler's
// transaction that starts a handover delay reaches etcd only after the
// lease it granted for the delay's marker has expired (etcd slow, the
// request queued; shorter than the request timeout), so etcd refuses it
// with "lease not found". Nothing else in the election changes, so no
// event wakes the reconciler; it must still try again, and the next
// leader must lead once a delay has passed.
func TestHandoverDelayStartsAfterItsMarkersLeaseRanOut(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "late")
	ctx := context.Background()
	slow := &hookKV{key: "/_elector/handover/", commit: delayed(2500 * time.Millisecond)}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { slow.KV = kv; return slow }); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	const election = "late"
	if _, err := b.Configure(ctx, election, gateway.Settings{ErrorCooldown: time.Second, HandoverDelay: time.Second}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	events, err := b.Watch(wctx, election, "")
	if err != nil {
		t.Fatal(err)
	}
	campaignAs(t, b, election, "a", time.Second) // expires: its lease is never kept alive
	th := campaignAs(t, b, election, "b", 10*time.Second)
	keepBeating(t, b, election, "b", th)
	for ev := range events {
		if ev.Type == gateway.EventLeaderBegin && ev.Candidate.ID == "b" {
			return
		}
	}
	t.Fatalf("after 15s b does not lead (the late transaction ran: %v)", slow.fired.Load())
}

// TestReportErrorWhoseCooldownMarkersLeaseRanOut: ReportError's
// transaction reaches etcd only after the lease it granted for the
// cooldown's marker has expired, so etcd refuses it with "lease not
// found". The candidate is still there: ReportError must try again (the
// candidate cools down), not answer that the candidate is not found.
func TestReportErrorWhoseCooldownMarkersLeaseRanOut(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "late-cooldown")
	ctx := context.Background()
	slow := &hookKV{key: "/_elector/cooldown/", commit: delayed(2500 * time.Millisecond)}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { slow.KV = kv; return slow }); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	const election = "late"
	if _, err := b.Configure(ctx, election, gateway.Settings{ErrorCooldown: time.Second}); err != nil {
		t.Fatal(err)
	}
	th := campaignAs(t, b, election, "a", 10*time.Second)
	keepBeating(t, b, election, "a", th)
	st, err := b.ReportError(ctx, election, "a", th, "begin hook failed")
	if err != nil {
		t.Fatalf("ReportError: %v (the late transaction ran: %v)", err, slow.fired.Load())
	}
	if !slow.fired.Load() || st.Candidate.State != gateway.StateError {
		t.Fatalf("ReportError answered %+v (the late transaction ran: %v); want the candidate cooling down", st.Candidate, slow.fired.Load())
	}
}

// putsKey reports whether ops put a key containing key.
func putsKey(ops []clientv3.Op, key string) bool {
	for _, op := range ops {
		if op.IsPut() && strings.Contains(string(op.KeyBytes()), key) {
			return true
		}
	}
	return false
}
