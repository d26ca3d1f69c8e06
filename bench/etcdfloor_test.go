package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// floorLoad is one load of etcdFloor: its rate and etcd's CPU per
// campaign.
type floorLoad struct {
	name    string
	rate    float64
	etcdCPU time.Duration
}

func (l floorLoad) String() string {
	return fmt.Sprintf("%s %.0f/s, %d µs of etcd's CPU each", l.name, l.rate, l.etcdCPU.Microseconds())
}

// etcdFloor measures etcd alone under the requests of one campaign into a
// fresh election, sent by bare gRPC clients (no gateway, no HTTP), 8 at a
// time for d each, every load with one watch on its prefix as a replica
// has: etcd's own recipe (the transaction that creates the key on a lease
// granted before, then the linearizable read of the line that
// /v3/election/campaign makes), elector's (a lease grant, then the
// transaction of a campaign on a prefix declared at data version 2: the
// candidacy and its id on the lease, the settings, the lead record), and
// elector's transaction on a lease granted before, and elector's requests
// as a replica sends them under load: a grant each (4 at once), and the
// campaigns' transactions 4 at a time as the nested transactions of one (the batches
// of the etcd backend, see backends/etcd/batch.go), 2 clients. What etcd
// spends on elector's requests here is the least a campaign through the
// gateway costs it, whatever the gateway does.
func etcdFloor(t *testing.T, etcd *etcdServer, d time.Duration) []floorLoad {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{strings.TrimPrefix(etcd.URL, "http://")}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	shared, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	// Values of the sizes elector writes.
	at := time.Now().UTC().Format(time.RFC3339Nano)
	candidacy := fmt.Sprintf(`{"elector":1,"id":"node-a","ttl_ms":3600000,"token_hash":"%s","at":"%s"}`, strings.Repeat("5e", 32), at)
	settings := fmt.Sprintf(`{"error_cooldown_ms":10000,"handover_delay_ms":0,"at":"%s"}`, at)
	lead := fmt.Sprintf(`{"term":0,"key":"694d8b0a1b2c3d4e","id":"node-a","ttl_ms":3600000,"since":"%s","at":"%s"}`, at, at)

	var next atomic.Int64
	recipe := func(p string) func() error {
		return func() error {
			line := fmt.Sprintf("%s/e-%d/", p, next.Add(1))
			k := fmt.Sprintf("%s%x", line, int64(shared.ID))
			if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
				Then(clientv3.OpPut(k, "x", clientv3.WithLease(shared.ID))).Else(clientv3.OpGet(k)).Commit(); err != nil {
				return err
			}
			_, err := cli.Get(ctx, line, clientv3.WithLastCreate()...)
			return err
		}
	}
	// campaign is the transaction of a campaign into a fresh election of
	// prefix p on lease, as a nested transaction.
	campaign := func(p string, lease clientv3.LeaseID) clientv3.Op {
		e, hex := fmt.Sprintf("e-%d", next.Add(1)), fmt.Sprintf("%x", int64(lease))
		id, set, ld := p+"/_elector/ids/"+e+"/node-a", p+"/_elector/settings/"+e, p+"/_elector/lead/"+e
		on := clientv3.WithLease(lease)
		return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(id), "=", 0)}, []clientv3.Op{
			clientv3.OpPut(id, hex, on),
			clientv3.OpPut(p+"/"+e+"/"+hex, candidacy, on),
			clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(set), "=", 0)},
				[]clientv3.Op{clientv3.OpPut(set, settings)}, []clientv3.Op{clientv3.OpGet(set)}),
			clientv3.OpTxn([]clientv3.Cmp{
				clientv3.Compare(clientv3.CreateRevision(p+"/"+e+"/"), "=", 0).WithPrefix(),
				clientv3.Compare(clientv3.CreateRevision(ld), "=", 0),
			}, []clientv3.Op{clientv3.OpPut(ld, lead)}, nil),
		}, nil)
	}
	// elector sends n campaigns: a grant each (unless grant is off, all at
	// once), then their transactions, alone (n 1) or nested in one.
	elector := func(p string, grant bool, n int) func() (int, error) {
		return func() (int, error) {
			// The grants at once, as the campaigns of a batch arrive at
			// once (and as a replica's lease pool grants).
			ops := make([]clientv3.Op, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range ops {
				wg.Go(func() {
					lease := shared.ID
					if grant {
						g, err := cli.Grant(ctx, 3600)
						if err != nil {
							errs[i] = err
							return
						}
						lease = g.ID
					}
					ops[i] = campaign(p, lease)
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return 0, err
			}
			if n == 1 {
				c, t, e := ops[0].Txn()
				_, err := cli.Txn(ctx).If(c...).Then(t...).Else(e...).Commit()
				return 1, err
			}
			_, err := cli.Txn(ctx).Then(ops...).Commit()
			return n, err
		}
	}
	run := func(name, prefix string, clients int, op func() (int, error)) floorLoad {
		wctx, cancel := context.WithCancel(ctx)
		var watching sync.WaitGroup
		wch := cli.Watch(wctx, prefix+"/", clientv3.WithPrefix())
		watching.Go(func() {
			for range wch {
			}
		})
		defer watching.Wait() // after cancel, which closes wch
		defer cancel()
		var done atomic.Int64
		var failed atomic.Value
		cpu0, start := cpuOf(t, etcd.pid), time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for time.Since(start) < d {
					n, err := op()
					if err != nil {
						failed.Store(err)
						return
					}
					done.Add(int64(n))
				}
			})
		}
		wg.Wait()
		elapsed, cpu := time.Since(start), cpuOf(t, etcd.pid)-cpu0
		if err, _ := failed.Load().(error); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := max(done.Load(), 1)
		return floorLoad{name: name, rate: float64(n) / elapsed.Seconds(), etcdCPU: cpu / time.Duration(n)}
	}
	one := func(f func() error) func() (int, error) { return func() (int, error) { return 1, f() } }
	return []floorLoad{
		run("etcd's recipe (Txn, then a linearizable Range; a lease granted before)", "floor-recipe", 8, one(recipe("floor-recipe"))),
		run("elector's (LeaseGrant, then the campaign's Txn)", "floor-elector", 8, elector("floor-elector", true, 1)),
		run("elector's Txn alone (a lease granted before)", "floor-txn", 8, elector("floor-txn", false, 1)),
		run("elector's batched (4 LeaseGrants at once, then the 4 campaigns' Txns as one; 2 clients)", "floor-batched", 2, elector("floor-batched", true, 4)),
	}
}
