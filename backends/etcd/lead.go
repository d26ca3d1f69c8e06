package etcd

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/electorhq/elector/gateway"
)

// leadValue is the lead record (<prefix>/_elector/lead/<election>): the
// holderships elector acknowledged, one slot each, and what the election
// needs of those that ended. Every transition of a holdership writes it,
// in a transaction guarded by its mod revision (see the package doc, "Who
// leads").
//
// Slots are in term order. A slot whose Ended is "" is open: its holder
// holds while its key (Key, with create revision Create) is in line, else
// its key went without elector ending it (an expiry, an early
// revocation, a native client's resignation) and the slot is held back
// by the handover delay (Until, Timed) and by its promise. A slot whose
// Ended is set ended without its holder saying so (the gateway's verdict:
// "error"; a lower holders setting: "holders_reduced"; an expiry recorded
// with nobody waiting: "expired") and is held until its promise lapses.
// Holderships that ended on their holder's word, and slots whose hold is
// over, are not kept.
//
// Term is the last term handed out. Previous and PreviousEnd are the last
// holdership that ended and why (the next leader.begin names them).
// Transfer is the pending transfer, if any.
//
// Two forms are stored (MarshalJSON chooses): with at most one slot the
// record is written as elector has always written it with one holder (the
// slot's fields in the record itself, "ended" and "failed" for a hold),
// which every version reads; otherwise the slots are listed in
// "holders". A slot written with "term":0 was acknowledged after a
// holdership of a later term than its key's create revision (a holder
// that lowering the setting ended, promoted again while it kept its
// place): its term is the revision of that write, which the readers take
// from the record's mod revision (resolve) and every later write states.
type leadValue struct {
	Term        uint64
	At          time.Time
	Previous    *gateway.TermRef
	PreviousEnd string
	Transfer    *leadTransfer
	Slots       []slotValue
	// list is set when the record was read in the list form: the keys of
	// its promises and handover markers are per term (promiseKey).
	list bool
}

// slotValue is one holdership of the lead record:
// {"term":41,"key":"<lease-hex>","id":"node-b","metadata":…,"ttl_ms":10000,"since":"…",
// "ended":"","until":"…","timed":true}, and "create" when the key's create
// revision is not the term. TTLms is the holder's TTL, absent for a native
// holder, which elector promises nothing.
type slotValue struct {
	Term     uint64          `json:"term"`
	Create   int64           `json:"create,omitempty"`
	Key      string          `json:"key"`
	ID       string          `json:"id"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	TTLms    int64           `json:"ttl_ms,omitempty"`
	Since    time.Time       `json:"since"`
	Ended    string          `json:"ended,omitempty"`
	// Until is the end of the handover delay of an open slot whose key
	// went, shown to users; with Timed its marker key decides (timers.go).
	Until time.Time `json:"until,omitzero"`
	Timed bool      `json:"timed,omitempty"`
}

func (s *slotValue) ttl() time.Duration { return time.Duration(s.TTLms) * time.Millisecond }

// ref names the holdership.
func (s *slotValue) ref() *gateway.TermRef { return &gateway.TermRef{ID: s.ID, Term: s.Term} }

// leadTransfer is a pending transfer in the lead record:
// {"to":"node-c","key":"<lease-hex>","reason":"transferred","at":"…","from":"node-b","from_term":41,"handed":true}.
// Key is the lease of the target's candidacy, which stays the same when
// the key moves; From and FromTerm the holdership asked to hand over (in
// the one-holder form, left out: the record's one holdership). It holds
// only while the target is in line behind the holders and that
// holdership is open, or, with Handed, ended while its target waits: by
// its holder handing over, resigning or erring while no slot was free
// (its slot is gone from the record), or by a lower holders setting or
// the gateway's verdict (its slot is held): the target then takes the
// next slot that frees, as after that holdership's expiry.
type leadTransfer struct {
	To       string    `json:"to"`
	Key      string    `json:"key"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
	From     string    `json:"from,omitempty"`
	FromTerm uint64    `json:"from_term,omitempty"`
	Handed   bool      `json:"handed,omitempty"`
}

