package etcd

import (
	"fmt"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestViewsShareTheOrderedLineUntilItChanges: the views of an election
// derived while its line is unchanged share one line ordered by create
// revision; a key put or deleted makes the next view order it again, and
// leaves the line of a view derived before as it was.
func TestViewsShareTheOrderedLineUntilItChanges(t *testing.T) {
	k := keys{p: "p"}
	st := newState(k)
	cand := func(lease, create int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k.candidacy("e", fmt.Sprintf("%x", lease))), Value: []byte(`{"elector":1,"id":"` + fmt.Sprint(lease) + `"}`),
			Lease: lease, CreateRevision: create, ModRevision: create}
	}
	creates := func(v view) []int64 {
		var out []int64
		for _, x := range v.line {
			out = append(out, x.create)
		}
		return out
	}
	// Put out of create order: the map holds no order.
	for _, kv := range []*mvccpb.KeyValue{cand(0x30, 7), cand(0x10, 3), cand(0x20, 5)} {
		st.put(kv)
	}
	before := st.view("e")
	if got := creates(before); !slices.Equal(got, []int64{3, 5, 7}) {
		t.Fatalf("line by create revision: %v", got)
	}
	if lv := st.leaderView("e"); &lv.line[0] != &before.line[0] {
		t.Error("a second view of an unchanged line ordered it again")
	}

	st.put(cand(0x40, 9))
	if got := creates(st.leaderView("e")); !slices.Equal(got, []int64{3, 5, 7, 9}) {
		t.Errorf("line after a put: %v, want [3 5 7 9]", got)
	}
	st.del(cand(0x10, 3).Key)
	after := st.view("e")
	if got := creates(after); !slices.Equal(got, []int64{5, 7, 9}) {
		t.Errorf("line after a put and a delete: %v, want [5 7 9]", got)
	}
	if got := creates(before); !slices.Equal(got, []int64{3, 5, 7}) {
		t.Errorf("a view taken before changed with the line: %v", got)
	}
	if cap(after.line) != len(after.line) {
		t.Errorf("the shared line has room to append in place: len %d, cap %d", len(after.line), cap(after.line))
	}
}
