package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// SubscriptionRequest is what Subscribe asks for.
type SubscriptionRequest struct {
	// URL receives the deliveries: an absolute http or https URL on a
	// public network, unless the gateway allows private networks.
	// Required.
	URL string `json:"url"`
	// Types are the event types to deliver (the Event… constants); all
	// when empty.
	Types []string `json:"types,omitempty"`
	// Secret is a signing secret of your own ("whsec_" and the base64 of
	// 24 to 64 random bytes); the gateway makes one when it is "".
	Secret string `json:"secret,omitempty"`
}

// Subscription is a URL subscribed to an election's events.
type Subscription struct {
	ID       string   `json:"id"`
	Election string   `json:"election"`
	URL      string   `json:"url"`
	Types    []string `json:"types"` // empty: every type
	// Secrets are the secrets that sign deliveries, newest first, without
	// their values.
	Secrets []SubscriptionSecret `json:"secrets"`
	// Disabled: deliveries stopped (the endpoint answered 410 Gone);
	// subscribe again to resume.
	Disabled       bool   `json:"disabled"`
	DisabledReason string `json:"disabled_reason,omitempty"`
	CreatedAt      Time   `json:"created_at"`
	// Secret is the signing secret, in the answers of Subscribe and
	// RotateSecret only: keep it to verify deliveries (ReadWebhook).
	Secret string `json:"secret,omitempty"`
}

