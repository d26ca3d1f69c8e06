package nats

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestKVListReadsItsOwnWritesOnACluster: on R3 streams, a List right
// after a write (on the same replica or another one, through another
// server) includes it, with its value and revision, and leaves out a key
// deleted before it, many times over: List must not answer from a stream
// copy that lags the leader that acknowledged the write.
func TestKVListReadsItsOwnWritesOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	servers := startCluster(t)
	a := openWhenReady(t, servers[0], freshConfig())
	b := openWhenReady(t, servers[1], a.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 200 {
		p := fmt.Sprintf("l/%d", i)
		if _, err := a.Create(ctx, p+"/gone", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, p+"/gone", 0); err != nil {
			t.Fatal(err)
		}
		rev, err := a.Create(ctx, p+"/k", []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*Backend{a, b} {
			items, err := r.List(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(items, func(it gateway.Item) bool { return it.Key == p+"/k" && string(it.Value) == "v" && it.Revision == rev }) || len(items) != 1 {
				t.Fatalf("round %d: List(%q) through server %s = %+v, want only %s/k at revision %d", i, p, r.nc.ConnectedServerName(), items, p, rev)
			}
		}
	}
}
