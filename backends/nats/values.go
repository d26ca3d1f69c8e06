package nats

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/electorhq/elector/gateway"
)

// The record messages this backend writes are JSON, versioned by "v".
// Version 2, written since the records got a type of their own:
//
//	{"v":2,"record":{"name":"orders","settings":{"error_cooldown":"10s","handover_delay":"0s"},
//	  "term":7,"leading":true,"leader_since":"…","previous":{"id":"node-c","term":6},
//	  "previous_end":"expired","line":[{"id":"node-a","metadata":{…},"ttl":"10s",
//	  "token_hash":"<hex>","joined_at":"…"}],"cooling":[…]},
//	 "events":[<gateway.Payload>…],"prev":41}
//
// A deleted election keeps a tombstone: its record with "deleted":true
// and no candidates, holding its last term, so that an election created
// again under the name continues above it (the stream denies deletes, so
// the tombstone stays). Leadership transfers add "transfer" to the
// record, "priority" to entries and "preempt" to settings. A leader the
// gateway failed adds "held":{"id":"node-a","term":7,"until":"…","ttl":"10s"}
// until its promise has lapsed (gateway.Record.FailLeader); a replica of
// a version without it would promote the next at once, so replicas
// upgrade together.
//
// Durations are Go duration strings, times RFC 3339 with nanoseconds.
// Version 1 stored gateway.Record as it marshals (settings as
// {"ErrorCooldown":<ns>,"HandoverDelay":<ns>}, TTLs in nanoseconds); it is
// still read, so that an upgraded gateway reads an older store, and never
// written. testdata/record-v1.json and record-v2.json pin both forms.
const (
	messageV1      = 1
	messageVersion = 2
)

// message is what one record message holds: the election's record after a
// transition and the events that transition caused, written together so
// that a crash can never keep one without the other.
//
// Prev is the stream sequence of the election's record this one was
// computed from (0 for the election's first record), known to the writer
// from its compare-and-set. It links the election's records into a chain
// that a watcher checks, so a record it never received (dropped by the
// per-election History limit while the watcher lagged) is noticed rather
// than skipped in silence. Nil in records of writers older than the field.
type message struct {
	Version int               `json:"v"`
	Record  json.RawMessage   `json:"record"`
	Events  []gateway.Payload `json:"events,omitempty"`
	Prev    *uint64           `json:"prev,omitempty"`
}

// recordValue is gateway.Record as version 2 stores it.
type recordValue struct {
	Name          string            `json:"name"`
	Settings      settingsValue     `json:"settings"`
	Term          uint64            `json:"term"`
	Leading       bool              `json:"leading,omitempty"`
	LeaderSince   time.Time         `json:"leader_since,omitzero"`
	Previous      *gateway.TermRef  `json:"previous,omitempty"`
	PreviousEnd   string            `json:"previous_end,omitempty"`
	HandoverUntil time.Time         `json:"handover_until,omitzero"`
	Held          *holdValue        `json:"held,omitempty"`
	Pending       *gateway.Transfer `json:"transfer,omitempty"`
	Line          []entryValue      `json:"line,omitempty"`
	Cooling       []entryValue      `json:"cooling,omitempty"`
	Deleted       bool              `json:"deleted,omitempty"`
}

// holdValue is a gateway.Hold.
type holdValue struct {
	ID    string    `json:"id"`
	Term  uint64    `json:"term"`
	Until time.Time `json:"until"`
	TTL   duration  `json:"ttl"`
}

func holdValueOf(h *gateway.Hold) *holdValue {
	if h == nil {
		return nil
	}
	return &holdValue{ID: h.ID, Term: h.Term, Until: h.Until, TTL: duration(h.TTL)}
}

func (v *holdValue) hold() *gateway.Hold {
	if v == nil {
		return nil
	}
	return &gateway.Hold{ID: v.ID, Term: v.Term, Until: v.Until, TTL: time.Duration(v.TTL)}
}

type settingsValue struct {
	ErrorCooldown duration `json:"error_cooldown"`
	HandoverDelay duration `json:"handover_delay"`
	Preempt       bool     `json:"preempt,omitempty"`
}

