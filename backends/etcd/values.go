package etcd

import (
	"encoding/json"
	"time"

	"github.com/electorhq/elector/gateway"
)

// The values elector stores are JSON. Durations are whole milliseconds,
// times RFC 3339 with nanoseconds, and every record carries "at", the
// writer's clock when it wrote the value (events take their time from it).

// candidateValue is the value of an elector candidacy key
// (<prefix>/<election>/<lease-hex>) and of its cooling key:
//
//	{"elector":1,"id":"node-a","metadata":{"addr":"10.0.0.7:8080"},"ttl_ms":10000,
//	 "token_hash":"<hex sha-256 of the candidate token>","at":"2026-11-22T10:00:00.1Z"}
//
// A cooling key adds "cooldown_until" and "timed"; a candidate campaigning
// with a priority other than 0 adds "priority". The token hash is what the gateway
// compares; it does not give its reader the power to act for the candidate.
type candidateValue struct {
	Elector       int             `json:"elector"`
	ID            string          `json:"id"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	TTLms         int64           `json:"ttl_ms"`
	TokenHash     string          `json:"token_hash"`
	Priority      int             `json:"priority,omitempty"` // absent in values written before priorities: 0
	At            time.Time       `json:"at"`                 // when it joined the line (or went cooling)
	CooldownUntil time.Time       `json:"cooldown_until,omitzero"`
	// Timed is set on a cooling key whose cooldown has a marker key
	// (timers.go): it ends when etcd deletes the marker, not at
	// CooldownUntil, which is only shown.
	Timed bool `json:"timed,omitempty"`
	// Rank, when set, is the candidate's place among the candidates of
	// its priority, in place of its key's create revision: a key moved to
	// the back only to make way (behind a candidate of higher priority,
	// behind a transfer's target) keeps its rank, and a holder the holders
	// setting ended gets one ahead of every follower (see entry.rank).
	Rank *int64 `json:"rank,omitempty"`
}

func (v candidateValue) ttl() time.Duration { return time.Duration(v.TTLms) * time.Millisecond }

// parseCandidate reads a candidacy key's value. A value that is not an
// elector record was proclaimed by a native client (concurrency.Election,
// etcdctl elect): it is shown with the proclaimed value as its id when that
// is a valid candidate id, else as "etcd:<lease-hex>", and the value itself
// in metadata {"etcd_value": "..."}.
func parseCandidate(raw []byte, hex string) (v candidateValue, native bool) {
	if err := json.Unmarshal(raw, &v); err == nil && v.Elector == 1 && gateway.ValidateCandidateID(v.ID) == nil {
		return v, false
	}
	id := string(raw)
	if gateway.ValidateCandidateID(id) != nil {
		id = "etcd:" + hex
	}
	meta, _ := json.Marshal(map[string]string{"etcd_value": string(raw)})
	return candidateValue{ID: id, Metadata: meta}, true
}

// rank is the candidate's place among the candidates of its priority,
// the lowest first: Rank when a move kept it, else its key's create
// revision, its arrival. gateway.Record keeps its line in priority order
// and, within a priority, in the order candidates arrived, a holder ended
// by a lower holders setting ahead of the followers (Record.insertAhead);
// the rank is that order. Keys stand in etcd in create-revision order and
// move only to the back, so an order that needs several keys moved (a
// lowered holder behind a candidate of higher priority, then the
// followers of its priority behind it) would be lost with the first move
// if the keys' revisions were their only order: the move that makes way
// keeps the rank, and reorder moves the others until the keys stand in
// rank order.
func (x *entry) rank() int64 {
	if !x.native && x.value.Rank != nil {
		return *x.value.Rank
	}
	return x.create
}

// priority is the candidate's place in the order of the line: natives
// count as 0.
func (x *entry) priority() int {
	if x.native {
		return 0
	}
	return x.value.Priority
}

// promiseValue is a holder's promise (<prefix>/_elector/promise/<election>
// in the lead record's one-holder form, …/<election>/<term> in its list
// form), written by each of its heartbeats that answers it holds:
// {"term":41,"key":"<lease-hex>","ttl_ms":10000,"at":"…"}. It names the
// holdership (Term, Key as in its slot) and the TTL it was promised; "at" is the writer's clock, shown and used for event times
// only (see promise.go).
type promiseValue struct {
	Term  uint64    `json:"term"`
	Key   string    `json:"key"`
	TTLms int64     `json:"ttl_ms"`
	At    time.Time `json:"at"`
}

func (v *promiseValue) ttl() time.Duration { return time.Duration(v.TTLms) * time.Millisecond }

// revokedValue (<prefix>/_elector/revoked/<election>/<lease-hex>) records
// a candidacy that etcd ended while the TTL of a keep-alive it had
// answered was still running (see revoked.go):
// {"id":"node-a","token_hash":"…","rev":512,"at":"…","expires_at":"…"}.
// Rev is the revision that deleted its keys, At when the writer saw it
// go, ExpiresAt when its lease should have expired as the writer last
// learnt it.
type revokedValue struct {
	ID        string    `json:"id"`
	TokenHash string    `json:"token_hash"`
	Rev       int64     `json:"rev"`
	At        time.Time `json:"at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// sessionValue (<prefix>/_elector/sessions/<id>, on the session's
// lease) is a session (sessions.go):
// {"elector":1,"token_hash":"…","ttl_ms":10000,"at":"…"}, and
// "closing":true once CloseSession has begun. Elector is 1, as in a
// candidacy's value; TTLms is the session's TTL as asked, which each of
// its candidacies takes (the lease's is whole seconds, no shorter).
type sessionValue struct {
	Elector   int       `json:"elector"`
	TokenHash string    `json:"token_hash"`
	TTLms     int64     `json:"ttl_ms"`
	At        time.Time `json:"at"`
	Closing   bool      `json:"closing,omitempty"`
}

func (v sessionValue) ttl() time.Duration { return time.Duration(v.TTLms) * time.Millisecond }

// markValue (<prefix>/_elector/mark/<election>) is written by the
// transaction that removes a candidacy or cooling key on elector's behalf,
// naming the key's lease and why: {"key":"<lease-hex>","reason":"resigned",
// "detail":"","at":"…"}. A key that disappears in a revision without a mark
// naming it expired (or was deleted by a native client).
type markValue struct {
	Key    string    `json:"key"`
	Reason string    `json:"reason"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// settingsValue (<prefix>/_elector/settings/<election>):
// {"error_cooldown_ms":10000,"handover_delay_ms":0,"preempt":true,"holders":2,"at":"…"}.
// "preempt" is absent when false and "holders" when not set (one holder),
// as in values written before they existed.
type settingsValue struct {
	ErrorCooldownMs int64     `json:"error_cooldown_ms"`
	HandoverDelayMs int64     `json:"handover_delay_ms"`
	Preempt         bool      `json:"preempt,omitempty"`
	Holders         int       `json:"holders,omitempty"`
	At              time.Time `json:"at"`
}

func settingsOf(s gateway.Settings, at time.Time) settingsValue {
	return settingsValue{ErrorCooldownMs: s.ErrorCooldown.Milliseconds(), HandoverDelayMs: s.HandoverDelay.Milliseconds(), Preempt: s.Preempt, Holders: max(s.Holders, 0), At: at}
}

// implicit reports whether v holds the settings that every replica
// derives for an election without a settings key (gateway.DefaultSettings):
// a campaign can then create the election without the key (see
// campaignTxn). The time it was written is no setting.
func (v settingsValue) implicit() bool {
	v.At = time.Time{}
	return v == settingsOf(gateway.DefaultSettings(), time.Time{})
}

func (v settingsValue) settings() gateway.Settings {
	return gateway.Settings{
		ErrorCooldown: time.Duration(v.ErrorCooldownMs) * time.Millisecond,
		HandoverDelay: time.Duration(v.HandoverDelayMs) * time.Millisecond,
		Preempt:       v.Preempt,
		Holders:       v.Holders,
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are marshalled
	}
	return string(b)
}
