package soak

import (
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
	// Leader and LeaderTerm are a reset's snapshot of the leader.
	Leader     string
	LeaderTerm uint64
	Received   time.Time
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
}

// ObserveOp records op; pass it as bench.Config.Observe.
func (h *History) ObserveOp(op bench.Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// ObserveEvent records ev; pass it as bench.Config.ObserveEvent.
func (h *History) ObserveEvent(sub int, ev client.Event, received time.Time) {
	e := Event{Subscriber: sub, ID: ev.ID, Type: ev.Type, Election: ev.Data.Election, Term: ev.Data.Term, Received: received}
	if ev.Data.Candidate != nil {
		e.Candidate = ev.Data.Candidate.ID
	}
	if s := ev.Snapshot; s != nil {
		e.Election, e.Term = s.Election, s.Term
		if s.Leader != nil {
			e.Leader, e.LeaderTerm = s.Leader.ID, s.Leader.Term
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
