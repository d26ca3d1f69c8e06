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
//	  "token_hash":"<hex>","joined_at":"…","term":7,"since":"…"}],"cooling":[…]},
//	 "events":[<gateway.Payload>…],"prev":41}
//
// A deleted election keeps a tombstone: its record with "deleted":true
// and no candidates, holding its last term, so that an election created
// again under the name continues above it (the stream denies deletes, so
// the tombstone stays). Leadership transfers add "transfer" to the
// record, "priority" to entries and "preempt" to settings.
//
// Holders (gateway.Settings.Holders) add "holders" to settings, and each
// holder's entry carries its holdership's "term" and "since"; running
// handover delays are "delays":[{"id","term","until"}] and holds of
// promises (gateway.Record.FailLeader, or holders lowered)
// "holds":[{"id","term","until","ttl","reason"}]. Records written before
// holders kept one leader as "leading" and "leader_since" (Line[0] held
// Term), one delay as "handover_until" (of term Term) and one hold as
// "held"; they are still read, and a record whose holders, delays and
// holds say the same as those fields (one holder, of the last term; one
// delay, of the last term; one hold) writes them too, so that a replica
// of the version before holders reads an election with one holder as it
// did. An election with more than one holder needs every replica to read
// holders: replicas upgrade together (a replica without them would see
// one leader, and might fill slots that the holds keep empty).
//
// Durations are Go duration strings, times RFC 3339 with nanoseconds.
// Version 1 stored gateway.Record as it marshalled then (settings as
// {"ErrorCooldown":<ns>,"HandoverDelay":<ns>}, TTLs in nanoseconds, the
// leader as "leading" and "leader_since"); it is still read, so that an
// upgraded gateway reads an older store, and never written.
// testdata/record-v1.json, record-v2-single-leader.json (v2 before
// holders) and record-v2.json pin the forms.
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
	Name     string        `json:"name"`
	Settings settingsValue `json:"settings"`
	Term     uint64        `json:"term"`
	// Leading and LeaderSince: Line[0] holds Term, since LeaderSince; the
	// form before holders (see legacy).
	Leading     bool             `json:"leading,omitempty"`
	LeaderSince time.Time        `json:"leader_since,omitzero"`
	Previous    *gateway.TermRef `json:"previous,omitempty"`
	PreviousEnd string           `json:"previous_end,omitempty"`
	// HandoverUntil is one delay of term Term, and Held one hold: the
	// forms before holders.
	HandoverUntil time.Time         `json:"handover_until,omitzero"`
	Held          *holdValue        `json:"held,omitempty"`
	Delays        []delayValue      `json:"delays,omitempty"`
	Holds         []holdValue       `json:"holds,omitempty"`
	Pending       *gateway.Transfer `json:"transfer,omitempty"`
	Line          []entryValue      `json:"line,omitempty"`
	Cooling       []entryValue      `json:"cooling,omitempty"`
	Deleted       bool              `json:"deleted,omitempty"`
}

// holdValue is a gateway.Hold.
type holdValue struct {
	ID     string    `json:"id"`
	Term   uint64    `json:"term"`
	Until  time.Time `json:"until"`
	TTL    duration  `json:"ttl"`
	Reason string    `json:"reason,omitempty"`
}

func (v holdValue) hold() gateway.Hold {
	return gateway.Hold{ID: v.ID, Term: v.Term, Until: v.Until, TTL: time.Duration(v.TTL), Reason: v.Reason}
}

// delayValue is a gateway.Delay.
type delayValue struct {
	ID    string    `json:"id"`
	Term  uint64    `json:"term"`
	Until time.Time `json:"until"`
}

type settingsValue struct {
	ErrorCooldown duration `json:"error_cooldown"`
	HandoverDelay duration `json:"handover_delay"`
	Preempt       bool     `json:"preempt,omitempty"`
	Holders       int      `json:"holders,omitempty"`
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
	Term          uint64          `json:"term,omitempty"`
	Since         time.Time       `json:"since,omitzero"`
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
		Name: r.Name, Term: r.Term, Previous: r.Previous, PreviousEnd: r.PreviousEnd, Pending: r.Pending, Deleted: deleted,
		Settings: settingsValue{ErrorCooldown: duration(r.Settings.ErrorCooldown), HandoverDelay: duration(r.Settings.HandoverDelay), Preempt: r.Settings.Preempt, Holders: r.Settings.Holders},
		Line:     entryValues(r.Line),
		Cooling:  entryValues(r.Cooling),
	}
	for _, d := range r.Delays {
		v.Delays = append(v.Delays, delayValue(d))
	}
	for _, h := range r.Held {
		v.Holds = append(v.Holds, holdValue{ID: h.ID, Term: h.Term, Until: h.Until, TTL: duration(h.TTL), Reason: h.Reason})
	}
	v.legacy(r)
	return v
}

// legacy also writes the fields of the form before holders where they
// say exactly what the record says: one holder, of the last term; or
// nobody holding, and one delay of the last term or one hold. A replica
// of that version then reads an election with one holder as it did.
func (v *recordValue) legacy(r *gateway.Record) {
	switch k := r.Holding(); {
	case k == 1 && r.Line[0].Term == r.Term:
		v.Leading, v.LeaderSince = true, r.Line[0].Since
	case k == 0 && len(r.Delays) == 1 && len(r.Held) == 0 && r.Delays[0].Term == r.Term:
		v.HandoverUntil = r.Delays[0].Until
	case k == 0 && len(r.Held) == 1 && len(r.Delays) == 0:
		h := v.Holds[0]
		v.Held = &h
	}
}