// SubscriptionSecret is one secret that signs a subscription's
// deliveries; a rotated-out one signs until ExpiresAt.
type SubscriptionSecret struct {
	CreatedAt Time `json:"created_at"`
	ExpiresAt Time `json:"expires_at,omitzero"`
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The statuses of a delivery.
const (
	DeliveryPending   DeliveryStatus = "pending"   // being tried; see NextAttemptAt
	DeliverySucceeded DeliveryStatus = "succeeded" // a 2xx came back
	DeliveryFailed    DeliveryStatus = "failed"    // retries exhausted, 410 Gone, a begin deadline passed or superseded; see Error
	DeliveryGap       DeliveryStatus = "gap"       // events the backend no longer held, never delivered; see Error
)

// Delivery is one event sent to a subscription or a candidate's own
// webhook, with its attempts; or, with DeliveryGap, events that were not.
type Delivery struct {
	ID string `json:"id"`
	// EventID is the event's id, sent as webhook-id on every attempt.
	EventID   string         `json:"event_id,omitempty"`
	EventType string         `json:"event_type,omitempty"`
	Term      uint64         `json:"term"`
	Status    DeliveryStatus `json:"status"`
	Error     string         `json:"error,omitempty"`
	CreatedAt Time           `json:"created_at"`
	UpdatedAt Time           `json:"updated_at"`
	// NextAttemptAt is when a pending delivery is tried next.
	NextAttemptAt Time      `json:"next_attempt_at,omitzero"`
	Attempts      []Attempt `json:"attempts"`
	// Payload is the event delivered, nil for a gap.
	Payload *Event `json:"-"`
}

// UnmarshalJSON reads a delivery, its payload as an Event.
func (d *Delivery) UnmarshalJSON(b []byte) error {
	type plain Delivery // without this method
	var v struct {
		plain
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Delivery(v.plain)
	if len(v.Payload) == 0 || string(v.Payload) == "null" {
		return nil
	}
	ev, err := decodeEvent(frame{id: d.EventID, hasID: d.EventID != "", data: string(v.Payload)})
	if err != nil {
		return err
	}
	d.Payload = &ev
	return nil
}

// Attempt is one try of a delivery.
type Attempt struct {
	At Time `json:"at"`
	// StatusCode is the receiver's HTTP status; 0 when no answer came.
	StatusCode int      `json:"status_code,omitempty"`
	Latency    Duration `json:"latency"`
	// Error says why the attempt failed (never the URL).
	Error string `json:"error,omitempty"`
	// Manual: a redelivery asked for through the API.
	Manual bool `json:"manual,omitempty"`
}

// Subscribe subscribes r.URL to every event of election from now on (or
// the r.Types), delivered as signed webhooks in event order, with
// retries (the API token needs the admin scope). The answer carries the
// signing Secret, shown only here. The election need not exist yet.
//
// Errors: ErrDestinationRefused (a URL on a loopback, private or other
// non-public network, unless the gateway allows them, or not http(s)),
// ErrInvalidRequest, ErrWebhooksUnavailable, ErrForbidden,
// ErrLimitReached, ErrUnavailable.
func (c *Client) Subscribe(ctx context.Context, election string, r SubscriptionRequest) (Subscription, error) {
	var s Subscription
	err := c.do(ctx, http.MethodPost, r, "", &s, "v1", "elections", election, "subscriptions")
	return s, err
}

// Subscriptions returns election's subscriptions, oldest first, without
// their secrets.
//
// Errors: ErrInvalidRequest, ErrWebhooksUnavailable, ErrForbidden,
// ErrUnavailable.
func (c *Client) Subscriptions(ctx context.Context, election string) ([]Subscription, error) {
	var page struct {
		Subscriptions []Subscription `json:"subscriptions"`
	}
	err := c.do(ctx, http.MethodGet, nil, "", &page, "v1", "elections", election, "subscriptions")
	return page.Subscriptions, err
}

// Subscription returns subscription sub of election, without its secrets.
//
// Errors: ErrWebhookNotFound, ErrWebhooksUnavailable, ErrForbidden,
// ErrUnavailable.
func (c *Client) Subscription(ctx context.Context, election, sub string) (Subscription, error) {
	var s Subscription
	err := c.do(ctx, http.MethodGet, nil, "", &s, "v1", "elections", election, "subscriptions", sub)
	return s, err
}

// Unsubscribe removes subscription sub and its delivery log; a delivery
// in progress stops before its next attempt.
//
// Errors: ErrWebhookNotFound, ErrWebhooksUnavailable, ErrForbidden,
// ErrUnavailable.
func (c *Client) Unsubscribe(ctx context.Context, election, sub string) error {
	return c.do(ctx, http.MethodDelete, nil, "", nil, "v1", "elections", election, "subscriptions", sub)
}

// RotateSecret gives subscription sub a new signing secret, returned in
// the answer's Secret only. The previous secret keeps signing beside it
// for an overlap period (24h by default), so that a receiver can switch
// without losing a delivery.
//
// Errors: ErrWebhookNotFound, ErrWebhooksUnavailable, ErrForbidden,
// ErrUnavailable.
func (c *Client) RotateSecret(ctx context.Context, election, sub string) (Subscription, error) {
	var s Subscription
	err := c.do(ctx, http.MethodPost, nil, "", &s, "v1", "elections", election, "subscriptions", sub, "rotate-secret")
	return s, err
}

// Deliveries returns the delivery log of subscription sub, newest first:
// at most limit deliveries (1 to 500; 0 takes the gateway's default of
// 100), each with its attempts, and the gaps of events the backend no
// longer held.
//
// Errors: ErrWebhookNotFound, ErrInvalidRequest (a limit out of range),
// ErrWebhooksUnavailable, ErrForbidden, ErrUnavailable.
func (c *Client) Deliveries(ctx context.Context, election, sub string, limit int) ([]Delivery, error) {
	return c.deliveries(ctx, limit, "", "v1", "elections", election, "subscriptions", sub, "deliveries")
}

// Delivery returns delivery id of subscription sub, with its attempts.
//
// Errors: ErrWebhookNotFound, ErrDeliveryNotFound,
// ErrWebhooksUnavailable, ErrForbidden, ErrUnavailable.
func (c *Client) Delivery(ctx context.Context, election, sub, id string) (Delivery, error) {
	var d Delivery
	err := c.do(ctx, http.MethodGet, nil, "", &d, "v1", "elections", election, "subscriptions", sub, "deliveries", id)
	return d, err
}

// Redeliver sends delivery id of subscription sub again, now, with the
// same webhook-id and the current secrets, and returns it with the new
// attempt (Manual), whatever its outcome; a success settles a pending or
// failed delivery.
//
// Errors: ErrNotRedeliverable (a gap), ErrWebhookNotFound,
// ErrDeliveryNotFound, ErrWebhooksUnavailable, ErrForbidden,
// ErrUnavailable.
func (c *Client) Redeliver(ctx context.Context, election, sub, id string) (Delivery, error) {
	var d Delivery
	err := c.do(ctx, http.MethodPost, nil, "", &d, "v1", "elections", election, "subscriptions", sub, "deliveries", id, "redeliver")
	return d, err
}

// CandidateDeliveries returns the delivery log of the own webhook of
// candidate id (its leader.begin, leader.end and leader.error), newest
// first, at most limit (as in Deliveries); token is the candidate's. The
// log goes away with the candidate.
//
// Errors: ErrTokenMismatch (a wrong token, or a candidate without a
// webhook), ErrWebhookNotFound (a candidate without a webhook, once its
// own token was checked), ErrCandidateTokenMissing, ErrInvalidRequest,
// ErrWebhooksUnavailable, ErrUnavailable.
func (c *Client) CandidateDeliveries(ctx context.Context, election, id, token string, limit int) ([]Delivery, error) {
	return c.deliveries(ctx, limit, token, "v1", "elections", election, "candidates", id, "deliveries")
}

// RedeliverCandidate sends delivery of candidate id's own webhook again,
// now, as Redeliver does; token is the candidate's.
//
// Errors: ErrNotRedeliverable, ErrDeliveryNotFound, ErrTokenMismatch,
// ErrCandidateTokenMissing, ErrWebhooksUnavailable, ErrUnavailable.
func (c *Client) RedeliverCandidate(ctx context.Context, election, id, token, delivery string) (Delivery, error) {
	var d Delivery
	err := c.do(ctx, http.MethodPost, nil, token, &d, "v1", "elections", election, "candidates", id, "deliveries", delivery, "redeliver")
	return d, err
}

// deliveries reads a delivery log at segments, at most limit long (the
// gateway's default for 0).
func (c *Client) deliveries(ctx context.Context, limit int, token string, segments ...string) ([]Delivery, error) {
	var q url.Values
	if limit != 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var page struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	err := c.doQuery(ctx, http.MethodGet, q, nil, token, &page, segments...)
	return page.Deliveries, err
}
