package nats

import (
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestDeadlinesFollowTheLatestRecord: the loop's next deadline is the
// earliest over every election's latest record, moves when a record moves
// it, and a taken deadline is not taken twice.
func TestDeadlinesFollowTheLatestRecord(t *testing.T) {
	b := &Backend{live: newLiveness("elector")}
	r := newReconciler(b, newView(b))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cooling := func(name string, seq uint64, until time.Time) stored {
		rec := gateway.NewRecord(name, gateway.DefaultSettings())
		rec.Cooling = []gateway.Entry{{ID: "a", TTL: time.Minute, TokenHash: "h", JoinedAt: t0, CooldownUntil: until}}
		return stored{rec: rec, seq: seq}
	}
	if _, ok := r.nextDeadline(); ok {
		t.Fatal("a deadline with no elections")
	}
	r.view.put(cooling("x", 1, t0.Add(3*time.Second)))
	r.view.put(cooling("y", 2, t0.Add(5*time.Second)))
	for i := range 200 { // moves of y's deadline leave stale entries behind
		r.view.put(cooling("y", uint64(3+i), t0.Add(time.Duration(6+i)*time.Second)))
	}
	if at, ok := r.nextDeadline(); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("next deadline %s %v, want x's at +3s", at, ok)
	}
	r.view.put(cooling("x", 300, t0.Add(time.Hour))) // x's cooldown was moved on
	if at, _ := r.nextDeadline(); !at.Equal(t0.Add(205 * time.Second)) {
		t.Fatalf("next deadline %s, want y's latest at +205s", at)
	}
	due := r.takeDue(t0.Add(10 * time.Minute))
	if len(due) != 1 || due[0].name != "y" {
		t.Fatalf("due = %+v, want y only", due)
	}
	if again := r.takeDue(t0.Add(10 * time.Minute)); len(again) != 0 {
		t.Fatalf("taken twice: %+v", again)
	}
	if at, _ := r.nextDeadline(); !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next deadline %s, want x's at +1h", at)
	}
	if n := r.deadlines.Len(); n != 1 {
		t.Fatalf("%d deadlines queued, want x's only", n)
	}
}
