// Package due is a deadline queue: a set of keys, each due at a time,
// that gives the earliest one without looking at the others. The
// backends' reconcilers keep one per kind of deadline (an election's next
// transition, a candidacy's liveness expiry), so that a write costs their
// loop O(log n), not a pass over every key that has something due some
// day.
//
//	q := due.New[string]()
//	q.Set("e1", t1)
//	q.Set("e1", t2) // moved: e1 is due once, at t2
//	for name, at, ok := q.PopDue(now); ok; name, at, ok = q.PopDue(now) {
//		…
//	}
//	if _, at, ok := q.Next(); ok {
//		timer.Reset(time.Until(at))
//	}
//
// A Queue is not safe for concurrent use: its owner guards it.
package due
