package etcd

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The cache's state counts the entries on each lease as candidacies come,
// move to cooling and go, and lists the leases that came and went; the
// lease book follows those lists.
func TestLeaseCountFollowsTheEntriesOnEachLease(t *testing.T) {
	k := keys{p: "p"}
	st := newState(k)
	st.leases = newLeaseCount()
	cand := func(e string, lease int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k.candidacy(e, fmt.Sprintf("%x", lease))), Value: []byte(`{"elector":1,"id":"a"}`), Lease: lease, CreateRevision: 1, ModRevision: 1}
	}
	cool := func(e string, lease int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k.cooling(e, fmt.Sprintf("%x", lease))), Value: []byte(`{"elector":1,"id":"a"}`), Lease: lease, CreateRevision: 2, ModRevision: 2}
	}
	book := newLeaseBook()
	now := time.Now()
	step := func(what string, wantBorn, wantDied []int64, wantN map[int64]int) {
		t.Helper()
		born, died, _ := st.leases.take()
		slices.Sort(born)
		slices.Sort(died)
		if !slices.Equal(born, wantBorn) || !slices.Equal(died, wantDied) {
			t.Errorf("%s: born %v died %v, want %v and %v", what, born, died, wantBorn, wantDied)
		}
		if fmt.Sprint(st.leases.n) != fmt.Sprint(wantN) {
			t.Errorf("%s: counts %v, want %v", what, st.leases.n, wantN)
		}
		book.track(born, died, now)
		if book.due.Len() != len(book.m) || len(book.m) != len(wantN) {
			t.Errorf("%s: the book holds %d leases (%d due), want %d", what, len(book.m), book.due.Len(), len(wantN))
		}
	}
	st.put(cand("e1", 0x10))
	st.put(cand("e2", 0x10)) // one lease, two elections
	st.put(cand("e1", 0x20))
	step("three candidacies", []int64{0x10, 0x20}, nil, map[int64]int{0x10: 2, 0x20: 1})
	st.put(cand("e1", 0x10)) // written again: the same entry
	step("a candidacy written again", nil, nil, map[int64]int{0x10: 2, 0x20: 1})
	st.put(cool("e1", 0x20))
	st.del(cand("e1", 0x20).Key) // to cooling: the lease keeps an entry
	step("a candidacy to cooling", nil, nil, map[int64]int{0x10: 2, 0x20: 1})
	st.put(cand("e1", 0x20))
	st.del(cool("e1", 0x20).Key)
	st.del(cand("e1", 0x20).Key) // deleted first, as a removal's transaction orders them:
	st.put(cool("e1", 0x20))     // the lease went and came back
	step("a candidacy to cooling, its key deleted first", []int64{0x20}, nil, map[int64]int{0x10: 2, 0x20: 1})
	st.del(cool("e1", 0x20).Key)
	st.del(cand("e1", 0x10).Key)
	step("the cooling entry and one of two on a lease gone", nil, []int64{0x20}, map[int64]int{0x10: 1})
	st.del(cand("e2", 0x10).Key)
	st.del(cand("e2", 0x10).Key) // deleted twice: counted once
	step("the last gone", nil, []int64{0x10}, map[int64]int{})
	st.put(cand("e3", 0x30))
	st.del(cand("e3", 0x30).Key)
	step("a lease that came and went between takes", nil, []int64{0x30}, map[int64]int{})
}

// The book looks up a lease when it is due: at once when it comes, then a
// third of its TTL (at least a second) after each check; resync drops the
// leases the state no longer has.
func TestLeaseBookChecksLeasesWhenDue(t *testing.T) {
	book := newLeaseBook()
	now := time.Now()
	book.track([]int64{1, 2}, nil, now)
	book.note(2, 30, 30, now) // its grant: checked now, due in 10s
	var due []int64
	for id, _, ok := book.due.PopDue(now); ok; id, _, ok = book.due.PopDue(now) {
		due = append(due, id)
	}
	if !slices.Equal(due, []int64{1}) {
		t.Errorf("due now %v, want [1]", due)
	}
	if _, at, ok := book.due.Next(); !ok || !at.Equal(now.Add(10*time.Second)) {
		t.Errorf("next due %v (%v), want lease 2 at +10s", at.Sub(now), ok)
	}
	book.note(3, 5, 5, now) // noted before its key is seen
	book.resync(map[int64]int{2: 1}, now)
	if _, ok := book.get(3); ok || len(book.m) != 1 || book.due.Len() != 1 {
		t.Errorf("after resync the book holds %v (%d due), want lease 2 alone", book.m, book.due.Len())
	}
}
