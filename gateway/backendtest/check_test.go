package backendtest

import (
	"testing"

	"github.com/electorhq/elector/gateway"
)

func ev(t gateway.EventType, id string, term uint64) gateway.Event {
	return gateway.Event{Type: t, Election: "e", Term: term, Candidate: &gateway.CandidateRef{ID: id}}
}

func transfer(to, from string, term uint64) gateway.Event {
	e := ev(gateway.EventLeaderTransfer, to, term)
	e.Previous = &gateway.TermRef{ID: from, Term: term}
	return e
}

func reason(e gateway.Event, r string) gateway.Event {
	e.Reason = r
	return e
}

func TestCheckEvents(t *testing.T) {
	begin, end, errev, cancelled := gateway.EventLeaderBegin, gateway.EventLeaderEnd, gateway.EventLeaderError, gateway.EventTransferCancelled
	tests := []struct {
		name   string
		events []gateway.Event
		ok     bool
	}{
		{"empty", nil, true},
		{"handover", []gateway.Event{ev(begin, "a", 1), ev(end, "a", 1), ev(begin, "b", 2)}, true},
		{"error then end", []gateway.Event{ev(begin, "a", 1), ev(errev, "a", 1), ev(end, "a", 1), ev(begin, "b", 5)}, true},
		{"two leaders", []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2)}, false},
		{"term repeats", []gateway.Event{ev(begin, "a", 1), ev(end, "a", 1), ev(begin, "b", 1)}, false},
		{"term goes back", []gateway.Event{ev(begin, "a", 3), ev(end, "a", 3), ev(begin, "b", 2)}, false},
		{"end of someone else", []gateway.Event{ev(begin, "a", 1), ev(end, "b", 1)}, false},
		{"end without begin", []gateway.Event{ev(end, "a", 1)}, false},
		{"transfer handed over", []gateway.Event{ev(begin, "a", 1), transfer("b", "a", 1), reason(ev(end, "a", 1), "transferred"), ev(begin, "b", 2)}, true},
		{"transfer cancelled", []gateway.Event{ev(begin, "a", 1), transfer("b", "a", 1), ev(cancelled, "b", 1), reason(ev(end, "a", 1), "resigned"), ev(begin, "c", 2)}, true},
		{"transfer to someone else's leadership", []gateway.Event{ev(begin, "a", 1), transfer("b", "x", 1)}, false},
		{"transfer with nobody leading", []gateway.Event{transfer("b", "a", 1)}, false},
		{"another than the target leads", []gateway.Event{ev(begin, "a", 1), transfer("b", "a", 1), reason(ev(end, "a", 1), "expired"), ev(begin, "c", 2)}, false},
		{"handed over with no transfer", []gateway.Event{ev(begin, "a", 1), reason(ev(end, "a", 1), "transferred"), ev(begin, "b", 2)}, false},
		{"cancels another transfer", []gateway.Event{ev(begin, "a", 1), transfer("b", "a", 1), ev(cancelled, "c", 1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckEvents(tt.events); (err == nil) != tt.ok {
				t.Fatalf("CheckEvents = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestCheckHolderEvents(t *testing.T) {
	begin, end := gateway.EventLeaderBegin, gateway.EventLeaderEnd
	tests := []struct {
		name   string
		n      int
		events []gateway.Event
		ok     bool
	}{
		{"two of two", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), ev(end, "a", 1), ev(begin, "c", 3)}, true},
		{"three of two", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), ev(begin, "c", 3)}, false},
		{"a term twice", 3, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 1)}, false},
		{"ends in any order", 3, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), ev(begin, "c", 3), ev(end, "b", 2), reason(ev(end, "c", 3), "holders_reduced"), ev(end, "a", 1)}, true},
		{"end of a closed term", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), ev(end, "a", 1), ev(end, "a", 1)}, false},
		{"end names another holder", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), ev(end, "a", 2)}, false},
		{"other slots fill while a transfer waits", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), transfer("c", "b", 2), ev(end, "a", 1), ev(begin, "d", 3), reason(ev(end, "b", 2), "transferred"), ev(begin, "c", 4)}, true},
		{"target begins beside the holder it replaces", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), transfer("c", "b", 2), ev(end, "a", 1), ev(begin, "c", 3)}, false},
		{"another than the target takes the handed-over slot", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), transfer("c", "b", 2), reason(ev(end, "b", 2), "transferred"), ev(begin, "d", 3)}, false},
		{"handover by a holder not asked", 2, []gateway.Event{ev(begin, "a", 1), ev(begin, "b", 2), transfer("c", "b", 2), reason(ev(end, "a", 1), "transferred")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckHolderEvents(tt.events, tt.n); (err == nil) != tt.ok {
				t.Fatalf("CheckHolderEvents(%d) = %v, want ok=%v", tt.n, err, tt.ok)
			}
		})
	}
}
