package etcd

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestSpansOverlapAsEtcdRangesDo(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b span
		want bool
	}{
		{"the same key", span{"a", ""}, span{"a", ""}, true},
		{"two keys", span{"a", ""}, span{"b", ""}, false},
		{"a key and its extension", span{"a", ""}, span{"a\x00", ""}, false},
		{"a key in a range", span{"b", ""}, span{"a", "c"}, true},
		{"a key at a range's end", span{"c", ""}, span{"a", "c"}, false},
		{"a key at a range's start", span{"a", ""}, span{"a", "c"}, true},
		{"a prefix and a key under it", span{"e/", "e0"}, span{"e/x", ""}, true},
		{"a prefix and its neighbour's", span{"e/", "e0"}, span{"e0/", "e1"}, false},
		{"ranges that touch", span{"a", "b"}, span{"b", "c"}, false},
		{"ranges that cross", span{"a", "c"}, span{"b", "d"}, true},
		{"from a key on, and a key after", span{"m", "\x00"}, span{"z", ""}, true},
		{"from a key on, and a key before", span{"m", "\x00"}, span{"a", ""}, false},
		{"from a key on, and a range across it", span{"m", "\x00"}, span{"a", "n"}, true},
		{"two open ranges", span{"m", "\x00"}, span{"z", "\x00"}, true},
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
	f, _ := footprintOf(cmps, thens, elses)
	for _, c := range []struct {
		name string
		g    footprint
		want bool
	}{
		{"writes the compared line", footprint{writes: []span{{"e/x", ""}}}, true},
		{"reads the put id", footprint{reads: []span{{"ids/a", ""}}}, true},
		{"writes the nested put", footprint{writes: []span{{"set", ""}}}, true},
		{"reads under the else's delete", footprint{reads: []span{{"gone/k", ""}}}, true},
		{"reads another election", footprint{reads: []span{{"f/", "f0"}}, writes: []span{{"ids/b", ""}}}, false},
		{"reads what it only reads", footprint{reads: []span{{"e/x", ""}}}, false},
	} {
		if got := f.conflicts(c.g); got != c.want {
			t.Errorf("%s: conflicts %v, want %v", c.name, got, c.want)
		}
	}
	k := keys{p: "p"}
	campaign, _ := footprintOf([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k.candidateID("e", "a")), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(k.candidateID("e", "a"), "x"), clientv3.OpPut(k.candidacy("e", "1a"), "c")}, nil)
	rejoin, _ := footprintOf([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k.cooling("e", "2b")), ">", 0)},
		[]clientv3.Op{clientv3.OpDelete(k.cooling("e", "2b")), clientv3.OpPut(k.candidacy("e", "2b"), "c")}, nil)
	other, _ := footprintOf(nil, []clientv3.Op{clientv3.OpPut(k.candidacy("f", "3c"), "c"), clientv3.OpPut(k.kv("x"), "v")}, nil)
	if campaign.conflicts(rejoin) {
		t.Fatal("the keys of the campaign and the rejoin overlap: the case below proves nothing")
	}
	for _, f := range []*footprint{&campaign, &rejoin, &other} {
		f.elections(k.electionOf)
	}
	if !campaign.conflicts(rejoin) {
		t.Error("a campaign and a rejoin of one election, of disjoint keys, may share a batch: their candidacy keys would tie in the line")
	}
	if campaign.conflicts(other) || rejoin.conflicts(other) {
		t.Error("writes of two elections conflict")
	}
	if got, want := opsNeed(cmps, thens, elses), 2+1; got != want {
		t.Errorf("opsNeed %d, want %d", got, want)
	}
}