// entryValue is a gateway.Entry. ExpiresAt is not stored: liveness lives
// in the liveness stream.
type entryValue struct {
	ID            string          `json:"id"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	TTL           duration        `json:"ttl"`
	Priority      int             `json:"priority,omitempty"`
	TokenHash     string          `json:"token_hash"`
	JoinedAt      time.Time       `json:"joined_at"`
	CooldownUntil time.Time       `json:"cooldown_until,omitzero"`
}

// duration is a time.Duration stored as its string ("10s", "1m30s").
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func valueOf(r *gateway.Record, deleted bool) recordValue {
	v := recordValue{
		Name: r.Name, Term: r.Term, Leading: r.Leading, LeaderSince: r.LeaderSince,
		Previous: r.Previous, PreviousEnd: r.PreviousEnd, HandoverUntil: r.HandoverUntil, Held: holdValueOf(r.Held), Pending: r.Pending, Deleted: deleted,
		Settings: settingsValue{ErrorCooldown: duration(r.Settings.ErrorCooldown), HandoverDelay: duration(r.Settings.HandoverDelay), Preempt: r.Settings.Preempt},
		Line:     entryValues(r.Line),
		Cooling:  entryValues(r.Cooling),
	}
	return v
}

func entryValues(es []gateway.Entry) []entryValue {
	if len(es) == 0 {
		return nil
	}
	out := make([]entryValue, len(es))
	for i, e := range es {
		out[i] = entryValue{ID: e.ID, Metadata: e.Metadata, TTL: duration(e.TTL), Priority: e.Priority, TokenHash: e.TokenHash, JoinedAt: e.JoinedAt, CooldownUntil: e.CooldownUntil}
	}
	return out
}

func (v recordValue) record() *gateway.Record {
	return &gateway.Record{
		Name: v.Name, Term: v.Term, Leading: v.Leading, LeaderSince: v.LeaderSince,
		Previous: v.Previous, PreviousEnd: v.PreviousEnd, HandoverUntil: v.HandoverUntil, Held: v.Held.hold(), Pending: v.Pending,
		Settings: gateway.Settings{ErrorCooldown: time.Duration(v.Settings.ErrorCooldown), HandoverDelay: time.Duration(v.Settings.HandoverDelay), Preempt: v.Settings.Preempt},
		Line:     entries(v.Line),
		Cooling:  entries(v.Cooling),
	}
}

func entries(vs []entryValue) []gateway.Entry {
	if len(vs) == 0 {
		return nil
	}
	out := make([]gateway.Entry, len(vs))
	for i, v := range vs {
		out[i] = gateway.Entry{ID: v.ID, Metadata: v.Metadata, TTL: time.Duration(v.TTL), Priority: v.Priority, TokenHash: v.TokenHash, JoinedAt: v.JoinedAt, CooldownUntil: v.CooldownUntil}
	}
	return out
}

// encode returns the version 2 message of rec with its events, computed
// from the record at sequence prev; deleted makes it a tombstone.
func encode(rec *gateway.Record, ev []gateway.Event, prev uint64, deleted bool) ([]byte, error) {
	r, err := json.Marshal(valueOf(rec, deleted))
	if err != nil {
		return nil, err
	}
	m := message{Version: messageVersion, Record: r, Events: make([]gateway.Payload, len(ev)), Prev: &prev}
	for i, e := range ev {
		m.Events[i] = e.Payload()
	}
	return json.Marshal(m)
}

// decodeRecord reads a message's record in the form its version has, and
// whether it is a tombstone.
func decodeRecord(m message) (rec *gateway.Record, deleted bool, err error) {
	if len(m.Record) == 0 || string(m.Record) == "null" {
		return nil, false, fmt.Errorf("no record")
	}
	switch m.Version {
	case messageV1:
		var r gateway.Record
		if err := json.Unmarshal(m.Record, &r); err != nil {
			return nil, false, err
		}
		for _, es := range [][]gateway.Entry{r.Line, r.Cooling} {
			for i := range es {
				es[i].ExpiresAt = time.Time{} // liveness lives in the liveness stream
			}
		}
		return &r, false, nil
	case messageVersion:
		var v recordValue
		if err := json.Unmarshal(m.Record, &v); err != nil {
			return nil, false, err
		}
		return v.record(), v.Deleted, nil
	}
	return nil, false, fmt.Errorf("unknown format version %d", m.Version)
}
