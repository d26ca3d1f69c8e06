package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// State is where a candidate stands in its election.
type State string

// The states of a candidate.
const (
	StateFollower State = "follower" // in line, waiting its turn
	StateLeader   State = "leader"   // leads (holds, with several holders), holding a term
	StateError    State = "error"    // out of line until its cooldown ends
)

// CampaignRequest is what a candidate asks for when it campaigns.
type CampaignRequest struct {
	// ID names the candidate (a host name fits). Required.
	ID string
	// TTL is how long the candidacy lives without a heartbeat; 0 takes the
	// gateway's default.
	TTL time.Duration
	// Metadata is a small JSON object shown with the candidate, or nil.
	Metadata json.RawMessage
	// Priority orders the line, higher first (-1000 to 1000); 0 by
	// default. Other values need a gateway backend with transfers.
	Priority int
	// Webhook is the candidate's own webhook, or nil: it receives the
	// candidate's own leader.begin, leader.end and leader.error, signed
	// with the WebhookSecret of Campaign's answer.
	Webhook *CandidateWebhook
	// Session, if set, campaigns in that session (see OpenSession): the
	// candidacy lives as long as the session, with its TTL (leave TTL 0),
	// and Campaign answers the session's token as the candidate's.
	// SessionToken is then the token OpenSession returned; it is sent in
	// SessionTokenHeader, never in the body.
	Session      string
	SessionToken string
}

// CandidateWebhook is a candidate's own webhook. Its leader.begin must be
// answered with a 2xx within BeginTimeout, or the candidate is put in
// error: it gives up the leadership and rejoins after the election's
// error cooldown.
type CandidateWebhook struct {
	// URL is checked as a subscription's (Subscribe). Required.
	URL string `json:"url"`
	// BeginTimeout is 1s to 1h; 0 takes the gateway's default (10s).
	BeginTimeout time.Duration `json:"-"`
}

// MarshalJSON writes the webhook of the campaign body.
func (w CandidateWebhook) MarshalJSON() ([]byte, error) {
	body := struct {
		URL          string `json:"url"`
		BeginTimeout string `json:"begin_timeout,omitempty"`
	}{URL: w.URL}
	if w.BeginTimeout != 0 {
		body.BeginTimeout = w.BeginTimeout.String()
	}
	return json.Marshal(body)
}

// MarshalJSON writes the campaign body of the API.
func (r CampaignRequest) MarshalJSON() ([]byte, error) {
	body := struct {
		ID       string            `json:"id"`
		TTL      string            `json:"ttl,omitempty"`
		Priority int               `json:"priority,omitempty"`
		Metadata json.RawMessage   `json:"metadata,omitempty"`
		Webhook  *CandidateWebhook `json:"webhook,omitempty"`
		Session  string            `json:"session,omitempty"`
	}{ID: r.ID, Priority: r.Priority, Metadata: r.Metadata, Webhook: r.Webhook, Session: r.Session}
	if r.TTL != 0 {
		body.TTL = r.TTL.String()
	}
	return json.Marshal(body)
}

// Duration is a time.Duration that reads and writes the API's duration
// strings ("10s").
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("elector: duration: %w", err)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("elector: duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// String is the Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// Time is a time.Time that reads an empty or absent API time as zero.
type Time struct{ time.Time }

// UnmarshalJSON reads an RFC 3339 string, "" or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" || string(b) == `""` {
		t.Time = time.Time{}
		return nil
	}
	return t.Time.UnmarshalJSON(b)
}

// MarshalJSON writes RFC 3339, or "" for the zero time.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte(`""`), nil
	}
	return t.Time.MarshalJSON()
}

// Leader is the current leader of an election and its fencing term; with
// several holders, one holder and the term of its holdership.
type Leader struct {
	Election  string          `json:"election,omitempty"` // set by Client.Leader
	ID        string          `json:"id"`
	Term      uint64          `json:"term"`
	Metadata  json.RawMessage `json:"metadata"`
	Since     Time            `json:"since"`
	ExpiresAt Time            `json:"expires_at"`
	// Holders are every holder, the longest-standing (this leader) first,
	// in Client.Leader's answer when the election's holders setting is
	// above 1; nil with one holder.
	Holders []Leader `json:"holders,omitempty"`
}

