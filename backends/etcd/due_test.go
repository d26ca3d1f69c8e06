package etcd

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestDueSet(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	d := newDueSet()
	d.set("a", at(5))
	d.set("b", at(3))
	d.set("c", at(9))
	d.set("a", at(1)) // moved: a is due once, at 1
	d.set("c", time.Time{})
	if got, ok := d.next(); !ok || !got.Equal(at(1)) {
		t.Fatalf("next %v %v, want %v", got, ok, at(1))
	}
	if got := d.popDue(at(0)); len(got) != 0 {
		t.Fatalf("due at 0: %v", got)
	}
	if got := d.popDue(at(6)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("due at 6: %v, want [a b] (a once, at its latest time)", got)
	}
	if _, ok := d.next(); ok {
		t.Fatal("next: none due any more (c was unset)")
	}
	// Many moves keep one time per election.
	for i := range 10_000 {
		d.set(fmt.Sprintf("e%d", i%10), at(100+i))
	}
	if n := d.q.Len(); n != 10 {
		t.Fatalf("%d times queued for 10 elections", n)
	}
	got := d.popDue(at(1_000_000))
	slices.Sort(got)
	if len(got) != 10 || d.q.Len() != 0 {
		t.Fatalf("all due: %v, %d left", got, d.q.Len())
	}
}
