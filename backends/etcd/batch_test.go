package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/internal/eventually"
)

// batches records the sizes of a backend's batches of writes, and holds
// the first ones until released.
type batches struct {
	mu    sync.Mutex
	sizes []int
	hold  int           // the first hold batches wait for release
	gate  chan struct{} // closed by release
	sent  chan struct{} // a receive per batch about to be sent
	next  chan struct{} // if set before the writes, holds the batch after the held ones until closed
}

func recordBatches(b *etcd.Backend, hold int) *batches {
	r := &batches{hold: hold, gate: make(chan struct{}), sent: make(chan struct{}, 1000)}
	b.OnWriteBatch(func(n int) {
		r.mu.Lock()
		r.sizes = append(r.sizes, n)
		held := len(r.sizes) <= r.hold
		r.mu.Unlock()
		r.sent <- struct{}{}
		if held {
			<-r.gate
		}
		if len(r.get()) == r.hold+1 && r.next != nil {
			<-r.next
		}
	})
	return r
}

func (r *batches) release() { close(r.gate) }

// batchBackend is a backend on a fresh one-member cluster, its client,
// and the record of its batches (the first hold held).
func batchBackend(t *testing.T, hold int, opts ...func(*etcd.Config)) (*etcd.Backend, *clientv3.Client, *batches) {
	t.Helper()
	b := newBackend(t, startCluster(t, 1), "batch", opts...)
	return b, b.Client(), recordBatches(b, hold)
}

func (r *batches) get() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sizes)
}

// createIfAbsent is a guarded write: key is put only if it does not exist.
func createIfAbsent(ctx context.Context, cli *clientv3.Client, key, val string, opts ...clientv3.OpOption) (*clientv3.TxnResponse, error) {
	return cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, val, opts...)).Commit()
}

// startHeld starts a write, alone and held by r (r.hold 1), and then the
// writes of f, and waits until those wait for a batch: the one after it.
func startHeld(t *testing.T, b *etcd.Backend, r *batches, cli *clientv3.Client, queued int, f func(wg *sync.WaitGroup)) *sync.WaitGroup {
	t.Helper()
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := createIfAbsent(ctx, cli, "batch/first", "x"); err != nil {
			t.Error(err)
		}
	})
	<-r.sent
	f(&wg)
	eventually.True(t, 10*time.Second, fmt.Sprintf("%d writes waiting for a batch", queued), func() bool { return b.QueuedWrites() == queued })
	return &wg
}

func TestWritesThatArriveMeanwhileGoInOneBatchEachUnderItsOwnComparisons(t *testing.T) {
	b, cli, r := batchBackend(t, 1)
	ctx := t.Context()

	// Ten writes of their own keys, and two that both create the key dup:
	// they overlap, so they never share a batch, and only one creates it.
	const n = 10
	resps := make([]*clientv3.TxnResponse, n)
	dups := make([]*clientv3.TxnResponse, 2)
	wg := startHeld(t, b, r, cli, n+2, func(wg *sync.WaitGroup) {
		for i := range n {
			wg.Go(func() {
				resp, err := createIfAbsent(ctx, cli, fmt.Sprintf("batch/k-%02d", i), strconv.Itoa(i))
				if err != nil {
					t.Error(err)
				}
				resps[i] = resp
			})
		}
		for i := range dups {
			wg.Go(func() {
				resp, err := createIfAbsent(ctx, cli, "batch/dup", strconv.Itoa(i))
				if err != nil {
					t.Error(err)
				}
				dups[i] = resp
			})
		}
	})
	r.release()
	wg.Wait()
	if t.Failed() {
		return
	}
	// The one held, then the twelve waiting: one batch of eleven (every
	// write but the second of dup), then that one alone.
	if sizes, want := r.get(), []int{1, n + 1, 1}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
	var revs []int64
	for i, resp := range resps {
		if !resp.Succeeded {
			t.Fatalf("write %d did not apply: %v", i, resp)
		}
		revs = append(revs, resp.Header.Revision)
		get, err := cli.Get(ctx, fmt.Sprintf("batch/k-%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if kv := get.Kvs[0]; string(kv.Value) != strconv.Itoa(i) || kv.ModRevision != resp.Header.Revision {
			t.Errorf("batch/k-%02d: %q at revision %d, want %q at %d", i, kv.Value, kv.ModRevision, strconv.Itoa(i), resp.Header.Revision)
		}
	}
	slices.Sort(revs)
	if len(slices.Compact(revs)) != 1 {
		t.Errorf("the batched writes committed at revisions %v, want one", revs)
	}
	if dups[0].Succeeded == dups[1].Succeeded {
		t.Errorf("two creations of one key: applied %v and %v, want exactly one", dups[0].Succeeded, dups[1].Succeeded)
	}
	won := slices.IndexFunc(dups, func(r *clientv3.TxnResponse) bool { return r.Succeeded })
	get, err := cli.Get(ctx, "batch/dup")
	if err != nil {
		t.Fatal(err)
	}
	if kv := get.Kvs[0]; won < 0 || string(kv.Value) != strconv.Itoa(won) || kv.ModRevision != dups[won].Header.Revision {
		t.Errorf("batch/dup holds %q at revision %d; the creation that applied was %d", kv.Value, kv.ModRevision, won)
	}
}

func TestABatchEtcdRefusesIsSentAgainWriteByWrite(t *testing.T) {
	b, cli, r := batchBackend(t, 1)
	ctx := t.Context()

	// One write puts its key on a lease that does not exist: etcd refuses
	// any transaction that holds it, so the batch as a whole.
	var errs [4]error
	wg := startHeld(t, b, r, cli, len(errs), func(wg *sync.WaitGroup) {
		for i := range errs {
			wg.Go(func() {
				var opts []clientv3.OpOption
				if i == 2 {
					opts = append(opts, clientv3.WithLease(clientv3.LeaseID(0x7eadbeef)))
				}
				_, errs[i] = createIfAbsent(ctx, cli, fmt.Sprintf("batch/r-%d", i), "x", opts...)
			})
		}
	})
	r.release()
	wg.Wait()
	for i, err := range errs {
		if i == 2 {
			if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				t.Errorf("write on a lease that does not exist: %v, want %v", err, rpctypes.ErrLeaseNotFound)
			}
			continue
		}
		if err != nil {
			t.Errorf("write %d, batched beside one on a lost lease: %v", i, err)
		}
		get, err := cli.Get(ctx, fmt.Sprintf("batch/r-%d", i))
		if err != nil || len(get.Kvs) != 1 {
			t.Errorf("write %d not applied: %v %v", i, get, err)
		}
	}
	if sizes := r.get(); !slices.Equal(sizes, []int{1, len(errs)}) {
		t.Errorf("batch sizes %v, want 1, %d, then the writes alone", sizes, len(errs))
	}
}

