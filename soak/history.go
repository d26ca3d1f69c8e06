package soak

import (
	"slices"
	"sync"
	"time"

	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
)

// Event is one event a subscriber received.
type Event struct {
	Subscriber int
	ID         string
	Type       string
	Election   string
	Term       uint64
	Candidate  string // the candidate the event names, if any
	// Leader and LeaderTerm are a reset's snapshot of the leader (the
	// longest-standing holder), Holders of every holder (the leader alone
	// with one holder).
	Leader     string
	LeaderTerm uint64
	Holders    []Holding
	Received   time.Time
	// Body is the event's JSON as the stream carried it.
	Body []byte
}

// Holding is one holder of an election and the term of its holdership.
type Holding struct {
	ID   string
	Term uint64
}

// Delivery is one webhook request the soak's receiver got.
type Delivery struct {
	// Endpoint is the election whose subscription the request was sent
	// for (the receiver's URL names it).
	Endpoint string
	// ID is the webhook-id header: the event's id.
	ID        string
	Type      string
	Election  string // as the body says
	Term      uint64
	Candidate string // the candidate the event names, if any
	// Problem, when not empty, is what made the receiver refuse the
	// request: a bad signature, a body that is not an event, an election
	// that is not the endpoint's.
	Problem  string
	Received time.Time
	// Body is the request's body, the event's JSON.
	Body []byte
}

// Fault is one fault injected.
type Fault struct {
	Kind       string // "kill-gateway", "pause-candidate", …
	Target     string
	Start, End time.Time
}

// History records operations, events and faults; it is safe for
// concurrent use, and its Observe methods fit bench.Config.
type History struct {
	mu     sync.Mutex
	ops    []bench.Op
	events []Event
	faults []Fault

	subscribed map[string]bool // elections with a webhook subscription
	deliveries []Delivery
}

// ObserveOp records op; pass it as bench.Config.Observe.
func (h *History) ObserveOp(op bench.Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// ObserveEvent records ev; pass it as bench.Config.ObserveEvent.
func (h *History) ObserveEvent(sub int, ev client.Event, received time.Time) {
	e := Event{Subscriber: sub, ID: ev.ID, Type: ev.Type, Election: ev.Data.Election, Term: ev.Data.Term, Received: received, Body: slices.Clone(ev.Raw)}
	if ev.Data.Candidate != nil {
		e.Candidate = ev.Data.Candidate.ID
	}
	if s := ev.Snapshot; s != nil {
		e.Election, e.Term = s.Election, s.Term
		if s.Leader != nil {
			e.Leader, e.LeaderTerm = s.Leader.ID, s.Leader.Term
			e.Holders = []Holding{{s.Leader.ID, s.Leader.Term}}
		}
		if s.Holders != nil {
			e.Holders = e.Holders[:0]
			for _, l := range s.Holders {
				e.Holders = append(e.Holders, Holding{l.ID, l.Term})
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// Fault records a fault.
func (h *History) Fault(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, f)
}

// Subscribe records that the webhook subscription of election was in
// place before any of its events happened, so that every event of it must
// be delivered.
func (h *History) Subscribe(election string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subscribed == nil {
		h.subscribed = map[string]bool{}
	}
	h.subscribed[election] = true
}

// ObserveDelivery records a webhook request the receiver got.
func (h *History) ObserveDelivery(d Delivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliveries = append(h.deliveries, d)
}

// Ops returns a copy of the operations recorded, in the order they ended.
func (h *History) Ops() []bench.Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bench.Op(nil), h.ops...)
}

// Events returns a copy of the events recorded, in the order they arrived.
func (h *History) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Faults returns a copy of the faults recorded.
func (h *History) Faults() []Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Fault(nil), h.faults...)
}

// Subscribed returns the elections with a webhook subscription.
func (h *History) Subscribed() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]bool, len(h.subscribed))
	for e := range h.subscribed {
		out[e] = true
	}
	return out
}

// Deliveries returns a copy of the webhook requests recorded, in the
// order they arrived.
func (h *History) Deliveries() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.deliveries...)
}
