package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestWriteHealthFollowsTheWritePath(t *testing.T) {
	unavailable := fmt.Errorf("nats: heartbeat: %w", ErrUnavailable)
	type write struct {
		at  time.Duration
		op  string
		err error
	}
	tests := []struct {
		name   string
		writes []write
		at     time.Duration // when readiness is asked
		ready  bool
	}{
		{name: "no writes", at: time.Second, ready: true},
		{name: "writes answered", writes: []write{{0, "heartbeat", nil}, {time.Second, "campaign", nil}}, at: 2 * time.Second, ready: true},
		{name: "one timeout is a blip", writes: []write{{0, "heartbeat", context.DeadlineExceeded}}, at: time.Second, ready: true},
		{name: "heartbeats timing out", writes: []write{{0, "heartbeat", context.DeadlineExceeded}, {time.Second, "heartbeat", unavailable}}, at: 2 * time.Second, ready: false},
		{name: "answered again", writes: []write{{0, "heartbeat", unavailable}, {time.Second, "heartbeat", unavailable}, {2 * time.Second, "resign", nil}}, at: 2 * time.Second, ready: true},
		{name: "a refusal is an answer", writes: []write{{0, "heartbeat", unavailable}, {time.Second, "heartbeat", unavailable}, {2 * time.Second, "heartbeat", ErrCandidateNotFound}}, at: 2 * time.Second, ready: true},
		{name: "forgotten after a while", writes: []write{{0, "campaign", unavailable}, {time.Second, "campaign", unavailable}}, at: time.Second + writeFailureMemory, ready: true},
		{name: "reads do not count", writes: []write{{0, "election", unavailable}, {time.Second, "elections", unavailable}, {time.Second, "kv_list", unavailable}}, at: 2 * time.Second, ready: true},
		{name: "clients that went away do not count", writes: []write{{0, "heartbeat", context.Canceled}, {time.Second, "heartbeat", context.Canceled}}, at: 2 * time.Second, ready: true},
		{name: "cancellations of transfers count", writes: []write{{0, "cancel_transfer", unavailable}, {time.Second, "transfer", unavailable}}, at: 2 * time.Second, ready: false},
	}
	t0 := time.Unix(1_000_000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w writeHealth
			for _, x := range tt.writes {
				w.record(x.op, t0.Add(x.at), x.err)
			}
			err := w.check(t0.Add(tt.at))
			if (err == nil) != tt.ready || (err != nil && !errors.Is(err, ErrUnavailable)) {
				t.Fatalf("check: %v; want ready %v", err, tt.ready)
			}
		})
	}
}