func TestAWriteWhoseContextEndsWhileItWaitsForABatchIsNeverSent(t *testing.T) {
	b, cli, r := batchBackend(t, 1)

	wctx, cancel := context.WithCancel(t.Context())
	var err error
	wg := startHeld(t, b, r, cli, 1, func(wg *sync.WaitGroup) {
		wg.Go(func() { _, err = createIfAbsent(wctx, cli, "batch/cancelled", "x") })
	})
	cancel()
	eventually.True(t, 10*time.Second, "the cancelled write to leave the queue", func() bool { return b.QueuedWrites() == 0 })
	r.release()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a write cancelled while waiting: %v, want %v", err, context.Canceled)
	}
	get, gerr := cli.Get(t.Context(), "batch/cancelled")
	if gerr != nil || len(get.Kvs) != 0 {
		t.Errorf("the cancelled write was applied: %v %v", get.Kvs, gerr)
	}
	if sizes := r.get(); !slices.Equal(sizes, []int{1}) {
		t.Errorf("batch sizes %v, want only the one held", sizes)
	}
}

// Transfers between accounts, each a transaction that compares the mod
// revisions of the two accounts it read and writes both, sent by many
// writers at once so that most are batched: the sum is kept, and the
// transfers that applied, replayed in the order of their revisions
// (those of one revision in any order, as they touch different
// accounts), give the balances etcd holds.
func TestBatchedTransfersAreSerializable(t *testing.T) {
	_, cli, r := batchBackend(t, 0)
	ctx := t.Context()

	const accounts, writers, each, start = 12, 24, 40, 1000
	key := func(i int) string { return fmt.Sprintf("bank/%02d", i) }
	for i := range accounts {
		if _, err := cli.Put(ctx, key(i), strconv.Itoa(start)); err != nil {
			t.Fatal(err)
		}
	}
	type transfer struct {
		from, to, amount int
		rev              int64
	}
	var mu sync.Mutex
	var applied []transfer
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range each {
				from, to := rng.IntN(accounts), rng.IntN(accounts-1)
				if to >= from {
					to++
				}
				get, err := cli.Txn(ctx).Then(clientv3.OpGet(key(from)), clientv3.OpGet(key(to))).Commit()
				if err != nil {
					t.Error(err)
					return
				}
				a, c := get.Responses[0].GetResponseRange().Kvs[0], get.Responses[1].GetResponseRange().Kvs[0]
				av, _ := strconv.Atoi(string(a.Value))
				cv, _ := strconv.Atoi(string(c.Value))
				amount := rng.IntN(50) + 1
				resp, err := cli.Txn(ctx).
					If(clientv3.Compare(clientv3.ModRevision(key(from)), "=", a.ModRevision), clientv3.Compare(clientv3.ModRevision(key(to)), "=", c.ModRevision)).
					Then(clientv3.OpPut(key(from), strconv.Itoa(av-amount)), clientv3.OpPut(key(to), strconv.Itoa(cv+amount))).
					Commit()
				if err != nil {
					t.Error(err)
					return
				}
				if resp.Succeeded {
					mu.Lock()
					applied = append(applied, transfer{from, to, amount, resp.Header.Revision})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	balances := make([]int, accounts)
	for i := range balances {
		balances[i] = start
	}
	slices.SortFunc(applied, func(x, y transfer) int { return int(x.rev - y.rev) })
	perRev := map[int64]int{}
	for _, tr := range applied {
		balances[tr.from] -= tr.amount
		balances[tr.to] += tr.amount
		perRev[tr.rev]++
	}
	sum := 0
	for i := range accounts {
		get, err := cli.Get(ctx, key(i))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strconv.Atoi(string(get.Kvs[0].Value))
		sum += v
		if v != balances[i] {
			t.Errorf("account %d holds %d; the %d transfers that applied, in revision order, give %d", i, v, len(applied), balances[i])
		}
	}
	if sum != accounts*start {
		t.Errorf("the accounts sum to %d, want %d", sum, accounts*start)
	}
	shared := 0
	for _, n := range perRev {
		if n > 1 {
			shared++
		}
	}
	sizes := r.get()
	t.Logf("%d transfers applied in %d revisions (%d with more than one); %d batches, the largest %d writes", len(applied), len(perRev), shared, len(sizes), slices.Max(sizes))
	if slices.Max(sizes) < 2 || shared == 0 {
		t.Errorf("no two transfers committed together (largest batch %d): the test checked no batch", slices.Max(sizes))
	}
}

func TestWriteBatchOneSendsEveryWriteAlone(t *testing.T) {
	_, cli, r := batchBackend(t, 0, func(c *etcd.Config) { c.WriteBatch = 1 })
	revs := make([]int64, 32)
	var wg sync.WaitGroup
	for i := range revs {
		wg.Go(func() {
			resp, err := createIfAbsent(t.Context(), cli, fmt.Sprintf("alone/%d", i), "x")
			if err != nil {
				t.Error(err)
				return
			}
			revs[i] = resp.Header.Revision
		})
	}
	wg.Wait()
	slices.Sort(revs)
	if len(slices.Compact(revs)) != len(revs) {
		t.Errorf("32 writes at once with WriteBatch 1 committed at %d revisions, want one each", len(slices.Compact(revs)))
	}
	if sizes := r.get(); len(sizes) != 0 {
		t.Errorf("batches %v with WriteBatch 1", sizes)
	}
}

// Two writes that each compare the key the other writes (write skew):
// run one after the other, the second's comparison fails; so they must
// not share a batch, whose comparisons all see the state before it.
func TestWritesThatReadWhatTheOtherWritesAreNeverBatchedTogether(t *testing.T) {
	b, cli, r := batchBackend(t, 1)
	ctx := t.Context()

	skew := func(read, write string) (*clientv3.TxnResponse, error) {
		return cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(read), "=", 0)).Then(clientv3.OpPut(write, "1")).Commit()
	}
	var resps [2]*clientv3.TxnResponse
	wg := startHeld(t, b, r, cli, 2, func(wg *sync.WaitGroup) {
		for i, ks := range [][2]string{{"skew/a", "skew/b"}, {"skew/b", "skew/a"}} {
			wg.Go(func() {
				resp, err := skew(ks[0], ks[1])
				if err != nil {
					t.Error(err)
				}
				resps[i] = resp
			})
		}
	})
	r.release()
	wg.Wait()
	if t.Failed() {
		return
	}
	if resps[0].Succeeded == resps[1].Succeeded {
		t.Errorf("write skew: the writes applied %v and %v, want exactly one", resps[0].Succeeded, resps[1].Succeeded)
	}
	if sizes := r.get(); !slices.Equal(sizes, []int{1, 1, 1}) {
		t.Errorf("batch sizes %v, want each write alone", sizes)
	}
}

