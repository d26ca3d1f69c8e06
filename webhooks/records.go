package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Kind tells the two kinds of endpoint apart.
type Kind string

// The kinds of endpoint.
const (
	// KindSubscription receives the events of an election, filtered by type.
	KindSubscription Kind = "subscription"
	// KindCandidate is a candidate's own endpoint, given when it campaigns:
	// it receives the candidate's own leader.begin, leader.end and
	// leader.error, and goes away when the candidate leaves the election.
	KindCandidate Kind = "candidate"
)

// Endpoint is where webhooks go, as stored in the KV under
// wh/ep/<election>/<id>. Secrets never leave the KV except in the answer
// that creates them and in signatures.
type Endpoint struct {
	ID       string              `json:"id"`
	Kind     Kind                `json:"kind"`
	Election string              `json:"election"`
	URL      string              `json:"url"`
	Types    []gateway.EventType `json:"types,omitempty"` // subscriptions: empty means all
	Secrets  []Secret            `json:"secrets"`         // newest first
	Disabled bool                `json:"disabled,omitempty"`
	// DisabledReason says why deliveries stopped (410 Gone, …).
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// Start is the event id the endpoint's deliveries start after.
	Start string `json:"start"`
	// Candidate endpoints: the candidate, the hash of its token (to report
	// an unacknowledged begin in its name) and its begin deadline (0: the
	// Service's).
	Candidate    string        `json:"candidate,omitempty"`
	TokenHash    string        `json:"token_hash,omitempty"`
	BeginTimeout time.Duration `json:"begin_timeout,omitempty"`
}

// Secret is one signing secret of an endpoint. A rotated-out secret keeps
// signing until ExpiresAt.
type Secret struct {
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// signing returns the secrets that sign at now, newest first.
func (e Endpoint) signing(now time.Time) []string {
	var out []string
	for _, s := range e.Secrets {
		if s.ExpiresAt.IsZero() || s.ExpiresAt.After(now) {
			out = append(out, s.Value)
		}
	}
	return out
}

// wants reports whether e delivers ev.
func (e Endpoint) wants(ev gateway.Event) bool {
	if e.Kind == KindCandidate {
		if ev.Candidate == nil || ev.Candidate.ID != e.Candidate {
			return false
		}
		return ev.Type == gateway.EventLeaderBegin || ev.Type == gateway.EventLeaderEnd || ev.Type == gateway.EventLeaderError
	}
	return len(e.Types) == 0 || slices.Contains(e.Types, ev.Type)
}

// ends reports whether ev ends a candidate endpoint: its candidate left.
func (e Endpoint) ends(ev gateway.Event) bool {
	return e.Kind == KindCandidate && ev.Type == gateway.EventCandidateLeft && ev.Candidate != nil && ev.Candidate.ID == e.Candidate
}

// cursorRecord is an endpoint's place in its election's events and the
// claim of the replica working it, stored under wh/cur/<id>.
type cursorRecord struct {
	// Last is the id of the last event the endpoint is done with.
	Last string `json:"last"`
	// Replica holds the claim until Until; "" when unclaimed.
	Replica string    `json:"replica,omitempty"`
	Until   time.Time `json:"until,omitzero"`
}

// Status is where a delivery stands.
type Status string

// The statuses of a delivery.
const (
	StatusPending   Status = "pending"   // being tried
	StatusSucceeded Status = "succeeded" // a 2xx was received
	StatusFailed    Status = "failed"    // retries exhausted, 410, deadline passed or superseded
	// StatusGap records events that were never delivered because the
	// backend no longer held them when the endpoint's worker resumed.
	StatusGap Status = "gap"
)

// Delivery is the log of one event's delivery to one endpoint, stored under
// wh/dl/<endpoint>/<id>. Its id is derived from the event id, so a replica
// that takes over an endpoint continues the same record.
type Delivery struct {
	ID        string            `json:"id"`
	Endpoint  string            `json:"endpoint"`
	Election  string            `json:"election"`
	EventID   string            `json:"event_id,omitempty"`
	EventType gateway.EventType `json:"event_type,omitempty"`
	Term      uint64            `json:"term"`
	Status    Status            `json:"status"`
	// Error says why a delivery failed, or which events a gap lost.
	Error     string          `json:"error,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Attempts  []Attempt       `json:"attempts"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// NextAttemptAt is when the next retry is due while pending.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
}

// Attempt is one HTTP request of a delivery.
type Attempt struct {
	At         time.Time     `json:"at"`
	StatusCode int           `json:"status_code,omitempty"` // 0 when no response came
	Latency    time.Duration `json:"latency"`
	Error      string        `json:"error,omitempty"`
	Manual     bool          `json:"manual,omitempty"` // a redelivery asked for through the API
}

// maxAttempts bounds the attempts a delivery record keeps (manual
// redeliveries could grow it without end); the oldest are dropped.
const maxAttempts = 50

// record appends attempt a to d, keeping the last maxAttempts, as of now.
func (d *Delivery) record(a Attempt, now time.Time) {
	d.Attempts = append(d.Attempts, a)
	if len(d.Attempts) > maxAttempts {
		d.Attempts = d.Attempts[len(d.Attempts)-maxAttempts:]
	}
	d.UpdatedAt = now.UTC()
}

// Keys of the KV.
func endpointsKey(election string) string { return "wh/ep/" + election }
func endpointKey(election, id string) string {
	return endpointsKey(election) + "/" + id
}
func cursorKey(id string) string           { return "wh/cur/" + id }
func deliveriesKey(endpoint string) string { return "wh/dl/" + endpoint }
func deliveryKey(endpoint, id string) string {
	return deliveriesKey(endpoint) + "/" + id
}

// deliveryID is the id of the delivery of event id: "e" and the unpadded
// base64url of the event id, which fits a KV key segment.
func deliveryID(eventID string) string {
	return "e" + base64.RawURLEncoding.EncodeToString([]byte(eventID))
}

// newID returns a fresh random id with a readable prefix.
func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
