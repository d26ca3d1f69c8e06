package soak

import (
	"bytes"
	"fmt"

	"github.com/electorhq/elector/client"
)

// BodyMismatch is the property checkBodies checks.
const BodyMismatch = "mismatched event bodies"

// checkBodies reports events whose JSON differs, byte for byte, between
// the streams of subscribers (each reading from its own replica) and the
// webhook requests that carried the same id: an event id names one body
// everywhere, for resuming and de-duplicating on it. Each body that
// differs from the first one seen for its id is one violation. Resets,
// which have no id of their own, and refused requests are left out.
func checkBodies(events []Event, deliveries []Delivery) []Violation {
	type first struct {
		body []byte
		from string
	}
	seen := map[[2]string]first{}
	var v []Violation
	see := func(election, id string, body []byte, from string) {
		k := [2]string{election, id}
		f, ok := seen[k]
		switch {
		case !ok:
			seen[k] = first{body, from}
		case !bytes.Equal(f.body, body):
			v = append(v, Violation{BodyMismatch, election, fmt.Sprintf("event %s is %s to %s and %s to %s", id, f.body, f.from, body, from)})
		}
	}
	for _, e := range events {
		if e.Type != client.EventReset && e.ID != "" && e.Body != nil {
			see(e.Election, e.ID, e.Body, fmt.Sprintf("subscriber %d", e.Subscriber))
		}
	}
	for _, d := range deliveries {
		if d.Problem == "" && d.Body != nil {
			see(d.Endpoint, d.ID, d.Body, "the webhook at "+stamp(d.Received))
		}
	}
	return v
}
