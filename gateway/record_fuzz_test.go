package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzRecordStaysValid: a Record that passes Check, whatever else it holds
// (read from storage, where an elector of another version or a damaged
// store may have put it), still passes Check after any sequence of
// transitions, and no transition or read panics or runs away. ops picks
// the transitions: each byte one, on a candidate of the record or a new
// one, with the candidate's own token hash, at a clock that only moves
// forward.
func FuzzRecordStaysValid(f *testing.F) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	seed := func(r *Record) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	one := NewRecord("e", Settings{ErrorCooldown: time.Second})
	for i, id := range []string{"a", "b", "c"} {
		if _, err := one.Campaign(t0, Candidacy{ID: id, TTL: 10 * time.Second, TokenHash: "t" + id, Priority: i % 2}); err != nil {
			f.Fatal(err)
		}
	}
	two := NewRecord("e", Settings{Holders: 2, HandoverDelay: time.Second, Preempt: true})
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := two.Campaign(t0, Candidacy{ID: id, TTL: 5 * time.Second, TokenHash: "t" + id}); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := two.Transfer(t0, "a", "d", ""); err != nil {
		f.Fatal(err)
	}
	f.Add(seed(one), []byte{0x00, 0x11, 0x22, 0x3f, 0x41, 0x5f, 0x07})
	f.Add(seed(two), []byte{0x0b, 0x1c, 0x2d, 0x06, 0x4a, 0x5f, 0x08, 0x09})
	f.Add([]byte(`{"name":"e","term":7,"line":[{"id":"a","ttl":1,"term":7,"token_hash":"ta"}],"holds":[{"id":"z","term":3,"until":"2026-11-27T10:00:01Z"}]}`), []byte{0x07, 0x0a, 0x5f, 0x07})
	f.Add([]byte(`{"name":"e","settings":{"holders":3},"term":2,"delays":[{"id":"x","term":2,"until":"2000-01-01T00:00:00Z"}],"line":[{"id":"a","ttl":-5,"token_hash":"ta","expires_at":"2000-01-01T00:00:00Z"}]}`), []byte{0x07, 0x0f, 0x07})
	f.Fuzz(func(t *testing.T, data, ops []byte) {
		var r Record
		if json.Unmarshal(data, &r) != nil || r.Check() != nil || len(r.Line)+len(r.Cooling) > 16 || len(ops) > 64 {
			return
		}
		done := make(chan string, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Sprintf("panic: %v", p)
				}
			}()
			done <- runOps(&r, ops, t0)
		}()
		select {
		case msg := <-done:
			if msg != "" {
				t.Fatalf("%s\nrecord %s\nops %x", msg, data, ops)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("transitions did not end within 10s\nrecord %s\nops %x", data, ops)
		}
	})
}

// runOps applies ops to r as FuzzRecordStaysValid says and returns what
// went wrong, or "".
func runOps(r *Record, ops []byte, now time.Time) string {
	ids := func() []Entry { return append(append([]Entry(nil), r.Line...), r.Cooling...) }
	var trace []string
	for n, op := range ops {
		es := ids()
		var e Entry
		if k := int(op >> 4); k < len(es) {
			e = es[k]
		} else {
			e = Entry{ID: fmt.Sprintf("n%d", n), TokenHash: fmt.Sprintf("tn%d", n)}
		}
		var what string
		switch op & 0x0f {
		case 0:
			what = "campaign " + e.ID
			_, _ = r.Campaign(now, Candidacy{ID: e.ID, TTL: time.Duration(1+op%7) * time.Second, TokenHash: e.TokenHash, Priority: int(op%5) - 2})
		case 1:
			what = "heartbeat " + e.ID
			_, _ = r.Heartbeat(now, e.ID, e.TokenHash)
		case 2:
			what = "resign " + e.ID
			_, _ = r.Resign(now, e.ID, e.TokenHash)
		case 3:
			what = "report error " + e.ID
			_, _ = r.ReportError(now, e.ID, e.TokenHash, "failed")
		case 4:
			what = "fail leader " + e.ID
			_, _ = r.FailLeader(now, e.ID, e.TokenHash, e.Term, "verdict")
		case 5:
			what = "expire " + e.ID
			r.Expire(now, e.ID)
		case 6:
			what = "configure"
			r.Configure(now, Settings{Holders: int(op>>4)%4 + 1, HandoverDelay: time.Duration(op>>6) * time.Second, ErrorCooldown: time.Second, Preempt: op&0x10 != 0})
		case 7:
			what = "advance"
			r.Advance(now)
		case 8:
			what = "end handovers"
			for _, d := range r.Delays {
				r.EndHandover(now, d.Term)
			}
		case 9:
			what = "end cooldown " + e.ID
			r.EndCooldown(now, e.ID)
		case 10:
			what = "end holds"
			for _, h := range r.Held {
				r.EndHold(now, h.Term)
			}
		case 11:
			what = "transfer to " + e.ID
			_, _ = r.Transfer(now, "", e.ID, "")
		case 12:
			what = "handover " + e.ID
			_, _ = r.Handover(now, e.ID, e.TokenHash)
		case 13:
			what = "cancel transfer"
			_, _ = r.CancelTransfer(now, "")
		case 14:
			what = "read"
			r.Snapshot()
			r.LeaderSnapshot()
			r.Status(e.ID)
			r.NextDeadline()
		case 15:
			what = "time passes"
			now = now.Add(time.Duration(op>>4+1) * time.Second)
		}
		trace = append(trace, what)
		if err := r.Check(); err != nil {
			return fmt.Sprintf("after %s: %v", strings.Join(trace, ", "), err)
		}
	}
	return ""
}
