package etcd

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// sp is the span of key and end.
func sp(key, end string) span { return span{[]byte(key), []byte(end)} }

func TestSpansOverlapAsEtcdRangesDo(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b span
		want bool
	}{
		{"the same key", sp("a", ""), sp("a", ""), true},
		{"two keys", sp("a", ""), sp("b", ""), false},
		{"a key and its extension", sp("a", ""), sp("a\x00", ""), false},
		{"a key in a range", sp("b", ""), sp("a", "c"), true},
		{"a key at a range's end", sp("c", ""), sp("a", "c"), false},
		{"a key at a range's start", sp("a", ""), sp("a", "c"), true},
		{"a prefix and a key under it", sp("e/", "e0"), sp("e/x", ""), true},
		{"a prefix and its neighbour's", sp("e/", "e0"), sp("e0/", "e1"), false},
		{"ranges that touch", sp("a", "b"), sp("b", "c"), false},
		{"ranges that cross", sp("a", "c"), sp("b", "d"), true},
		{"from a key on, and a key after", sp("m", "\x00"), sp("z", ""), true},
		{"from a key on, and a key before", sp("m", "\x00"), sp("a", ""), false},
		{"from a key on, and a range across it", sp("m", "\x00"), sp("a", "n"), true},
		{"two open ranges", sp("m", "\x00"), sp("z", "\x00"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.overlaps(c.b); got != c.want {
				t.Errorf("%q overlaps %q: %v, want %v", c.a, c.b, got, c.want)
			}
			if got := c.b.overlaps(c.a); got != c.want {
				t.Errorf("%q overlaps %q: %v, want %v", c.b, c.a, got, c.want)
			}
		})
	}
}

func TestFootprintCoversNestedBranches(t *testing.T) {
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("e/"), "=", 0).WithPrefix()}
	thens := []clientv3.Op{
		clientv3.OpPut("ids/a", "x"),
		clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("set"), "=", 0)},
			[]clientv3.Op{clientv3.OpPut("set", "s")}, []clientv3.Op{clientv3.OpGet("set")}),
	}
	elses := []clientv3.Op{clientv3.OpDelete("gone/", clientv3.WithPrefix())}
	f, _ := footprintOf(txnRequest(cmps, thens, elses))
	for _, c := range []struct {
		name string
		g    footprint
		want bool
	}{
		{"writes the compared line", footprint{writes: []span{sp("e/x", "")}}, true},
		{"reads the put id", footprint{reads: []span{sp("ids/a", "")}}, true},
		{"writes the nested put", footprint{writes: []span{sp("set", "")}}, true},
		{"reads under the else's delete", footprint{reads: []span{sp("gone/k", "")}}, true},
		{"reads another election", footprint{reads: []span{sp("f/", "f0")}, writes: []span{sp("ids/b", "")}}, false},
		{"reads what it only reads", footprint{reads: []span{sp("e/x", "")}}, false},
	} {
		if got := f.conflicts(&c.g); got != c.want {
			t.Errorf("%s: conflicts %v, want %v", c.name, got, c.want)
		}
	}
	k := keys{p: "p"}
	campaign, _ := footprintOf(txnRequest([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k.candidateID("e", "a")), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(k.candidateID("e", "a"), "x"), clientv3.OpPut(k.candidacy("e", "1a"), "c")}, nil))
	rejoin, _ := footprintOf(txnRequest([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k.cooling("e", "2b")), ">", 0)},
		[]clientv3.Op{clientv3.OpDelete(k.cooling("e", "2b")), clientv3.OpPut(k.candidacy("e", "2b"), "c")}, nil))
	other, _ := footprintOf(txnRequest(nil, []clientv3.Op{clientv3.OpPut(k.candidacy("f", "3c"), "c"), clientv3.OpPut(k.kv("x"), "v")}, nil))
	if campaign.conflicts(&rejoin) {
		t.Fatal("the keys of the campaign and the rejoin overlap: the case below proves nothing")
	}
	for _, f := range []*footprint{&campaign, &rejoin, &other} {
		f.elections(k.electionOf())
	}
	if !campaign.conflicts(&rejoin) {
		t.Error("a campaign and a rejoin of one election, of disjoint keys, may share a batch: their candidacy keys would tie in the line")
	}
	if campaign.conflicts(&other) || rejoin.conflicts(&other) {
		t.Error("writes of two elections conflict")
	}
	if got, want := opsNeed(txnRequest(cmps, thens, elses)), 2+1; got != want {
		t.Errorf("opsNeed %d, want %d", got, want)
	}
}
