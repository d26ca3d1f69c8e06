package gateway

import (
	"encoding/json"
	"time"
)

// EventType names what happened in an election.
type EventType string

// The event types. They are the `type` of a webhook payload and the `event`
// field of an SSE message.
const (
	EventLeaderBegin     EventType = "leader.begin"
	EventLeaderEnd       EventType = "leader.end"
	EventLeaderError     EventType = "leader.error"
	EventCandidateJoined EventType = "candidate.joined"
	EventCandidateLeft   EventType = "candidate.left"
	// EventLeaderTransfer: a transfer of leadership to a follower was
	// requested (or, with preempt, started); EventTransferCancelled: it
	// was cancelled, or its target left before it completed.
	EventLeaderTransfer    EventType = "leader.transfer"
	EventTransferCancelled EventType = "leader.transfer_cancelled"
)

// EventTypes lists every event type, in a stable order.
var EventTypes = []EventType{EventLeaderBegin, EventLeaderEnd, EventLeaderError, EventCandidateJoined, EventCandidateLeft, EventLeaderTransfer, EventTransferCancelled}

// Reasons carried by events.
const (
	ReasonResigned = "resigned" // the candidate resigned
	ReasonExpired  = "expired"  // the candidate stopped heartbeating
	ReasonError    = "error"    // the leader reported an error
	ReasonCampaign = "campaign" // candidate.joined: a new candidacy
	ReasonRejoined = "rejoined" // candidate.joined: back in line after cooldown
	// ReasonTransferred: the leader handed over to the follower a transfer
	// named; ReasonPreempted: the same, started by a follower of higher
	// priority under the preempt setting.
	ReasonTransferred = "transferred"
	ReasonPreempted   = "preempted"
	// ReasonCancelled: leader.transfer_cancelled of a transfer an operator
	// or the leader cancelled (CancelTransfer).
	ReasonCancelled = "cancelled"
	// ReasonHoldersReduced: leader.end of a holdership that a lower
	// holders setting ended (the newest first); the candidate stays in
	// line as a follower.
	ReasonHoldersReduced = "holders_reduced"
)

// Event is one transition of an election.
//
// An election with more than one holder (Settings.Holders) has one
// leader.begin and one leader.end per holdership, each with that
// holdership's term.
//
// leader.begin: Candidate is the new leader (holder), Term its term,
// Previous the last holdership that ended before it began (if any) and
// Reason how that one ended; with more than one holder that is not
// necessarily the one whose slot it fills.
// leader.end: Candidate and Term are the holdership that ended, Reason is
// resigned, expired, error, transferred, preempted or holders_reduced.
// leader.error: the holder reported an error
// (Detail) and is about to end with reason error. candidate.joined /
// candidate.left: Candidate joined or left the line, Term is the election's
// term at that moment (the last handed out). leader.transfer: Candidate is
// the target, Previous the holdership asked to hand over, Reason
// transferred or preempted; a later one replaces a pending preemption (its
// target is now a follower of higher priority).
// leader.transfer_cancelled: Candidate is the target, Reason why the
// transfer was dropped: cancelled (CancelTransfer), or how the target
// left (resigned, expired, error).
type Event struct {
	// ID is assigned by the backend: the same on every replica, ordered, and
	// a valid Watch cursor.
	ID        string
	Type      EventType
	Time      time.Time
	Election  string
	Term      uint64
	Candidate *CandidateRef
	Previous  *TermRef
	Reason    string
	Detail    string
}

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

// EventData is the "data" member of an event's JSON payload.
type EventData struct {
	Election  string        `json:"election"`
	Term      uint64        `json:"term"`
	Candidate *CandidateRef `json:"candidate,omitempty"`
	Previous  *TermRef      `json:"previous,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Detail    string        `json:"detail,omitempty"`
}

// Payload is an event's JSON form, shared by SSE and webhooks (the Standard
// Webhooks payload shape). The event id travels beside it, as the SSE id or
// the webhook-id header.
type Payload struct {
	Type      EventType `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// Payload returns the event's JSON form.
func (e Event) Payload() Payload {
	return Payload{
		Type:      e.Type,
		Timestamp: e.Time.UTC(),
		Data: EventData{
			Election:  e.Election,
			Term:      e.Term,
			Candidate: e.Candidate,
			Previous:  e.Previous,
			Reason:    e.Reason,
			Detail:    e.Detail,
		},
	}
}

// MarshalJSON encodes the event as its Payload.
func (e Event) MarshalJSON() ([]byte, error) { return json.Marshal(e.Payload()) }
