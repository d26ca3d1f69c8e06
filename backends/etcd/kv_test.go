package etcd_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

func TestKVKeysLiveUnderElectorKV(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	ctx := context.Background()
	rev, err := b.Create(ctx, "webhooks/endpoints/e1", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.Client().Get(ctx, "elector/_elector/kv/webhooks/endpoints/e1")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "x" || uint64(resp.Kvs[0].ModRevision) != rev {
		t.Fatalf("raw key: %+v, %v; want value x at mod revision %d", resp.Kvs, err, rev)
	}
	// A key written beside ours by someone else is listed with its
	// namespace stripped, like ours.
	if _, err := b.Client().Put(ctx, "elector/_elector/kv/webhooks/other", "y"); err != nil {
		t.Fatal(err)
	}
	items, err := b.List(ctx, "webhooks")
	if err != nil || len(items) != 2 || items[0].Key != "webhooks/endpoints/e1" || items[1].Key != "webhooks/other" {
		t.Fatalf("list: %+v, %v", items, err)
	}
}

// TestKVWritesDeriveNoEvents writes a burst of KV items, some of them as
// large as allowed and with keys that spell election keys, between the
// events of an election: watchers, new and resumed, see the election's
// events and nothing else, and no replica sees an election that is not.
func TestKVWritesDeriveNoEvents(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	replica := newBackend(t, ms, "elector")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(ctx, "burst", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	_, cursor, err := b.Elections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := b.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	one, err := replica.Watch(ctx, "burst", cursor)
	if err != nil {
		t.Fatal(err)
	}

	big := bytes.Repeat([]byte("v"), gateway.MaxValueBytes)
	for i := range 150 {
		key := []string{"burst/x", "settings/burst", "lead/burst", "ids/burst/a", "cooling/burst/694d", "webhooks/deliveries/d"}[i%6] + fmt.Sprint(i)
		value := []byte(fmt.Sprint(i))
		if i%50 == 0 {
			value = big
		}
		rev, err := b.Create(ctx, key, value)
		if err != nil {
			t.Fatalf("create %s: %v", key, err)
		}
		if i%2 == 0 {
			if err := b.Delete(ctx, key, rev); err != nil {
				t.Fatalf("delete %s: %v", key, err)
			}
		} else if _, err := b.Update(ctx, key, value, rev); err != nil {
			t.Fatalf("update %s: %v", key, err)
		}
	}

	for _, r := range []*struct {
		name string
		b    gateway.Backend
	}{{"writer", b}, {"replica", replica}} {
		got, _, err := r.b.Elections(ctx)
		if err != nil || len(got) != 1 || got[0].Name != "burst" || got[0].Leader == nil || got[0].Leader.ID != "a" {
			t.Fatalf("%s: elections after the burst: %+v, %v; want burst led by a", r.name, got, err)
		}
	}
	if err := b.Resign(ctx, "burst", "a", th); err != nil {
		t.Fatal(err)
	}
	// The first events after the burst are the resignation's.
	expectEvents(t, "watch of all", all, "burst", gateway.EventLeaderEnd, gateway.EventCandidateLeft)
	expectEvents(t, "replica's watch from the cursor", one, "burst", gateway.EventLeaderEnd, gateway.EventCandidateLeft)
	resumed, err := replica.Watch(ctx, "", cursor)
	if err != nil {
		t.Fatal(err)
	}
	expectEvents(t, "watch resumed across the burst", resumed, "burst", gateway.EventLeaderEnd, gateway.EventCandidateLeft)

	// The replica still campaigns and reads its own writes.
	if st, err := replica.Campaign(ctx, "burst", gateway.Candidacy{ID: "b", TTL: 10 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign after the burst: %+v, %v", st, err)
	}
	expectEvents(t, "watch of all", all, "burst", gateway.EventCandidateJoined, gateway.EventLeaderBegin)
}

// TestKVIsNotLoadedIntoTheElectionState checks that the KV's keys, which
// sort between the elections' and the other internal keys, are left out
// of loads without losing the keys after them (ids, lead, mark, settings).
func TestKVIsNotLoadedIntoTheElectionState(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	ctx := context.Background()
	th := gateway.HashToken(gateway.NewToken())
	s := gateway.Settings{ErrorCooldown: 7 * time.Second}
	if _, err := b.Campaign(ctx, "zz", gateway.Candidacy{ID: "a", TTL: 10 * time.Second, TokenHash: th}, s); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Configure(ctx, "zz", s); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	resp, err := b.Client().Get(ctx, "elector/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var internal int
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); strings.HasPrefix(k, "elector/_elector/") && k > "elector/_elector/kv0" {
			internal++
		}
	}
	if internal < 2 {
		t.Fatalf("only %d internal keys sort after the KV: the test checks nothing", internal)
	}
	// A fresh replica loads the state; a watch from a cursor loads it at
	// that revision.
	replica := newBackend(t, ms, "elector")
	e, err := replica.Election(ctx, "zz")
	if err != nil || e.Leader == nil || e.Leader.ID != "a" || e.Settings != s {
		t.Fatalf("replica's view: %+v, %v", e, err)
	}
	ch, err := replica.Watch(ctx, "zz", e.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Resign(ctx, "zz", "a", th); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, "watch from the cursor", ch, "zz", gateway.EventLeaderEnd, gateway.EventCandidateLeft)
}

// TestKVListReadsEveryPage lists more items than one read returns.
func TestKVListReadsEveryPage(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	ctx := context.Background()
	const n = 1234 // kvPage is 500
	for i := range n {
		if _, err := b.Client().Put(ctx, fmt.Sprintf("elector/_elector/kv/many/%04d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	// "many0" is the end of the range of "many/": exclusive.
	if _, err := b.Create(ctx, "many0/after", nil); err != nil {
		t.Fatal(err)
	}
	items, err := b.List(ctx, "many")
	if err != nil || len(items) != n {
		t.Fatalf("list: %d items, %v; want %d", len(items), err, n)
	}
	for i, it := range items {
		if it.Key != fmt.Sprintf("many/%04d", i) || string(it.Value) != fmt.Sprint(i) {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	if all, err := b.List(ctx, ""); err != nil || len(all) != n+1 {
		t.Fatalf(`list "": %d items, %v; want %d`, len(all), err, n+1)
	}
}
