package soak

import (
	"fmt"
	"sort"

	"github.com/electorhq/elector/client"
)

// The properties of webhook delivery a Violation can breach.
const (
	Undelivered        = "event not delivered to its webhook"
	DeliveryOutOfOrder = "webhook delivery out of order"
	DeliveryRefused    = "webhook request refused"
	DeliveryDisagrees  = "webhook and streams disagree"
)

// checkDeliveries reports, for each election with a webhook subscription:
// an event some subscriber's stream got that the webhook never got (an
// accepted request with its id); a delivery of an event older than one
// the webhook already got (the same event again is allowed: delivery is
// at least once); a request the receiver refused (bad signature, not an
// event, another election's); and a delivery whose type, term or
// candidate differ from the streams' event of the same id.
func checkDeliveries(subscribed map[string]bool, events []Event, deliveries []Delivery) []Violation {
	var v []Violation
	delivered := map[string]map[string]Delivery{} // election → id → first delivery
	newest := map[string]eventID{}                // election → newest id delivered so far
	for _, d := range deliveries {
		if !subscribed[d.Endpoint] {
			continue
		}
		if d.Problem != "" {
			v = append(v, Violation{DeliveryRefused, d.Endpoint, fmt.Sprintf("request for event %s at %s: %s", d.ID, stamp(d.Received), d.Problem)})
			continue
		}
		id := parseID(d.ID)
		if last, ok := newest[d.Endpoint]; ok && id.less(last) {
			v = append(v, Violation{DeliveryOutOfOrder, d.Endpoint, fmt.Sprintf("event %s (%s) delivered at %s after event %s",
				d.ID, d.Type, stamp(d.Received), last.raw)})
		} else {
			newest[d.Endpoint] = id
		}
		if delivered[d.Endpoint] == nil {
			delivered[d.Endpoint] = map[string]Delivery{}
		}
		if _, dup := delivered[d.Endpoint][d.ID]; !dup {
			delivered[d.Endpoint][d.ID] = d
		}
	}

	type key struct{ election, id string }
	seen := map[key]bool{}
	var missing []Event
	for _, e := range events {
		k := key{e.Election, e.ID}
		if e.Type == client.EventReset || !subscribed[e.Election] || seen[k] {
			continue
		}
		seen[k] = true
		d, ok := delivered[e.Election][e.ID]
		switch {
		case !ok:
			missing = append(missing, e)
		case d.Type != e.Type || d.Term != e.Term || d.Candidate != e.Candidate:
			v = append(v, Violation{DeliveryDisagrees, e.Election, fmt.Sprintf("event %s is %s/%d/%s to subscriber %d and %s/%d/%s to the webhook",
				e.ID, e.Type, e.Term, e.Candidate, e.Subscriber, d.Type, d.Term, d.Candidate)})
		}
	}
	sort.SliceStable(missing, func(i, j int) bool { return parseID(missing[i].ID).less(parseID(missing[j].ID)) })
	for _, e := range missing {
		v = append(v, Violation{Undelivered, e.Election, fmt.Sprintf("event %s (%s of %s, term %d), received by subscriber %d at %s, never reached the webhook",
			e.ID, e.Type, e.Candidate, e.Term, e.Subscriber, stamp(e.Received))})
	}
	return v
}

// Undelivered counts the events of subscribed elections that some
// subscriber got and the webhook has not (yet); the soak waits for it to
// reach 0 after the load.
func (h *History) Undelivered() int {
	n := 0
	for _, v := range checkDeliveries(h.Subscribed(), h.Events(), h.Deliveries()) {
		if v.Property == Undelivered {
			n++
		}
	}
	return n
}

// DeliveryFigures are the webhook figures of a run's report.
type DeliveryFigures struct {
	Requests   int // requests the receiver got
	Events     int // distinct events accepted
	Duplicates int // accepted requests for an event accepted before
	Refused    int // requests refused
}

// DeliveryFigures counts the webhook requests of h.
func (h *History) DeliveryFigures() DeliveryFigures {
	var f DeliveryFigures
	seen := map[[2]string]bool{}
	for _, d := range h.Deliveries() {
		f.Requests++
		k := [2]string{d.Endpoint, d.ID}
		switch {
		case d.Problem != "":
			f.Refused++
		case seen[k]:
			f.Duplicates++
		default:
			seen[k] = true
			f.Events++
		}
	}
	return f
}
