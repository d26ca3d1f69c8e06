package nats

import (
	"encoding/json"
	"time"

	"github.com/electorhq/elector/gateway"
)

// goldenRecord is the record the golden files hold: every field set.
func goldenRecord() *gateway.Record {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	return &gateway.Record{
		Name:        "orders",
		Settings:    gateway.Settings{ErrorCooldown: 10 * time.Second, HandoverDelay: 2500 * time.Millisecond},
		Term:        7,
		Previous:    &gateway.TermRef{ID: "node-c", Term: 6},
		PreviousEnd: gateway.ReasonExpired,
		Line: []gateway.Entry{
			{ID: "node-a", Metadata: json.RawMessage(`{"addr":"10.0.0.7:8080"}`), TTL: 10 * time.Second, TokenHash: "a1b2c3", JoinedAt: t0, Term: 7, Since: t0.Add(3 * time.Second)},
			{ID: "node-b", TTL: 15 * time.Second, TokenHash: "d4e5f6", JoinedAt: t0.Add(time.Second)},
		},
		Cooling: []gateway.Entry{
			{ID: "node-d", TTL: 30 * time.Second, TokenHash: "0789ab", JoinedAt: t0.Add(2 * time.Second), CooldownUntil: t0.Add(12 * time.Second)},
		},
	}
}

// goldenEvents are the events of the golden record message.
func goldenEvents() []gateway.Event {
	r := goldenRecord()
	return []gateway.Event{{
		Type: gateway.EventLeaderBegin, Time: r.Line[0].Since, Election: r.Name, Term: 7,
		Candidate: &gateway.CandidateRef{ID: "node-a", Metadata: r.Line[0].Metadata},
		Previous:  &gateway.TermRef{ID: "node-c", Term: 6}, Reason: gateway.ReasonExpired,
	}}
}

// goldenHoldersRecord is an election with three holders, one slot held
// back by a handover delay and one by a lowered setting's hold, and a
// transfer pending: what testdata/record-v2-holders.json holds.
func goldenHoldersRecord() *gateway.Record {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	return &gateway.Record{
		Name:        "schedulers",
		Settings:    gateway.Settings{ErrorCooldown: 10 * time.Second, HandoverDelay: 2 * time.Second, Holders: 4},
		Term:        12,
		Previous:    &gateway.TermRef{ID: "node-e", Term: 12},
		PreviousEnd: gateway.ReasonHoldersReduced,
		Delays:      []gateway.Delay{{ID: "node-d", Term: 10, Until: t0.Add(9 * time.Second)}},
		Held:        []gateway.Hold{{ID: "node-e", Term: 12, Until: t0.Add(17 * time.Second), TTL: 10 * time.Second, Reason: gateway.ReasonHoldersReduced}},
		Pending:     &gateway.Transfer{To: "node-e", Reason: gateway.ReasonTransferred, At: t0.Add(8 * time.Second), From: "node-b", Term: 9},
		Line: []gateway.Entry{
			{ID: "node-a", TTL: 10 * time.Second, TokenHash: "a1", JoinedAt: t0, Term: 8, Since: t0.Add(time.Second)},
			{ID: "node-b", TTL: 10 * time.Second, TokenHash: "b2", JoinedAt: t0, Term: 9, Since: t0.Add(2 * time.Second)},
			{ID: "node-e", TTL: 10 * time.Second, TokenHash: "e5", JoinedAt: t0, Priority: 1},
		},
	}
}
