package nats

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
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
	}{
		{"ack", `{"stream":"ELECTOR_ALIVE","seq":12345}`, 12345, false, false},
		{"ack with domain", `{"stream":"ELECTOR_ALIVE","domain":"hub","seq":7}`, 7, false, false},
		{"duplicate", `{"stream":"ELECTOR_ALIVE","seq":9,"duplicate":true}`, 9, false, false},
		{"wrong last sequence", `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"ELECTOR_ALIVE","seq":0}`, 0, true, false},
		{"another stream", `{"stream":"OTHER","seq":3}`, 0, false, true},
		{"not JSON", `+OK`, 0, false, true},
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
			case err != nil || seq != tt.seq:
				t.Fatalf("seq %d, %v; want %d", seq, err, tt.seq)
			}
		})
	}
}
