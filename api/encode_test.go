package api

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
)

// TestHandEncodingIsEncodingJSON: the answers written by hand are the bytes
// encoding/json writes for them, or are left to it.
func TestHandEncodingIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	leader := &gateway.Leader{ID: "node-b", Term: 41, Metadata: json.RawMessage(`{"addr":"10.0.0.7:8080"}`), Since: at, ExpiresAt: at.Add(time.Second)}
	var docs []any
	for _, text := range []string{"plain", `quote"back\slash`, "<html>&amp;", "tab\tnew\nline\rctl\x01\x1f", "é ünïcode", "\u2028", "bad \xff utf-8", ""} {
		for _, meta := range []json.RawMessage{nil, json.RawMessage(`{"a":1}`), json.RawMessage(`{"a": "spaced"}`), json.RawMessage(`{"h":"<b>"}`), json.RawMessage(`{"u":"é"}`)} {
			for _, state := range []gateway.State{gateway.StateLeader, gateway.StateFollower, gateway.StateError} {
				st := gateway.Status{
					Election: "e-1", Position: 2, Term: 42,
					Candidate: gateway.Candidate{ID: text, State: state, Metadata: meta, TTL: 10 * time.Second, Priority: -3,
						JoinedAt: at, ExpiresAt: at.Add(10 * time.Second), CooldownUntil: at.Add(time.Minute)},
				}
				docs = append(docs, statusOf(st, ""), statusOf(st, "tok-"+text))
				st.Leader = leader
				docs = append(docs, statusOf(st, ""))
				l := *leader
				l.ID, l.Metadata = text, meta
				st.Leader = &l
				docs = append(docs, statusOf(st, "t"), leaderDocOf(text, l, nil))
				holders := []gateway.Leader{*leader, l}
				st.Holders = holders
				docs = append(docs, statusOf(st, "t"), leaderDocOf(text, l, holders), leaderDocOf(text, l, []gateway.Leader{}))
				st.Holders = nil
				st.Transfer = &gateway.Transfer{To: "x", Reason: "r", At: at}
				docs = append(docs, statusOf(st, "t"))
			}
		}
	}
	hand := 0
	for _, d := range docs {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := d.(jsonAppender).appendJSON([]byte("x"))
		if !ok {
			continue
		}
		hand++
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Errorf("by hand:\n%s\nencoding/json:\n%s", got[1:], want)
		}
	}
	// The common answers are among those written by hand.
	plain := statusOf(gateway.Status{Election: "e", Candidate: gateway.Candidate{ID: "a", State: gateway.StateFollower}, Leader: leader}, "")
	if _, ok := plain.appendJSON(nil); !ok || hand == 0 {
		t.Errorf("a plain heartbeat answer is left to encoding/json (%d of %d by hand)", hand, len(docs))
	}
	if _, ok := leaderDocOf("e", *leader, nil).appendJSON(nil); !ok {
		t.Error("a plain leader answer is left to encoding/json")
	}
}
