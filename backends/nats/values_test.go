package nats

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

var update = flag.Bool("update", false, "rewrite testdata/record-v2.json and record-v2-holders.json from the code")

// TestRecordGoldenV2 pins the form records are written in: a change to it
// must be a new version, read beside the old ones.
func TestRecordGoldenV2(t *testing.T) {
	data, err := encode(goldenRecord(), goldenEvents(), 41, false)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, data, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile("testdata/record-v2.json", pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/record-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatalf("record written as\n%s\nwant (testdata/record-v2.json)\n%s", pretty.Bytes(), want)
	}
}

// TestRecordGoldenHolders pins the form of an election with several
// holders, delays and holds, and reads it back into the same record.
func TestRecordGoldenHolders(t *testing.T) {
	data, err := encode(goldenHoldersRecord(), nil, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, data, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	const file = "testdata/record-v2-holders.json"
	if *update {
		if err := os.WriteFile(file, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Fatalf("record written as\n%s\nwant (%s)\n%s", pretty.Bytes(), file, want)
	}
	s, err := decode("schedulers", 4, want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normal(t, s.rec), normal(t, goldenHoldersRecord())) {
		t.Fatalf("record = %s\nwant %s", normal(t, s.rec), normal(t, goldenHoldersRecord()))
	}
	for _, legacy := range []string{`"leading"`, `"handover_until"`} {
		if bytes.Contains(want, []byte(legacy)) {
			t.Errorf("a record with several holders and delays writes %s, which a replica before holders would misread", legacy)
		}
	}
}

// TestRecordGoldenReads reads every version's golden file back into the
// same record, events and chain link.
func TestRecordGoldenReads(t *testing.T) {
	for _, file := range []string{"testdata/record-v1.json", "testdata/record-v2-single-leader.json", "testdata/record-v2.json"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := decode("orders", 42, data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normal(t, s.rec), normal(t, goldenRecord())) {
				t.Fatalf("record = %+v\nwant %+v", s.rec, goldenRecord())
			}
			if !s.hasPrev || s.prev != 41 {
				t.Fatalf("prev = %d (%v), want 41", s.prev, s.hasPrev)
			}
			want := goldenEvents()
			if len(s.events) != len(want) {
				t.Fatalf("%d events, want %d", len(s.events), len(want))
			}
			for i, e := range s.events {
				if e.ID != eventID(42, i+1) || e.Type != want[i].Type || !e.Time.Equal(want[i].Time) ||
					e.Term != want[i].Term || e.Candidate.ID != want[i].Candidate.ID || *e.Previous != *want[i].Previous {
					t.Fatalf("event %d = %+v, want %+v", i, e, want[i])
				}
			}
		})
	}
}

// TestRecordRefusesUnknownVersion: a record of a newer writer is an error,
// never a half-read election.
func TestRecordRefusesUnknownVersion(t *testing.T) {
	for _, data := range []string{`{"v":3,"record":{"name":"x"}}`, `{"v":2}`, `{"v":2,"record":null}`, `{"v":2,"record":{"settings":{"error_cooldown":"soon"}}}`} {
		if _, err := decode("x", 1, []byte(data)); err == nil {
			t.Errorf("decode(%s) = nil error", data)
		}
	}
}

// normal re-marshals a record through its v1 form so that equal records
// compare equal whatever their metadata's whitespace.
func normal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	return c.String()
}

// TestAckSeqReadsWhatJetStreamAnswers: acknowledgements and refusals as
// the server writes them, read as jetstream's Publish reads them.
func TestAckSeqReadsWhatJetStreamAnswers(t *testing.T) {
	tests := []struct {
		name, data string
		seq        uint64
		conflict   bool
		bad        bool
		is         error // the refusal it must be (errors.Is), besides bad
	}{
		{"ack", `{"stream":"ELECTOR_ALIVE","seq":12345}`, 12345, false, false, nil},
		{"ack with domain", `{"stream":"ELECTOR_ALIVE","domain":"hub","seq":7}`, 7, false, false, nil},
		{"duplicate", `{"stream":"ELECTOR_ALIVE","seq":9,"duplicate":true}`, 9, false, false, nil},
		{"wrong last sequence", `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"ELECTOR_ALIVE","seq":0}`, 0, true, false, nil},
		{"another stream", `{"stream":"OTHER","seq":3}`, 0, false, true, nil},
		{"not JSON", `+OK`, 0, false, true, nil},
		{"too large", `{"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"},"stream":"ELECTOR_ALIVE","seq":0}`, 0, false, true, jetstream.ErrStreamMessageExceedsMaximum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq, err := ackSeq([]byte(tt.data), "ELECTOR_ALIVE")
			switch {
			case tt.conflict:
				if !isConflict(err) {
					t.Fatalf("%v, want a conflict", err)
				}
			case tt.bad:
				if err == nil {
					t.Fatalf("seq %d, want an error", seq)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Fatalf("%v, want %v", err, tt.is)
				}
			case err != nil || seq != tt.seq:
				t.Fatalf("seq %d, %v; want %d", seq, err, tt.seq)
			}
		})
	}
}

// TestDecodeInOnePassAsInTwo: a message of this version is decoded in one
// pass (decodeMessage) to what the reader of every version makes of it,
// and one whose members come in another order is still read.
func TestDecodeInOnePassAsInTwo(t *testing.T) {
	for _, file := range []string{"testdata/record-v2-single-leader.json", "testdata/record-v2.json", "testdata/record-v2-holders.json"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c bytes.Buffer
			if err := json.Compact(&c, data); err != nil {
				t.Fatal(err)
			}
			data = c.Bytes()
			if !bytes.HasPrefix(data, v2Prefix) {
				t.Fatalf("%s does not begin as encode writes", file)
			}
			var m message
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			want, wantDeleted, err := decodeRecord(m)
			if err != nil {
				t.Fatal(err)
			}
			// The same members, "v" last: the two-pass reader.
			reordered := append([]byte(`{"record":`), m.Record...)
			reordered = append(reordered, `,"events":`...)
			ev, _ := json.Marshal(m.Events)
			reordered = append(reordered, ev...)
			reordered = append(reordered, fmt.Sprintf(`,"prev":%d,"v":2}`, *m.Prev)...)
			for _, in := range [][]byte{data, reordered} {
				gm, rec, deleted, err := decodeMessage(in)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rec, want) || deleted != wantDeleted {
					t.Fatalf("record %+v (deleted %v), want %+v (%v)", rec, deleted, want, wantDeleted)
				}
				if !reflect.DeepEqual(gm.Events, m.Events) || *gm.Prev != *m.Prev {
					t.Fatalf("events %+v prev %d, want %+v %d", gm.Events, *gm.Prev, m.Events, *m.Prev)
				}
			}
		})
	}
}

func BenchmarkDecodeCampaignRecord(b *testing.B) {
	r := gateway.NewRecord("orders", gateway.DefaultSettings())
	now := time.Now()
	ev, err := r.Campaign(now, gateway.Candidacy{ID: "node-a", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken()), Metadata: json.RawMessage(`{"addr":"10.0.0.7:8080"}`)})
	if err != nil {
		b.Fatal(err)
	}
	data, err := encode(r, ev, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	// The same message with "v" last: decoded in two passes, as messages
	// of other versions are.
	twoPass := append([]byte(`{`), data[len(v2Prefix):len(data)-1]...)
	twoPass = append(twoPass, `,"v":2}`...)
	for _, bc := range []struct {
		name string
		data []byte
	}{{"one pass", data}, {"two passes", twoPass}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode("orders", 1, bc.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
