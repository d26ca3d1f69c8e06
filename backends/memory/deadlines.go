package memory

import (
	"container/heap"
	"time"

	"github.com/electorhq/elector/gateway"
)

// deadlines is a min-heap of the elections' next deadlines (expiries, ends
// of cooldowns and handover delays), so that Run looks only at elections
// with something due rather than at every election on every change.
//
// Entries may be early (a heartbeat moved the deadline later): Run then
// advances that election, finds nothing due, and schedules it again. They
// are never late, because every change that can bring a deadline closer
// schedules its election (schedule).
type deadlines []deadline

type deadline struct {
	at   time.Time
	name string
}

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(deadline)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// schedule puts r's next deadline in the heap unless an entry at or before
// it is already there, and wakes Run if it is the new earliest. Callers
// hold b.mu.
func (b *Backend) schedule(r *gateway.Record) {
	at, ok := r.NextDeadline()
	if !ok {
		return
	}
	if cur, has := b.scheduled[r.Name]; has && !at.Before(cur) {
		return
	}
	b.scheduled[r.Name] = at
	heap.Push(&b.due, deadline{at: at, name: r.Name})
	if b.due[0].name == r.Name && b.due[0].at.Equal(at) {
		b.signal()
	}
}

// update records the events of a change to r and schedules its next
// deadline. Callers hold b.mu.
func (b *Backend) update(r *gateway.Record, ev []gateway.Event) {
	b.append(ev)
	b.schedule(r)
}

// advanceDue applies every deadline due at now and returns when the next
// one is (zero if none). Callers hold b.mu.
func (b *Backend) advanceDue(now time.Time) time.Time {
	for len(b.due) > 0 && !b.due[0].at.After(now) {
		d := heap.Pop(&b.due).(deadline)
		if cur, ok := b.scheduled[d.name]; !ok || !cur.Equal(d.at) {
			continue // superseded by an earlier entry, already handled
		}
		delete(b.scheduled, d.name)
		if r, ok := b.elections[d.name]; ok {
			b.update(r, r.Advance(now))
		}
	}
	if len(b.due) == 0 {
		return time.Time{}
	}
	return b.due[0].at
}
