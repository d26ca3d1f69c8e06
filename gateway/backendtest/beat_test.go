package backendtest

import (
	"testing"
	"time"
)

// TestBeatBeforeAVerdictCountsOnlyHeartbeatsSurelyTaken: the window of a
// failed holder's hold starts a TTL after the last heartbeat the backend
// surely took before the verdict. A background heartbeat answered at the
// instant the verdict's step began may have been taken after it (a
// synctest bubble gives both the same instant), so it does not count; a
// step's own heartbeat, answered before the next step began, does.
func TestBeatBeforeAVerdictCountsOnlyHeartbeatsSurelyTaken(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	verdict := at(3 * time.Second)
	tests := []struct {
		name   string
		beats  []beat
		before time.Time
		want   time.Time
	}{
		{"a background heartbeat answered as the verdict began is left out",
			[]beat{{sent: at(0), step: true}, {sent: at(2250 * time.Millisecond), answered: at(2250 * time.Millisecond)}, {sent: verdict, answered: verdict}},
			verdict, at(2250 * time.Millisecond)},
		{"one answered after the verdict began is left out",
			[]beat{{sent: at(0), step: true}, {sent: at(2 * time.Second), answered: at(4 * time.Second)}},
			verdict, at(0)},
		{"a step's own counts, answered at the same instant",
			[]beat{{sent: at(0), answered: at(0)}, {sent: verdict, step: true}},
			verdict, verdict},
		{"with no verdict, every accepted heartbeat counts",
			[]beat{{sent: at(0), step: true}, {sent: verdict, answered: at(4 * time.Second)}},
			time.Time{}, verdict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &modelRun{beats: map[string][]beat{}}
			for _, b := range tt.beats {
				m.noteBeat("a", b)
			}
			if got := m.beat("a", tt.before); !got.Equal(tt.want) {
				t.Fatalf("beat = %s, want %s", got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}