func entryValues(es []gateway.Entry) []entryValue {
	if len(es) == 0 {
		return nil
	}
	out := make([]entryValue, len(es))
	for i, e := range es {
		out[i] = entryValue{ID: e.ID, Metadata: e.Metadata, TTL: duration(e.TTL), Priority: e.Priority, TokenHash: e.TokenHash, JoinedAt: e.JoinedAt, CooldownUntil: e.CooldownUntil, Term: e.Term, Since: e.Since}
	}
	return out
}

// record returns the gateway.Record v stores, in either form.
func (v recordValue) record() *gateway.Record {
	r := &gateway.Record{
		Name: v.Name, Term: v.Term, Previous: v.Previous, PreviousEnd: v.PreviousEnd, Pending: v.Pending,
		Settings: gateway.Settings{ErrorCooldown: time.Duration(v.Settings.ErrorCooldown), HandoverDelay: time.Duration(v.Settings.HandoverDelay), Preempt: v.Settings.Preempt, Holders: v.Settings.Holders},
		Line:     entries(v.Line),
		Cooling:  entries(v.Cooling),
	}
	for _, d := range v.Delays {
		r.Delays = append(r.Delays, gateway.Delay(d))
	}
	for _, h := range v.Holds {
		r.Held = append(r.Held, h.hold())
	}
	fromLegacy(r, v.Leading, v.LeaderSince, v.HandoverUntil, v.Held)
	return r
}

// fromLegacy fills r, read from a record written before holders (no
// entry holds a term, no delays, no holds), from that form's fields:
// Line[0] holding Term since leaderSince, one delay of term Term, one
// hold. A pending transfer of that form asks the one leadership, of term
// Term, to hand over.
func fromLegacy(r *gateway.Record, leading bool, leaderSince, handoverUntil time.Time, held *holdValue) {
	if r.Holding() == 0 && leading && len(r.Line) > 0 {
		r.Line[0].Term, r.Line[0].Since = r.Term, leaderSince
	}
	if len(r.Delays) == 0 && !handoverUntil.IsZero() {
		d := gateway.Delay{Term: r.Term, Until: handoverUntil}
		if r.Previous != nil && r.Previous.Term == r.Term {
			d.ID = r.Previous.ID
		}
		r.Delays = []gateway.Delay{d}
	}
	if len(r.Held) == 0 && held != nil {
		h := held.hold()
		if h.Reason == "" {
			h.Reason = gateway.ReasonError
		}
		r.Held = []gateway.Hold{h}
	}
	if p := r.Pending; p != nil && p.Term == 0 {
		p.Term = r.Term
		if r.Holding() > 0 {
			p.From = r.Line[0].ID
		} else if r.Previous != nil {
			p.From = r.Previous.ID
		}
	}
}

func entries(vs []entryValue) []gateway.Entry {
	if len(vs) == 0 {
		return nil
	}
	out := make([]gateway.Entry, len(vs))
	for i, v := range vs {
		out[i] = gateway.Entry{ID: v.ID, Metadata: v.Metadata, TTL: time.Duration(v.TTL), Priority: v.Priority, TokenHash: v.TokenHash, JoinedAt: v.JoinedAt, CooldownUntil: v.CooldownUntil, Term: v.Term, Since: v.Since}
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
		var v recordV1
		if err := json.Unmarshal(m.Record, &v); err != nil {
			return nil, false, err
		}
		r := &gateway.Record{Name: v.Name, Settings: v.Settings, Term: v.Term, Previous: v.Previous, PreviousEnd: v.PreviousEnd, Line: v.Line, Cooling: v.Cooling}
		for _, es := range [][]gateway.Entry{r.Line, r.Cooling} {
			for i := range es {
				es[i].ExpiresAt = time.Time{} // liveness lives in the liveness stream
				es[i].Term, es[i].Since = 0, time.Time{}
			}
		}
		fromLegacy(r, v.Leading, v.LeaderSince, v.HandoverUntil, nil)
		return r, false, nil
	case messageVersion:
		var v recordValue
		if err := json.Unmarshal(m.Record, &v); err != nil {
			return nil, false, err
		}
		return v.record(), v.Deleted, nil
	}
	return nil, false, fmt.Errorf("unknown format version %d", m.Version)
}

// recordV1 is a record as version 1 stored it: gateway.Record as it
// marshalled then.
type recordV1 struct {
	Name          string           `json:"name"`
	Settings      gateway.Settings `json:"settings"`
	Term          uint64           `json:"term"`
	Leading       bool             `json:"leading,omitempty"`
	LeaderSince   time.Time        `json:"leader_since,omitzero"`
	Previous      *gateway.TermRef `json:"previous,omitempty"`
	PreviousEnd   string           `json:"previous_end,omitempty"`
	HandoverUntil time.Time        `json:"handover_until,omitzero"`
	Line          []gateway.Entry  `json:"line,omitempty"`
	Cooling       []gateway.Entry  `json:"cooling,omitempty"`
}
