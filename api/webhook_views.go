package api

import (
	"encoding/json"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/webhooks"
)

// The JSON views of webhook subscriptions and deliveries. Secret values
// appear only in the answers that create them (secret, webhook_secret).

// secretView describes a signing secret without its value.
type secretView struct {
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

// subscriptionDoc is one subscription; Secret is set only when it was just
// created or rotated.
type subscriptionDoc struct {
	ID             string              `json:"id"`
	Election       string              `json:"election"`
	URL            string              `json:"url"`
	Types          []gateway.EventType `json:"types"`
	Secrets        []secretView        `json:"secrets"`
	Disabled       bool                `json:"disabled"`
	DisabledReason string              `json:"disabled_reason,omitempty"`
	CreatedAt      string              `json:"created_at"`
	Secret         string              `json:"secret,omitempty"`
}

type subscriptionsDoc struct {
	Subscriptions []subscriptionDoc `json:"subscriptions"`
}

// attemptView is one HTTP attempt of a delivery.
type attemptView struct {
	At         string `json:"at"`
	StatusCode int    `json:"status_code,omitempty"`
	Latency    string `json:"latency"`
	Error      string `json:"error,omitempty"`
	Manual     bool   `json:"manual,omitempty"`
}

// deliveryDoc is the log of one event's delivery to one endpoint.
type deliveryDoc struct {
	ID            string            `json:"id"`
	EventID       string            `json:"event_id,omitempty"`
	EventType     gateway.EventType `json:"event_type,omitempty"`
	Term          uint64            `json:"term"`
	Status        webhooks.Status   `json:"status"`
	Error         string            `json:"error,omitempty"`
	CreatedAt     string            `json:"created_at"`
	UpdatedAt     string            `json:"updated_at"`
	NextAttemptAt string            `json:"next_attempt_at,omitempty"`
	Attempts      []attemptView     `json:"attempts"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
}

type deliveriesDoc struct {
	Deliveries []deliveryDoc `json:"deliveries"`
}

func subscriptionOf(ep webhooks.Endpoint, secret string) subscriptionDoc {
	d := subscriptionDoc{
		ID: ep.ID, Election: ep.Election, URL: ep.URL, Types: ep.Types, Disabled: ep.Disabled,
		DisabledReason: ep.DisabledReason, CreatedAt: formatTime(ep.CreatedAt), Secret: secret,
		Secrets: make([]secretView, 0, len(ep.Secrets)),
	}
	if d.Types == nil {
		d.Types = []gateway.EventType{}
	}
	for _, s := range ep.Secrets {
		d.Secrets = append(d.Secrets, secretView{CreatedAt: formatTime(s.CreatedAt), ExpiresAt: formatTime(s.ExpiresAt)})
	}
	return d
}

func deliveryOf(d webhooks.Delivery) deliveryDoc {
	v := deliveryDoc{
		ID: d.ID, EventID: d.EventID, EventType: d.EventType, Term: d.Term, Status: d.Status, Error: d.Error,
		CreatedAt: formatTime(d.CreatedAt), UpdatedAt: formatTime(d.UpdatedAt), NextAttemptAt: formatTime(d.NextAttemptAt),
		Attempts: make([]attemptView, 0, len(d.Attempts)), Payload: d.Payload,
	}
	for _, a := range d.Attempts {
		v.Attempts = append(v.Attempts, attemptView{At: formatTime(a.At), StatusCode: a.StatusCode, Latency: a.Latency.String(), Error: a.Error, Manual: a.Manual})
	}
	return v
}

func deliveriesOf(ds []webhooks.Delivery) deliveriesDoc {
	out := deliveriesDoc{Deliveries: make([]deliveryDoc, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryOf(d))
	}
	return out
}
