package etcd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestLeadRecordReadsTheOneHolderForm: lead records as elector has always
// written them with one holder read as one slot (open, its key gone with
// a delay, a transfer of it), as a slot held until its promise lapses
// (the gateway's verdict, an expiry recorded with nobody waiting) or as no
// slot at all (ended on the leader's word), and are written back in the
// same form, which every version reads.
func TestLeadRecordReadsTheOneHolderForm(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := slotValue{Term: 41, Create: 41, Key: "694d", ID: "a", TTLms: 10000, Since: t0}
	prev := &gateway.TermRef{ID: "z", Term: 37}
	with := func(s slotValue, f func(*slotValue)) slotValue { f(&s); return s }
	tests := []struct {
		name string
		raw  string
		want leadValue
	}{
		{"open", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","previous":{"id":"z","term":37},"previous_end":"resigned"}`,
			leadValue{Term: 41, At: t0, Previous: prev, PreviousEnd: gateway.ReasonResigned, Slots: []slotValue{a}}},
		{"its key gone, a delay running", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","until":"2026-11-22T10:00:03Z","timed":true}`,
			leadValue{Term: 41, At: t0, Slots: []slotValue{with(a, func(s *slotValue) { s.Until, s.Timed = t0.Add(3*time.Second), true })}}},
		{"a transfer of it", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","transfer":{"to":"c","key":"69ff","reason":"transferred","at":"2026-11-22T10:00:00Z"}}`,
			leadValue{Term: 41, At: t0, Slots: []slotValue{a}, Transfer: &leadTransfer{To: "c", Key: "69ff", Reason: gateway.ReasonTransferred, At: t0, From: "a", FromTerm: 41}}},
		{"failed by the gateway's verdict", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","previous":{"id":"z","term":37},"ended":"error","failed":true}`,
			leadValue{Term: 41, At: t0, Previous: &gateway.TermRef{ID: "a", Term: 41}, PreviousEnd: gateway.ReasonError, Slots: []slotValue{with(a, func(s *slotValue) { s.Ended = gateway.ReasonError })}}},
		{"expired with nobody waiting", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","ended":"expired"}`,
			leadValue{Term: 41, At: t0, Previous: &gateway.TermRef{ID: "a", Term: 41}, PreviousEnd: gateway.ReasonExpired, Slots: []slotValue{with(a, func(s *slotValue) { s.Ended = gateway.ReasonExpired })}}},
		{"a native leader expired: promised nothing", `{"term":41,"key":"n1","id":"n","since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","ended":"expired"}`,
			leadValue{Term: 41, At: t0, Previous: &gateway.TermRef{ID: "n", Term: 41}, PreviousEnd: gateway.ReasonExpired}},
		{"resigned with nobody waiting", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","ended":"resigned"}`,
			leadValue{Term: 41, At: t0, Previous: &gateway.TermRef{ID: "a", Term: 41}, PreviousEnd: gateway.ReasonResigned}},
		{"an error reported with nobody waiting", `{"term":41,"key":"694d","id":"a","ttl_ms":10000,"since":"2026-11-22T10:00:00Z","at":"2026-11-22T10:00:00Z","ended":"error"}`,
			leadValue{Term: 41, At: t0, Previous: &gateway.TermRef{ID: "a", Term: 41}, PreviousEnd: gateway.ReasonError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got leadValue
			if err := json.Unmarshal([]byte(tt.raw), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("read %s\n got %+v\nwant %+v", tt.raw, got, tt.want)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var again leadValue
			if err := json.Unmarshal(b, &again); err != nil || strings.Contains(string(b), `"holders"`) || !reflect.DeepEqual(again, got) {
				t.Fatalf("written back as %s, read %+v (%v); want the one-holder form, read as it was", b, again, err)
			}
		})
	}
}

// TestLeadRecordListsSeveralHolders: what the one-holder form cannot say
// (more than one slot, a slot held after the holders were lowered, a
// transfer of a holdership that is not the last one handed out, a term
// that is not its key's create revision) is written in the list form,
// and read back as it was; a slot written with term 0 takes the revision
// of the write.
func TestLeadRecordListsSeveralHolders(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := slotValue{Term: 41, Create: 41, Key: "694d", ID: "a", TTLms: 10000, Since: t0}
	b := slotValue{Term: 45, Create: 45, Key: "6950", ID: "b", TTLms: 10000, Since: t0}
	lowered := b
	lowered.Ended = gateway.ReasonHoldersReduced
	tests := []struct {
		name string
		lead leadValue
	}{
		{"two holders", leadValue{Term: 45, At: t0, Slots: []slotValue{a, b}}},
		{"one holder and a slot held", leadValue{Term: 45, At: t0, Previous: b.ref(), PreviousEnd: gateway.ReasonHoldersReduced, Slots: []slotValue{a, lowered}}},
		{"a holder older than the last term", leadValue{Term: 45, At: t0, Previous: b.ref(), PreviousEnd: gateway.ReasonResigned, Slots: []slotValue{a}}},
		{"nobody, after holderships ended out of order", leadValue{Term: 45, At: t0, Previous: a.ref(), PreviousEnd: gateway.ReasonResigned, Slots: []slotValue{}}},
		{"a transfer of the older holdership", leadValue{Term: 45, At: t0, Slots: []slotValue{a, b},
			Transfer: &leadTransfer{To: "c", Key: "69ff", Reason: gateway.ReasonTransferred, At: t0, From: "a", FromTerm: 41}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.lead)
			if err != nil {
				t.Fatal(err)
			}
			var got leadValue
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			got.resolve(99)
			want := tt.lead
			want.list = true
			if !strings.Contains(string(raw), `"holders":[`) || !reflect.DeepEqual(got, want) {
				t.Fatalf("written as %s, read\n %+v\nwant the list form, read\n %+v", raw, got, want)
			}
		})
	}

	// A holder the lowering ended, in line again at its place (create
	// revision 42), acknowledged after term 45: its term is the write's
	// revision.
	l := leadValue{Term: 45, At: t0, Slots: []slotValue{a}}
	l.acknowledge(&entry{hex: "694e", create: 42, value: candidateValue{Elector: 1, ID: "c", TTLms: 3000}}, t0)
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var got leadValue
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	got.resolve(99)
	if c := got.slot(99); got.Term != 99 || c == nil || c.ID != "c" || c.Create != 42 || !strings.Contains(string(raw), `"term":0,"create":42`) {
		t.Fatalf("written as %s, read %+v: want c holding term 99, the revision of the write, on its key of create revision 42", raw, got)
	}
	// And a newcomer's key, behind every holder, holds its create revision.
	got.acknowledge(&entry{hex: "6a00", create: 120, value: candidateValue{Elector: 1, ID: "d"}}, t0)
	if d := got.slot(120); got.Term != 120 || d == nil || d.Create != 120 {
		t.Fatalf("after d: %+v, want d holding term 120, its key's create revision", got)
	}
}

// TestFirstLead: the record a campaign's transaction writes (data version
// 2) is in the one-holder form with term 0, and reads as its candidate
// holding the term of the write's revision, on a key of that create
// revision; written again, it states that term as every version reads it.
func TestFirstLead(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	raw := firstLead("694e", candidateValue{Elector: 1, ID: "a", TTLms: 10000, At: t0})
	if !strings.Contains(raw, `"term":0,"key":"694e"`) || strings.Contains(raw, `"holders"`) {
		t.Fatalf("written as %s: want the one-holder form with term 0", raw)
	}
	var got leadValue
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	got.resolve(77)
	if s := got.slot(77); got.Term != 77 || s == nil || s.ID != "a" || s.Create != 77 || s.Key != "694e" || s.TTLms != 10000 {
		t.Fatalf("read %+v: want a holding term 77 on its key of create revision 77", got)
	}
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(again), `"term":77,"key":"694e"`) {
		t.Fatalf("written again as %s: want term 77 stated", again)
	}
}
