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
	d.set("a", at(1)) // replaced: the time at 5 is stale
	d.set("c", time.Time{})
	if got, ok := d.next(); !ok || !got.Equal(at(1)) {
		t.Fatalf("next %v %v, want %v", got, ok, at(1))
	}
	if got := d.popDue(at(0)); len(got) != 0 {
		t.Fatalf("due at 0: %v", got)
	}
	if got := d.popDue(at(6)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("due at 6: %v, want [a b] (a once, its stale time skipped)", got)
	}
	if _, ok := d.next(); ok {
		t.Fatal("next: none due any more (c was unset)")
	}
	// Many replacements do not grow the heap without bound.
	for i := range 10_000 {
		d.set(fmt.Sprintf("e%d", i%10), at(100+i))
	}
	if len(d.h) > 2*len(d.at)+64 {
		t.Fatalf("heap of %d for %d elections", len(d.h), len(d.at))
	}
	got := d.popDue(at(1_000_000))
	slices.Sort(got)
	if len(got) != 10 || len(d.at) != 0 {
		t.Fatalf("all due: %v, left %v", got, d.at)
	}
}
