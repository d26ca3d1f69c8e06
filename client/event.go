package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// The event types of the stream.
const (
	EventLeaderBegin     = "leader.begin"
	EventLeaderEnd       = "leader.end"
	EventLeaderError     = "leader.error"
	EventCandidateJoined = "candidate.joined"
	EventCandidateLeft   = "candidate.left"
	// EventLeaderTransfer: the leader in Data.Previous is asked to hand
	// over to Data.Candidate; EventTransferCancelled: that target left.
	EventLeaderTransfer    = "leader.transfer"
	EventTransferCancelled = "leader.transfer_cancelled"
	// EventReset carries a Snapshot: forget what you knew of the election
	// and apply the events that follow as deltas.
	EventReset = "reset"
)

// CandidateRef names a candidate inside an event.
type CandidateRef struct {
	ID       string          `json:"id"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// TermRef names a past leadership inside an event.
type TermRef struct {
	ID   string `json:"id"`
	Term uint64 `json:"term"`
}

// EventData is the data of a transition event.
type EventData struct {
	Election  string        `json:"election"`
	Term      uint64        `json:"term"`
	Candidate *CandidateRef `json:"candidate,omitempty"`
	Previous  *TermRef      `json:"previous,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Detail    string        `json:"detail,omitempty"`
}

// Event is one message of an event stream.
type Event struct {
	// ID is the event's id, stable across gateway replicas; pass the last
	// one seen to Watch to resume. A reset that is not the last of a
	// series has none.
	ID string
	// Type is one of the Event… constants (or a newer type this package
	// does not know yet).
	Type      string
	Timestamp time.Time
	// Data is set for transition events.
	Data EventData
	// Snapshot is set for reset events.
	Snapshot *Snapshot
	// Raw is the JSON payload as the gateway sent it.
	Raw json.RawMessage
}

// decodeEvent reads the payload of a frame.
func decodeEvent(f frame) (Event, error) {
	ev := Event{Type: f.event, Raw: json.RawMessage(f.data)}
	if f.hasID {
		ev.ID = f.id
	}
	var p struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(f.data), &p); err != nil {
		return ev, fmt.Errorf("elector: event %q: %w", f.event, err)
	}
	ev.Timestamp = p.Timestamp
	if p.Type != "" {
		ev.Type = p.Type
	}
	if len(p.Data) == 0 {
		return ev, nil
	}
	if ev.Type == EventReset {
		var s Snapshot
		if err := json.Unmarshal(p.Data, &s); err != nil {
			return ev, fmt.Errorf("elector: reset event: %w", err)
		}
		ev.Snapshot = &s
		return ev, nil
	}
	if err := json.Unmarshal(p.Data, &ev.Data); err != nil {
		return ev, fmt.Errorf("elector: event %q: %w", ev.Type, err)
	}
	return ev, nil
}
