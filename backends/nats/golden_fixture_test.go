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
		Leading:     true,
		LeaderSince: t0.Add(3 * time.Second),
		Previous:    &gateway.TermRef{ID: "node-c", Term: 6},
		PreviousEnd: gateway.ReasonExpired,
		Line: []gateway.Entry{
			{ID: "node-a", Metadata: json.RawMessage(`{"addr":"10.0.0.7:8080"}`), TTL: 10 * time.Second, TokenHash: "a1b2c3", JoinedAt: t0},
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
		Type: gateway.EventLeaderBegin, Time: r.LeaderSince, Election: r.Name, Term: 7,
		Candidate: &gateway.CandidateRef{ID: "node-a", Metadata: r.Line[0].Metadata},
		Previous:  &gateway.TermRef{ID: "node-c", Term: 6}, Reason: gateway.ReasonExpired,
	}}
}