// Status is what a candidate learns from campaign, heartbeat and error
// report: its own record, its place in line and the leader.
type Status struct {
	Election string          `json:"election"`
	ID       string          `json:"id"`
	State    State           `json:"state"`
	Position int             `json:"position"` // candidates ahead in line; -1 in error
	Term     uint64          `json:"term"`     // its own term while it leads (holds); else the election's last term
	Metadata json.RawMessage `json:"metadata"`
	TTL      Duration        `json:"ttl"`
	JoinedAt Time            `json:"joined_at"`
	// ExpiresAt is when the candidacy ends unless it heartbeats.
	ExpiresAt     Time    `json:"expires_at"`
	CooldownUntil Time    `json:"cooldown_until,omitzero"`
	Leader        *Leader `json:"leader"` // with several holders, the longest-standing
	// Holders are every holder, the longest-standing first, when the
	// election's holders setting is above 1; nil with one holder.
	Holders  []Leader `json:"holders,omitempty"`
	Priority int      `json:"priority"`
	// Transfer is the election's pending leadership transfer, or nil.
	Transfer *Transfer `json:"transfer,omitempty"`
	// WebhookSecret signs the candidate's own webhook: set in Campaign's
	// answer only, when the request had a Webhook.
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

// Transfer is a pending transfer of leadership to a named follower.
type Transfer struct {
	To string `json:"to"`
	// From is the holder asked to hand over (with one holder, the leader).
	From        string `json:"from,omitempty"`
	Reason      string `json:"reason"` // "transferred" or "preempted"
	RequestedAt Time   `json:"requested_at"`
}

// Candidate is one candidate in the line of an election.
type Candidate struct {
	ID            string          `json:"id"`
	State         State           `json:"state"`
	Position      int             `json:"position"`
	Metadata      json.RawMessage `json:"metadata"`
	TTL           Duration        `json:"ttl"`
	Priority      int             `json:"priority"`
	JoinedAt      Time            `json:"joined_at"`
	ExpiresAt     Time            `json:"expires_at"`
	Term          uint64          `json:"term,omitempty"`
	CooldownUntil Time            `json:"cooldown_until,omitzero"`
}

// Candidates is an election's line of candidates, leader first.
type Candidates struct {
	Election   string      `json:"election"`
	Term       uint64      `json:"term"`
	Candidates []Candidate `json:"candidates"`
}

// Settings are an election's knobs.
type Settings struct {
	ErrorCooldown Duration `json:"error_cooldown"`
	HandoverDelay Duration `json:"handover_delay"`
	Preempt       bool     `json:"preempt"`
	// Holders is how many candidates hold the election at once (1 unless
	// set; 0 from a gateway older than the setting).
	Holders int `json:"holders,omitempty"`
}

// Election is one election as GET /v1/elections/{election} shows it.
type Election struct {
	Name          string    `json:"name"`
	Settings      Settings  `json:"settings"`
	Term          uint64    `json:"term"`
	Leader        *Leader   `json:"leader"`
	Holders       []Leader  `json:"holders,omitempty"` // as in Status
	Candidates    int       `json:"candidates"`
	HandoverUntil Time      `json:"handover_until,omitzero"`
	Transfer      *Transfer `json:"transfer,omitempty"`
}

// Snapshot is the whole state of one election, the data of a reset event.
type Snapshot struct {
	Election      string      `json:"election"`
	Settings      Settings    `json:"settings"`
	Term          uint64      `json:"term"`
	Leader        *Leader     `json:"leader"`
	Holders       []Leader    `json:"holders,omitempty"` // as in Status
	HandoverUntil Time        `json:"handover_until,omitzero"`
	Transfer      *Transfer   `json:"transfer,omitempty"`
	Candidates    []Candidate `json:"candidates"`
}