func (t *leadTransfer) gateway() *gateway.Transfer {
	if t == nil {
		return nil
	}
	return &gateway.Transfer{To: t.To, Reason: t.Reason, At: t.At, From: t.From, Term: t.FromTerm}
}

// leadOne is the one-holder form: the lead record as elector has always
// written it. "ended" with "failed" (the gateway's verdict) or "expired"
// (and a TTL) is a slot held until its promise lapses; another "ended" is
// no slot at all, only the last holdership that ended.
type leadOne struct {
	Term        uint64           `json:"term"`
	Key         string           `json:"key"`
	ID          string           `json:"id"`
	Metadata    json.RawMessage  `json:"metadata,omitempty"`
	TTLms       int64            `json:"ttl_ms,omitempty"`
	Since       time.Time        `json:"since"`
	At          time.Time        `json:"at"`
	Previous    *gateway.TermRef `json:"previous,omitempty"`
	PreviousEnd string           `json:"previous_end,omitempty"`
	Ended       string           `json:"ended,omitempty"`
	Failed      bool             `json:"failed,omitempty"`
	Until       time.Time        `json:"until,omitzero"`
	Timed       bool             `json:"timed,omitempty"`
	Transfer    *leadTransfer    `json:"transfer,omitempty"`
}

// leadList is the list form.
type leadList struct {
	Term        uint64           `json:"term"`
	At          time.Time        `json:"at"`
	Previous    *gateway.TermRef `json:"previous,omitempty"`
	PreviousEnd string           `json:"previous_end,omitempty"`
	Transfer    *leadTransfer    `json:"transfer,omitempty"`
	Holders     []slotValue      `json:"holders"`
}

// one returns l in the one-holder form, or false when that form cannot
// say it all: more than one slot, a slot of another term than the last
// handed out, a term that is not its key's create revision, a hold the
// form does not know ("holders_reduced"), or a transfer of another
// holdership.
func (l leadValue) one() (leadOne, bool) {
	w := leadOne{Term: l.Term, At: l.At}
	if t := l.Transfer; t != nil {
		if len(l.Slots) != 1 || l.Slots[0].Ended != "" || t.FromTerm != l.Slots[0].Term {
			return leadOne{}, false
		}
		c := *t
		c.From, c.FromTerm = "", 0
		w.Transfer = &c
	}
	switch len(l.Slots) {
	case 0:
		p := l.Previous
		if p == nil || p.Term != l.Term || l.PreviousEnd == "" {
			return leadOne{}, false
		}
		w.ID, w.Ended = p.ID, l.PreviousEnd
		return w, true
	case 1:
	default:
		return leadOne{}, false
	}
	s := l.Slots[0]
	if s.Term != l.Term || s.Create != int64(s.Term) {
		return leadOne{}, false
	}
	w.Key, w.ID, w.Metadata, w.TTLms, w.Since = s.Key, s.ID, s.Metadata, s.TTLms, s.Since
	switch {
	case s.Ended == "":
		w.Previous, w.PreviousEnd, w.Until, w.Timed = l.Previous, l.PreviousEnd, s.Until, s.Timed
		return w, true
	case (s.Ended == gateway.ReasonError || s.Ended == gateway.ReasonExpired) && s.TTLms > 0 &&
		l.Previous != nil && *l.Previous == (gateway.TermRef{ID: s.ID, Term: s.Term}) && l.PreviousEnd == s.Ended:
		w.Previous, w.Ended, w.Failed = l.Previous, s.Ended, s.Ended == gateway.ReasonError
		return w, true
	}
	return leadOne{}, false
}

// MarshalJSON writes the one-holder form when it can say it all, else the
// list form.
func (l leadValue) MarshalJSON() ([]byte, error) {
	if w, ok := l.one(); ok {
		return json.Marshal(w)
	}
	slots := l.Slots
	if slots == nil {
		slots = []slotValue{} // "holders":[], not null: the list form with no slot
	}
	return json.Marshal(leadList{Term: l.Term, At: l.At, Previous: l.Previous, PreviousEnd: l.PreviousEnd, Transfer: l.Transfer, Holders: slots})
}

