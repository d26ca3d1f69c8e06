package etcd

import (
	"time"

	"github.com/electorhq/elector/internal/due"
)

// dueSet is when each election's next action is due (Run), with the
// earliest found without looking at the others: a pass of Run, which
// follows every revision, costs the elections it plans, not every
// election that has something due some day (each with a holder has: its
// promise's lapse). An election is in it once, at the time set last.
type dueSet struct{ q *due.Queue[string] }

func newDueSet() *dueSet { return &dueSet{q: due.New[string]()} }

// set makes name due at t, or never for a zero t.
func (d *dueSet) set(name string, t time.Time) { d.q.Set(name, t) }

// popDue removes and returns the elections due by now.
func (d *dueSet) popDue(now time.Time) []string {
	var out []string
	for name, _, ok := d.q.PopDue(now); ok; name, _, ok = d.q.PopDue(now) {
		out = append(out, name)
	}
	return out
}

// next returns the earliest due time.
func (d *dueSet) next() (time.Time, bool) {
	_, at, ok := d.q.Next()
	return at, ok
}
