package etcd

import (
	"container/heap"
	"time"
)

// dueSet is when each election's next action is due (Run), with the
// earliest found without looking at the others: a pass of Run, which
// follows every revision, costs the elections it plans, not every
// election that has something due some day (each with a holder has: its
// promise's lapse). The times sit in a heap, each also in at; a time that
// set replaced stays in the heap until it comes up, and is skipped then
// (at no longer holds it), or until the heap, grown to twice at, is
// rebuilt from at.
type dueSet struct {
	at map[string]time.Time
	h  dueHeap
}

type dueItem struct {
	at   time.Time
	name string
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newDueSet() *dueSet { return &dueSet{at: map[string]time.Time{}} }

// set makes name due at t, or never for a zero t.
func (d *dueSet) set(name string, t time.Time) {
	old, ok := d.at[name]
	switch {
	case t.IsZero():
		delete(d.at, name)
		return
	case ok && old.Equal(t):
		return
	}
	d.at[name] = t
	heap.Push(&d.h, dueItem{at: t, name: name})
	if len(d.h) > 2*len(d.at)+64 {
		d.h = d.h[:0]
		for n, t := range d.at {
			d.h = append(d.h, dueItem{at: t, name: n})
		}
		heap.Init(&d.h)
	}
}

// current reports whether x is name's due time as set last.
func (d *dueSet) current(x dueItem) bool {
	t, ok := d.at[x.name]
	return ok && t.Equal(x.at)
}

// popDue removes and returns the elections due by now.
func (d *dueSet) popDue(now time.Time) []string {
	var out []string
	for len(d.h) > 0 && !d.h[0].at.After(now) {
		x := heap.Pop(&d.h).(dueItem)
		if d.current(x) {
			delete(d.at, x.name)
			out = append(out, x.name)
		}
	}
	return out
}

// next returns the earliest due time.
func (d *dueSet) next() (time.Time, bool) {
	for len(d.h) > 0 && !d.current(d.h[0]) {
		heap.Pop(&d.h)
	}
	if len(d.h) == 0 {
		return time.Time{}, false
	}
	return d.h[0].at, true
}