// A write in a batch under way does not keep its request waiting once
// its context ends: it answers at once that the outcome is unknown (the
// batch may apply it, and here does). That holds for the write that
// leads the batch too: the batch goes on for the others, and they get
// their answers.
func TestAWriteInABatchUnderWayAnswersUnknownWhenItsContextEnds(t *testing.T) {
	for _, cancelled := range []string{"follow", "lead"} {
		t.Run(cancelled, func(t *testing.T) {
			b, cli, r := batchBackend(t, 1)
			r.next = make(chan struct{})
			ctx := t.Context()
			cctx, cancel := context.WithCancel(ctx)
			var cerr error
			answered := make(chan struct{})
			wg := startHeld(t, b, r, cli, 3, func(wg *sync.WaitGroup) {
				for i, k := range []string{"lead", "follow", "last"} {
					wctx := ctx
					if k == cancelled {
						wctx = cctx
					}
					wg.Go(func() {
						_, err := createIfAbsent(wctx, cli, "batch/"+k, "x")
						if k == cancelled {
							cerr = err
							close(answered)
						} else if err != nil {
							t.Error(err)
						}
					})
					// In this order, so that "lead" leads the batch.
					eventually.True(t, 10*time.Second, fmt.Sprintf("%d writes waiting", i+1), func() bool { return b.QueuedWrites() == i+1 })
				}
			})
			r.release()
			<-r.sent // the batch of the three, held
			cancel()
			select {
			case <-answered:
			case <-time.After(time.Minute):
				t.Fatalf("the %s write of a batch held under way has not answered a minute after its context ended", cancelled)
			}
			if cerr == nil || !errors.Is(cerr, context.Canceled) || !strings.Contains(cerr.Error(), "outcome is unknown") {
				t.Errorf("a batched write whose context ended: %v, want an unknown outcome", cerr)
			}
			close(r.next)
			wg.Wait()
			if sizes := r.get(); !slices.Equal(sizes, []int{1, 3}) {
				t.Errorf("batch sizes %v, want 1, 3", sizes)
			}
			for _, k := range []string{"lead", "follow", "last"} {
				get, err := cli.Get(ctx, "batch/"+k)
				if err != nil || len(get.Kvs) != 1 {
					t.Errorf("batch/%s, written in the batch, is not there: %v %v", k, get, err)
				}
			}
		})
	}
}

