package due

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// popAll pops every key due by now, in the order PopDue gives them.
func popAll(t *testing.T, q *Queue[string], now time.Time) []string {
	t.Helper()
	var out []string
	for k, when, ok := q.PopDue(now); ok; k, when, ok = q.PopDue(now) {
		if when.After(now) {
			t.Fatalf("%s popped at %v, due at %v", k, now, when)
		}
		out = append(out, k)
	}
	return out
}

func TestQueueGivesTheEarliestKeyOnceAtItsLatestTime(t *testing.T) {
	q := New[string]()
	if _, _, ok := q.Next(); ok {
		t.Fatal("Next of an empty queue")
	}
	q.Set("a", at(5))
	q.Set("b", at(3))
	q.Set("c", at(9))
	q.Set("a", at(1))       // moved earlier
	q.Set("c", time.Time{}) // taken out
	if k, when, ok := q.Next(); !ok || k != "a" || !when.Equal(at(1)) {
		t.Fatalf("Next = %q %v %v, want a at +1s", k, when, ok)
	}
	if when, ok := q.At("a"); !ok || !when.Equal(at(1)) {
		t.Fatalf("At(a) = %v %v, want +1s", when, ok)
	}
	if _, ok := q.At("c"); ok || q.Len() != 2 {
		t.Fatalf("c still queued, or Len %d != 2", q.Len())
	}
	if got := popAll(t, q, at(0)); len(got) != 0 {
		t.Fatalf("due at 0: %v", got)
	}
	if got := popAll(t, q, at(6)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("due at 6: %v, want [a b]: a once, at its latest time", got)
	}
	if _, _, ok := q.Next(); ok || q.Len() != 0 {
		t.Fatal("keys left after all were popped")
	}
	q.Set("b", at(2))
	if !q.Remove("b") || q.Remove("b") {
		t.Fatal("Remove reports b queued once")
	}
}

// TestQueueAgreesWithAMap checks a long random sequence of sets, removes
// and pops against a plain map of due times: the queue never holds more
// keys than the map, and pops each due key at its time, earliest first.
func TestQueueAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := New[int]()
	want := map[int]time.Time{}
	now := 0
	for range 20_000 {
		k := rng.IntN(50)
		switch op := rng.IntN(10); {
		case op < 6:
			when := at(now + rng.IntN(100))
			q.Set(k, when)
			want[k] = when
		case op < 7:
			_, had := want[k]
			if q.Remove(k) != had {
				t.Fatalf("Remove(%d) disagrees: queued %v", k, had)
			}
			delete(want, k)
		default:
			now += rng.IntN(20)
			var last time.Time
			for k, when, ok := q.PopDue(at(now)); ok; k, when, ok = q.PopDue(at(now)) {
				if w, in := want[k]; !in || !w.Equal(when) || when.Before(last) {
					t.Fatalf("popped %d at %v; the map has %v %v; last popped %v", k, when, w, in, last)
				}
				last = when
				delete(want, k)
			}
			for k, w := range want {
				if !w.After(at(now)) {
					t.Fatalf("%d due at %v not popped at %v", k, w, at(now))
				}
			}
		}
		if q.Len() != len(want) || len(q.pos) != len(want) {
			t.Fatalf("queue of %d (%d indexed), map of %d", q.Len(), len(q.pos), len(want))
		}
	}
}