// UnmarshalJSON reads either form. Terms written as 0 stay 0 until
// resolve.
func (l *leadValue) UnmarshalJSON(b []byte) error {
	var w struct {
		leadOne
		Holders *[]slotValue `json:"holders"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = leadValue{Term: w.Term, At: w.At, Transfer: w.Transfer}
	if w.Holders != nil {
		l.list, l.Slots, l.Previous, l.PreviousEnd = true, *w.Holders, w.Previous, w.PreviousEnd
		for i := range l.Slots {
			if s := &l.Slots[i]; s.Create == 0 {
				s.Create = int64(s.Term)
			}
		}
		return nil
	}
	s := slotValue{Term: w.Term, Create: int64(w.Term), Key: w.Key, ID: w.ID, Metadata: w.Metadata, TTLms: w.TTLms, Since: w.Since}
	switch {
	case w.Ended == "":
		s.Until, s.Timed = w.Until, w.Timed
		l.Slots, l.Previous, l.PreviousEnd = []slotValue{s}, w.Previous, w.PreviousEnd
		if t := l.Transfer; t != nil {
			c := *t
			c.From, c.FromTerm = w.ID, w.Term
			l.Transfer = &c
		}
	case (w.Failed || w.Ended == gateway.ReasonExpired) && w.TTLms > 0:
		s.Ended = w.Ended
		l.Slots, l.Previous, l.PreviousEnd, l.Transfer = []slotValue{s}, s.ref(), w.Ended, nil
	default:
		l.Previous, l.PreviousEnd, l.Transfer = s.ref(), w.Ended, nil
	}
	return nil
}

// resolve gives the slots written with term 0 their term, mod, the
// revision of the write that stored the record (no later write leaves
// one at 0: every writer states the terms it read), and puts the slots in
// term order. A slot of term 0 without "create" (the one-holder form, as
// a campaign's transaction writes it: firstLead) was acknowledged in the
// write that created its key, whose create revision is mod as well.
func (l *leadValue) resolve(mod int64) {
	for i := range l.Slots {
		if s := &l.Slots[i]; s.Term == 0 {
			s.Term = uint64(mod)
			if s.Create == 0 {
				// Acknowledged in the transaction that created its key
				// (firstLead): the key's create revision is that write's.
				s.Create = mod
			}
		}
		l.Term = max(l.Term, l.Slots[i].Term)
	}
	slices.SortFunc(l.Slots, func(a, b slotValue) int { return compareTerms(a.Term, b.Term) })
}

func compareTerms(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// clone returns a copy of l that a writer may change: its slots and its
// transfer are its own (the slots' metadata is shared, never changed in
// place). A nil l clones to an empty record.
func (l *leadValue) clone() leadValue {
	if l == nil {
		return leadValue{}
	}
	c := *l
	c.Slots = slices.Clone(l.Slots)
	if l.Transfer != nil {
		t := *l.Transfer
		c.Transfer = &t
	}
	return c
}

// slot returns the slot of holdership term, or nil.
func (l *leadValue) slot(term uint64) *slotValue {
	if l == nil {
		return nil
	}
	for i := range l.Slots {
		if l.Slots[i].Term == term {
			return &l.Slots[i]
		}
	}
	return nil
}

// drop removes the slot of holdership term.
func (l *leadValue) drop(term uint64) {
	l.Slots = slices.DeleteFunc(l.Slots, func(s slotValue) bool { return s.Term == term })
}

// acknowledge adds the slot that makes x a holder: its term is x's key's
// create revision if that is later than the last term handed out, else
// 0, for the revision of the write (see leadValue); either way it is
// later than every term before, and it becomes the last handed out. Its
// TTL is the candidate's (0 for a native one): the acknowledgement is the
// holdership's first promise (see promise.go).
func (l *leadValue) acknowledge(x *entry, now time.Time) {
	s := slotValue{Create: x.create, Key: x.hex, ID: x.value.ID, Metadata: x.value.Metadata, Since: now}
	if uint64(x.create) > l.Term {
		s.Term, l.Term = uint64(x.create), uint64(x.create)
	}
	if !x.native {
		s.TTLms = x.value.TTLms
	}
	l.Slots = append(l.Slots, s)
}
