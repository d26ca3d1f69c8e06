package nats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

func TestCursorForms(t *testing.T) {
	tests := []struct {
		id      string
		seq     uint64
		i       int
		invalid bool
	}{
		{id: "12-3", seq: 12, i: 3},
		{id: "0-0", seq: 0, i: 0},
		{id: "12", seq: 12, i: math.MaxInt}, // after every event of 12, as Head says
		{id: "x-1", invalid: true},
		{id: "1--1", invalid: true},
		{id: "-1", invalid: true},
		{id: "12-", invalid: true},
		{id: "", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			seq, i, err := parseCursor(tt.id)
			if tt.invalid {
				if err == nil {
					t.Fatalf("parsed %q as %d-%d", tt.id, seq, i)
				}
				return
			}
			if err != nil || seq != tt.seq || i != tt.i {
				t.Fatalf("parse %q = %d, %d, %v", tt.id, seq, i, err)
			}
			if i != math.MaxInt && eventID(seq, i) != tt.id {
				t.Fatalf("eventID(%d, %d) = %q, want %q", seq, i, eventID(seq, i), tt.id)
			}
		})
	}
}

func TestLiveTTLRoundsUpToWholeSeconds(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		time.Second: time.Second, 1500 * time.Millisecond: 2 * time.Second,
		10 * time.Second: 10 * time.Second, time.Millisecond: time.Second,
	} {
		if got := liveTTL(in); got != want {
			t.Errorf("liveTTL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestCursorOlderThanHistoryExpires keeps two records per election: a
// cursor into a dropped record is refused, one into a held record resumes.
func TestCursorOlderThanHistoryExpires(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	cfg := freshConfig()
	cfg.History = 2
	b := open(t, e, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cursors []string
	for _, id := range []string{"a", "b", "c"} {
		campaignT(t, b, "hist", id, 10*time.Second)
		el, err := b.Election(ctx, "hist")
		if err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, el.Cursor)
	}
	if _, err := b.Watch(ctx, "hist", cursors[0]); !errors.Is(err, gateway.ErrCursorExpired) {
		t.Errorf("watch after a dropped record: %v, want ErrCursorExpired", err)
	}
	if _, err := b.Watch(ctx, "hist", "999-1"); !errors.Is(err, gateway.ErrCursorExpired) {
		t.Errorf("watch after a future sequence: %v, want ErrCursorExpired", err)
	}
	ch, err := b.Watch(ctx, "hist", cursors[1])
	if err != nil {
		t.Fatalf("watch after a held record: %v", err)
	}
	if ev := <-ch; ev.Type != gateway.EventCandidateJoined || ev.Candidate.ID != "c" {
		t.Errorf("first event after cursor %s: %s %+v, want c joined", cursors[1], ev.Type, ev.Candidate)
	}
}

// TestPingFailsWhileNATSIsDown: readiness goes false when the server is
// gone, so a replica never serves a stale leader silently.
func TestPingFailsWhileNATSIsDown(t *testing.T) {
	e := startServer(t, t.TempDir())
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	e.Shutdown()
	if err := b.Ping(ctx); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("ping with the server down: %v, want ErrUnavailable", err)
	}
	if _, err := b.Election(ctx, "any"); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("election with the server down: %v, want ErrUnavailable", err)
	}
}

// TestRefusalsAreUnavailable: JetStream declining work for lack of room is
// overload (503 with Retry-After), not a server fault (500).
func TestRefusalsAreUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"max consumers", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeMaximumConsumersLimit, Description: "maximum consumers limit reached"}, true},
		{"insufficient resources", &jetstream.APIError{Code: 503, ErrorCode: 10023}, true},
		{"storage exceeded", &jetstream.APIError{Code: 500, ErrorCode: 10047}, true},
		{"any 503", &jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{"timeout", fmt.Errorf("publish: %w", context.DeadlineExceeded), true},
		{"wrong last sequence", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{"bad request", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(translate(tt.err), gateway.ErrUnavailable); got != tt.want {
				t.Fatalf("translate(%v) is ErrUnavailable: %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