// A batch whose answer is lost after etcd applied it: the retry finds
// every comparison of the batch failing (each write applied the first
// time), which says nothing of whether they applied, so each write of
// the batch answers that its outcome is unknown, none that it applied
// nor that it was refused, and etcd holds every one of them once.
func TestABatchWhoseAnswerIsLostAnswersUnknownToEachOfItsWrites(t *testing.T) {
	b, cli, r := batchBackend(t, 1)
	ctx := t.Context()
	b.LoseBatchAnswer()
	const n = 5
	errs := make([]error, n)
	wg := startHeld(t, b, r, cli, n, func(wg *sync.WaitGroup) {
		for i := range n {
			wg.Go(func() {
				_, errs[i] = createIfAbsent(ctx, cli, fmt.Sprintf("batch/lost-%d", i), strconv.Itoa(i))
			})
		}
	})
	r.release()
	wg.Wait()
	if sizes := r.get(); len(sizes) < 2 || sizes[1] != n {
		t.Fatalf("batches %v, want the %d writes in the second", sizes, n)
	}
	for i, err := range errs {
		if !errors.Is(err, etcd.ErrOutcomeUnknown) {
			t.Errorf("write %d of a batch whose answer was lost: %v, want its outcome unknown", i, err)
		}
	}
	for i := range n {
		resp, err := cli.Get(ctx, fmt.Sprintf("batch/lost-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != strconv.Itoa(i) || resp.Kvs[0].Version != 1 {
			t.Errorf("write %d: %v, want applied once", i, resp.Kvs)
		}
	}
}

// While a batch is under way the writes that arrive wait for the next,
// so that batches grow with the load; but a full batch waiting goes at
// once, beside the one under way: the load is then more than one batch
// at a time carries.
func TestAFullBatchWaitingGoesBesideTheOneUnderWay(t *testing.T) {
	const most = 4
	b, cli, r := batchBackend(t, 2, func(c *etcd.Config) { c.WriteBatch = most })
	ctx := t.Context()
	wg := startHeld(t, b, r, cli, most-1, func(wg *sync.WaitGroup) {
		for i := range most - 1 {
			wg.Go(func() {
				if _, err := createIfAbsent(ctx, cli, fmt.Sprintf("batch/full-%d", i), "x"); err != nil {
					t.Error(err)
				}
			})
		}
	})
	if sizes := r.get(); !slices.Equal(sizes, []int{1}) {
		t.Fatalf("with %d writes waiting for a batch of %d: batches %v, want only the one under way", most-1, most, sizes)
	}
	wg.Go(func() {
		if _, err := createIfAbsent(ctx, cli, "batch/full-last", "x"); err != nil {
			t.Error(err)
		}
	})
	<-r.sent // the full batch, held beside the first
	if sizes, queued := r.get(), b.QueuedWrites(); !slices.Equal(sizes, []int{1, most}) || queued != 0 {
		t.Errorf("a full batch waiting: batches %v and %d writes waiting, want 1 and %d under way and none waiting", sizes, queued, most)
	}
	r.release()
	wg.Wait()
}
