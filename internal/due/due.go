package due

import (
	"container/heap"
	"time"
)

// Queue holds keys each due at one time, earliest first. Setting a key
// again moves it (a key is in the queue once); the zero time takes it
// out. Every operation costs O(log n) at most, and the queue holds
// nothing for a key that is not in it. The zero Queue is not usable: make
// one with New.
type Queue[K comparable] struct {
	pos map[K]int // each key's index in h
	h   entries[K]
}

// New returns an empty queue.
func New[K comparable]() *Queue[K] {
	q := &Queue[K]{pos: map[K]int{}}
	q.h.pos = q.pos
	return q
}

// Len is the number of keys in the queue.
func (q *Queue[K]) Len() int { return len(q.h.items) }

// Set makes k due at at, replacing the time it had; a zero at removes k.
func (q *Queue[K]) Set(k K, at time.Time) {
	if at.IsZero() {
		q.Remove(k)
		return
	}
	if i, ok := q.pos[k]; ok {
		q.h.items[i].at = at
		heap.Fix(&q.h, i)
		return
	}
	heap.Push(&q.h, entry[K]{key: k, at: at})
}

// Remove takes k out of the queue, and reports whether it was in it.
func (q *Queue[K]) Remove(k K) bool {
	i, ok := q.pos[k]
	if ok {
		heap.Remove(&q.h, i)
	}
	return ok
}

// At returns when k is due, if it is in the queue.
func (q *Queue[K]) At(k K) (time.Time, bool) {
	i, ok := q.pos[k]
	if !ok {
		return time.Time{}, false
	}
	return q.h.items[i].at, true
}

// Next returns the key due first, and when; ok is false when the queue
// is empty.
func (q *Queue[K]) Next() (k K, at time.Time, ok bool) {
	if len(q.h.items) == 0 {
		return k, time.Time{}, false
	}
	return q.h.items[0].key, q.h.items[0].at, true
}

// PopDue removes and returns the earliest key if it is due at or before
// now; ok is false when none is.
func (q *Queue[K]) PopDue(now time.Time) (k K, at time.Time, ok bool) {
	if len(q.h.items) == 0 || q.h.items[0].at.After(now) {
		return k, time.Time{}, false
	}
	e := heap.Pop(&q.h).(entry[K])
	return e.key, e.at, true
}

type entry[K comparable] struct {
	key K
	at  time.Time
}

// entries is the container/heap under a Queue, keeping pos current.
type entries[K comparable] struct {
	items []entry[K]
	pos   map[K]int
}

func (h *entries[K]) Len() int           { return len(h.items) }
func (h *entries[K]) Less(i, j int) bool { return h.items[i].at.Before(h.items[j].at) }
func (h *entries[K]) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].key], h.pos[h.items[j].key] = i, j
}

func (h *entries[K]) Push(x any) {
	e := x.(entry[K])
	h.pos[e.key] = len(h.items)
	h.items = append(h.items, e)
}

func (h *entries[K]) Pop() any {
	n := len(h.items) - 1
	e := h.items[n]
	h.items[n] = entry[K]{}
	h.items = h.items[:n]
	delete(h.pos, e.key)
	return e
}
